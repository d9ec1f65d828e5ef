// Analysis of a checked policy: rules that can never match, rules shadowed by earlier rules,
// duplicate and conflicting table rows. Diagnostics RG2xx; nothing is printed.
//
// Works on the finite partition of the input space (compiler/analysis/partition.h): every rule and
// row is a box (a set of atoms per field), and a rule is reachable iff its box minus the union of
// the boxes that take precedence over it is non-empty (usefulness, after Maranget, "Warnings for
// pattern matching", JFP 2007).
#pragma once

#include <cstdint>
#include <vector>

#include "common/diagnostic.h"
#include "compiler/analysis/regions.h"
#include "compiler/ir.h"
#include "compiler/timings.h"

namespace replaygate {

// Returns the RG2xx diagnostics of `policy` (codes in docs/diagnostics.md), in rule order (rows in
// file order). Never throws except std::bad_alloc; pathological policies get one RG209 info
// instead of an unbounded search. Precondition: `policy` passed check() (indices are in range).
// With `timings`, appends the wall times of its stages: "analysis: partition" (atoms per field),
// "analysis: rows" (usefulness and row checks), "analysis: regions" (decision regions, invariants
// and gaps).
std::vector<Diagnostic> analyze(const ir::CheckedPolicy& policy, StageTimings* timings = nullptr);

// The work budgets of the analysis; analyze() uses the defaults.
struct AnalysisBudget {
  // Units of usefulness work (rows examined per class) for the shadowing and conflict checks;
  // when it runs out the analysis reports RG209 once and stops those checks.
  uint64_t rows = 10'000'000;
  // Units of decision-region work (compiler/analysis/regions.h) for invariants and gaps; when it
  // runs out, every invariant not yet proven is RG213 (error, fail closed) and the gaps are RG212
  // (info).
  uint64_t regions = kRegionBudget;
};

// As analyze(), with explicit budgets for both stages, so tests can reach RG209, RG212 and RG213.
std::vector<Diagnostic> analyze_with_budget(const ir::CheckedPolicy& policy, AnalysisBudget budget);

}  // namespace replaygate
