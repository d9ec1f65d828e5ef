// Region-based analysis: invariants proven over every decision region, and gaps (known inputs
// that fall to the default). Diagnostics RG210..RG214; nothing is printed.
//
// Works on the decision regions of compiler/analysis/regions.h: every valid input lies in exactly
// one region, and every input of a region gets the same verb from the same rule. An invariant holds
// iff every region that meets its premise box gets a verb that satisfies its requirement; so a
// violation always comes with a concrete counterexample (a JSON letter drawn from the region and
// the premise) and the rule that decides it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/diagnostic.h"
#include "compiler/analysis/regions.h"
#include "compiler/ir.h"

namespace replaygate {

// Whether `verb` satisfies `invariant`'s requirement.
bool invariant_allows(const ir::Policy& policy, const ir::Invariant& invariant, uint32_t verb);

// The premise of `invariant` as a box over `partition` restricted to `domains`; nullopt when no
// valid input satisfies it (the invariant is vacuous).
std::optional<Box> premise_box(const ir::Invariant& invariant, const Partition& partition,
                               const Domains& domains);

// One invariant's verdict.
struct InvariantVerdict {
  bool holds = true;
  bool vacuous = false;          // no valid input satisfies the premise
  std::string counterexample;    // !holds: a JSON letter that breaks it
  Box counterexample_box;        // !holds: the region (intersected with the premise)
  uint32_t verb = 0;             // !holds: the verb the counterexample gets
  std::optional<uint32_t> rule;  // !holds: catalog index of the deciding rule; nullopt: default
  uint64_t violating_regions = 0;
};

struct InvariantReport {
  std::vector<InvariantVerdict> verdicts;  // per Policy::invariants
  bool complete = true;                    // false: the budget ran out before every region
  std::vector<Region> gaps;                // default regions inside the declared known values
  uint64_t region_count = 0;
};

// Proves every invariant of `policy` and collects gaps. Gaps are computed only when some string
// field declares a `domain`: a gap is a default region restricted to the known values (on each
// string field with a domain, its domain values and absent; other fields are not restricted).
// Precondition: `policy` passed check(). Never throws except bad_alloc.
InvariantReport prove_invariants(const ir::Policy& policy, uint64_t budget = kRegionBudget);

// The diagnostics for `policy`: RG210 (an invariant is violated, with counterexample and rule),
// RG211 (info: a gap), RG212 (info: the region budget ran out), RG213 (error: an invariant could
// not be proven within the budget), RG214 (warning: an invariant's premise is never true).
std::vector<Diagnostic> region_diagnostics(const ir::CheckedPolicy& policy,
                                           uint64_t budget = kRegionBudget);

// "rule 'ID' (line N)" or "the default" for a deciding rule by catalog index.
std::string describe_rule(const ir::CheckedPolicy& policy, std::optional<uint32_t> rule);

// The id of the rule with catalog index `rule` (a guard's id or a row's id).
std::string rule_id(const ir::Policy& policy, uint32_t rule);

// A readable description of a box: "topic: "a" | "b", attempts: [0, 3)"; "any input" when every
// field is `all`.
std::string describe_box(const ir::Policy& policy, const Partition& partition, const Box& box);

}  // namespace replaygate
