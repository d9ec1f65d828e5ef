// The canonical text of a policy in the policy language (.policy): used by `replaygate fmt`
// (source -> canonical source, comments kept) and `replaygate convert` (IR -> .policy).
//
// Canonical form: the header, the description, then one section per kind separated by a blank
// line: inputs, verbs, default, constants, rules (each table set off by blank lines), invariants;
// source order inside each section; one item per line; single spaces; rows indented by two spaces.
// Literals keep how they were written (quoted or bare); a bare word the grammar would read
// differently is quoted.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/diagnostic.h"
#include "compiler/ir.h"
#include "compiler/syntax/ast.h"
#include "compiler/syntax/dsl_policy.h"

namespace replaygate {

// The canonical text of `policy`. `comments` and `table_close_lines` come from dsl::parse() of the
// same text: an own-line comment is printed before the item that follows it in the source (or
// before a table's `}`, or at the end), a trailing comment after the item whose line it ends.
std::string print_dsl(const ast::Policy& policy, const std::vector<dsl::Comment>& comments = {},
                      const std::vector<uint32_t>& table_close_lines = {});

// The checked policy as DSL text: parsing and checking it gives `policy` back (same IR). Row ids
// and the default reason are written only when they differ from what check() derives.
std::string print_dsl(const ir::Policy& policy);

// The AST a front-end would produce for `policy` (no spans): what print_dsl(ir) prints.
ast::Policy to_ast(const ir::Policy& policy);

// `replaygate fmt` on one .policy text: `text` is set to the canonical form, or `diagnostics`
// holds the syntax error (dsl::parse's codes). Formatting needs only valid syntax, not a valid
// policy. Idempotent: format(format(x)) == format(x).
struct FormatResult {
  std::optional<std::string> text;
  std::vector<Diagnostic> diagnostics;
  std::string unstable;  // format_dsl_checked() only: why a canonical form was refused
};
FormatResult format_dsl(std::string_view text, std::string_view path);

// format_dsl() for callers that hand the canonical form on in place of the file (`fmt --write`,
// the language server's formatting): the canonical form is also parsed back, and refused (`text`
// unset, `diagnostics` empty, `unstable` says why, e.g. "RG015: ...") when it would not read back
// or would change under a second format, e.g. a list printed on one line longer than the
// front-end's line limit. A refused form must never replace the file.
FormatResult format_dsl_checked(std::string_view text, std::string_view path);

}  // namespace replaygate
