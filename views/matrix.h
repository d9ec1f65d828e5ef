// A table's first two key fields as a colour-coded grid (HTML or SVG text), for reviewers who
// would rather look than read rows: `replaygate matrix` and, later, the web console.
#pragma once

#include <string>

#include "compiler/ir.h"

namespace replaygate::views {

enum class MatrixFormat { kHtml, kSvg };

struct MatrixOptions {
  std::string table_id;  // empty: the policy's first table
  MatrixFormat format = MatrixFormat::kHtml;
};

// What render_matrix() gives: the document, or (text empty) why there is none.
struct MatrixResult {
  std::string text;
  std::string error;  // "the policy has no table 'x'; did you mean 'y'?", "... has one key; ..."
};

// In: a compiled policy and the options. Out: the self-contained, deterministic document (no
// scripts, no external files), or an error when the policy has no such table or the table has
// one key.
//
// Rows of the grid are the first key's values (in the order rows mention them) plus "any other";
// columns the second key's, likewise. Each cell shows the verb the table gives that pair (the
// most concrete matching row, ties to the earlier row; rows that need a concrete value for a
// third key or later are left out and listed under the grid), coloured per verb, with the row id
// and reason in the cell's title (hover). Wildcard rows fill the cells they decide and are named
// in the title. A cell no row decides falls through: later rules or the default. Guards before
// the table that decide a cell for every input of it are marked (the cell is pre-empted); guards
// that may take some of its inputs are named in the title.
MatrixResult render_matrix(const ir::Policy& policy, const MatrixOptions& options);

}  // namespace replaygate::views
