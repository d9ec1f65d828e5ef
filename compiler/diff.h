// Semantic diff of two checked policies: every region of inputs whose verb or deciding rule
// changes, grouped and counted (what `replaygate diff` prints).
//
// Both policies are decided over one joint partition: fields are matched by name; a field of the
// same name and type in both is one column whose atoms are the union of both policies' values and
// thresholds (and both sides' bounds); a field only one side declares, or whose type changed, is
// reported and is a column the other side ignores. An input that one side rejects (a required
// field absent, an int outside its bounds, a value outside its enum) gets that side's default,
// named "invalid input". The joint decision tree (compiler/regions.h, two clause lists at once)
// yields regions where both sides' deciding rules are constant; regions whose verb names differ
// are verb changes, regions with the same verb but another deciding rule id are provenance
// changes. Nothing is enumerated per input, and nothing is printed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir.h"
#include "compiler/regions.h"

namespace replaygate {

struct FieldChange {
  std::string name;
  std::string change;  // "added", "removed", "retyped string -> enum", "now optional", ...
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
  bool any_more_dangerous() const;
};

// Diffs two checked policies (preconditions: both passed check()). Never throws except bad_alloc.
// Rule ids: a guard's or row's id, "default" for the default, "invalid input" for an input the
// side rejects.
PolicyDiff diff_policies(const ir::Policy& old_policy, const ir::Policy& new_policy,
                         uint64_t budget = kRegionBudget);

}  // namespace replaygate
