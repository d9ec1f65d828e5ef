// Lowering: a checked policy in, frozen decision-table bytes out (layout: runtime/table_format.h).
//
// The output depends only on the IR and its provenance (source base name, source digest, rule
// lines): no time, path, address, hash-seed or container-order dependence, so the same policy
// gives byte-identical tables on every run and machine. The decision digest in the header covers
// only the decision sections, so two front-ends that produce the same IR produce the same digest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir.h"

namespace replaygate {

// Precondition: `policy` passed check() without errors (lower() does not re-validate names).
std::vector<uint8_t> lower(const ir::CheckedPolicy& policy);

// The reason a table row reports when it decides: the row's own reason, or when that is empty the
// derived "table <table id> row <k1>/<k2>/..." (keys as written: strings raw, ints decimal, bools
// true/false, "*" for a wildcard). Stored in the table's rule catalog; the reference interpreter
// uses this too so both agree on reasons.
std::string effective_row_reason(const ir::Table& table, size_t row);

}  // namespace replaygate
