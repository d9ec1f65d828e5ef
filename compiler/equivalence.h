// Table equivalence: does a frozen table decide exactly as a checked policy? What `compile` asks
// of the table it just produced before writing it, and `replaygate verify T --policy P` of any
// deployed table against a reviewed source (issue 22, "What runs is what was reviewed").
//
// The table is lifted back into a policy (compiler/lift.h, which itself proves the lift against
// the table's atoms), then the policy and the lift are decided over one joint partition
// (compiler/analysis/diff.h): every region of valid inputs gets the same verb from the same
// deciding rule id on both sides, or the first region that does not is the counterexample. The
// parts of a table that decide nothing per region are compared directly: policy id, revision,
// default verb and reason, the verbs (name and effect, in order), every catalog entry's id, verb
// and reason (a row's derived reason included), and every field's shape (diff's field changes).
// Descriptions, source lines and provenance are not compared: they change no decision.
#pragma once

#include <cstdint>
#include <string>

#include "compiler/analysis/regions.h"
#include "compiler/ir.h"
#include "runtime/table.h"

namespace replaygate {

struct Equivalence {
  enum class Status : uint8_t {
    kEqual = 0,    // every region compared, all the same
    kDiffer = 1,   // `mismatch` says where; `counterexample` is an input decided differently
    kUnknown = 2,  // the region budget ran out before a difference or the end (`mismatch` says)
  };
  Status status = Status::kUnknown;
  uint64_t regions = 0;  // joint regions compared
  // kDiffer: the first difference, e.g. `region {topic: "a"}: the policy decides replay_once
  // (rule r1), the table never (rule r2)` or `catalog entry 4 reason: ...`; kUnknown: why.
  std::string mismatch;
  // kDiffer, when the difference is in a decision: one JSON letter the two decide differently
  // (or, for a reason or id difference, a letter that reaches that rule). Otherwise empty.
  std::string counterexample;
  bool equal() const { return status == Status::kEqual; }
};

// Compares `table` (loaded and verified by Table::load_bytes/load_file) with `policy`
// (precondition: it passed check()). `budget` is diff_policies()'s region budget. A table that
// cannot be lifted differs (`mismatch` gives lift()'s reason, no counterexample). Pure: no I/O,
// no global state; thread-safe for distinct arguments. Never throws except bad_alloc.
Equivalence check_equivalence(const ir::CheckedPolicy& policy, const Table& table,
                              uint64_t budget = kRegionBudget);

}  // namespace replaygate
