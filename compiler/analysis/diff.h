// Semantic diff of two checked policies: every region of inputs whose verb or deciding rule
// changes, grouped and counted (what `replaygate diff` prints).
//
// Both policies are decided over one joint partition: fields are matched by name; a field of the
// same name and type in both is one column whose atoms are the union of both policies' values and
// thresholds (and both sides' bounds); a field only one side declares, or whose type changed, is
// reported and is a column the other side ignores. An input that one side rejects (a required
// field absent, an int outside its bounds, a value outside its enum) gets that side's default,
// named "invalid input". On a string column that either side reads as absent when empty, "" is
// an atom of its own, which that side's clauses (and validity) treat exactly like absent. A derived
// bool with the same definition on both sides (same comparison over the same columns) is one
// column; otherwise each side gets its own column ("NAME (old)", "NAME (new)") and a field change
// is reported. The tree treats derived columns as free bools, so a changed region is kept only
// when some operand values give every derived column a value its region allows (an exact search,
// see diff.cc; a search that gives up keeps the region and counts it in `unresolved`). The joint
// decision tree (compiler/analysis/regions.h, two clause lists at once)
// yields regions where both sides' deciding rules are constant; regions whose verb names differ
// are verb changes, regions with the same verb but another deciding rule id are provenance
// changes. Nothing is enumerated per input, and nothing is printed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/analysis/regions.h"
#include "compiler/ir.h"

namespace replaygate {

struct FieldChange {
  std::string name;
  std::string change;  // "added", "removed", "retyped string -> enum", "now optional", ...
  // The field's source got looser (`source: operator` -> record or letter, `source: record` ->
  // letter) and the new policy's rules read it: letters (decide, explain, the JSONL binding) may
  // now set what only an operator or the operation record set, e.g. a confirmation or a phase
  // that unlocks a `create` verb (or the record what only an operator set). The diff does not
  // compute which letters now reach which verb through it (its regions compare decisions of the
  // same input values), so it counts the change as more dangerous whenever a rule reads the field.
  bool more_dangerous = false;
};

// Regions that share (old verb, new verb) — or, for provenance changes, (verb, old rule, new rule).
struct DiffGroup {
  std::string old_verb, new_verb;
  ir::Effect old_effect = ir::Effect::kNone, new_effect = ir::Effect::kNone;
  std::vector<std::string> old_rules, new_rules;  // deciding rule ids, first-seen order
  uint64_t regions = 0;
  std::string example;      // a JSON letter from the first region
  std::string description;  // that region, e.g. `topic: "a", attempts: [0, 3)`
  bool more_dangerous() const { return new_effect > old_effect; }
};

struct PolicyDiff {
  std::vector<FieldChange> fields;
  std::vector<DiffGroup> verb_changes;        // in order of first appearance
  std::vector<DiffGroup> provenance_changes;  // same verb, another rule id
  uint64_t regions = 0;                       // joint regions visited
  bool complete = true;                       // false: the budget ran out (results partial)
  // Changed regions kept although the search for operands of their derived bools gave up
  // (reported as changes all the same: diff never drops a region it cannot rule out).
  uint64_t unresolved = 0;
  bool any_more_dangerous() const;  // a verb change or a field change is more dangerous
};

// Diffs two checked policies (preconditions: both passed check()). Never throws except bad_alloc.
// Rule ids: a guard's or row's id, "default" for the default, "invalid input" for an input the
// side rejects.
PolicyDiff diff_policies(const ir::Policy& old_policy, const ir::Policy& new_policy,
                         uint64_t budget = kRegionBudget);

}  // namespace replaygate
