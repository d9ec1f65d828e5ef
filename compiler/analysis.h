// Analysis of a checked policy: rules that can never match, rules shadowed by earlier rules,
// duplicate and conflicting table rows. Diagnostics RG2xx; nothing is printed.
//
// Works on the finite partition of the input space (compiler/partition.h): every rule and row is a
// box (a set of atoms per field), and a rule is reachable iff its box minus the union of the boxes
// that take precedence over it is non-empty (usefulness, after Maranget, "Warnings for pattern
// matching", JFP 2007).
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/diagnostic.h"
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

// The same with an explicit budget of usefulness work units (analyze() uses 10,000,000), so tests
// can reach the RG209 path.
std::vector<Diagnostic> analyze_with_budget(const ir::CheckedPolicy& policy, uint64_t work_budget);

}  // namespace replaygate
