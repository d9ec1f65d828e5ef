// Lifting: a verified runtime table back into a checked ir::Policy that decides identically.
//
// `replaygate diff` compares the table deployed in production with a new table or policy, and
// operators do not always have the deployed table's source. lift() rebuilds the policy from what
// the table stores (runtime/trace.h's structure(), the table's public accessors):
//  * policy id, revision, description; default verb and reason;
//  * fields: name, type, optional, empty_means_absent, int bounds, enum values, derived bools;
//  * verbs with their effects and descriptions;
//  * rules in order: guards with their conditions rebuilt from the stored atom sets (strings,
//    enums and bools as eq/ne/in/not_in over the dictionary, ints as eq/ne/in/not_in over
//    one-value intervals or lt/le/gt/ge at the stored threshold, absent/present), tables with
//    their key fields and rows (wildcards included, order kept);
//  * rule and row ids, reasons (rows' derived reasons kept as stored), and in the source map the
//    rules' source lines, base name and source digest (provenance).
// Not in a table, so not in the lifted policy: field descriptions, string `domain`s, invariants,
// `sensitive` names, constants no condition names. The analysis' gap findings therefore differ
// from the source policy's; decisions, the rule catalog and diff results do not.
//
// Every lifted condition and row key is checked against the table before lift() returns: the
// lifted policy's partition (compiler/analysis/partition.h) must give each field exactly the
// table's dictionary and cut points, each condition exactly the stored atom set and each row key
// exactly the stored atom. So a lifted policy decides every input like the table, or lift() fails.
#pragma once

#include <optional>
#include <string>

#include "compiler/ir.h"
#include "runtime/table.h"

namespace replaygate {

struct LiftResult {
  std::optional<ir::CheckedPolicy> policy;  // set on success
  std::string error;                        // set on failure: what cannot be lifted, and where
};

// Lifts `table` (loaded and verified by Table::load_bytes/load_file). Fails, with `error` naming
// the rule and condition, when the table holds something no checked policy lowers to: a
// condition whose atom set no single condition produces (e.g. accepting the "other" string
// together with absent), a row key on the "other" or absent atom, an int threshold the operand
// text does not give, a derived field whose operator is not a comparison. A table made by lower()
// from a checked policy always lifts. Never throws except bad_alloc.
LiftResult lift(const Table& table);

}  // namespace replaygate
