// Analysis of a checked policy: rules that can never match, rules shadowed by earlier rules,
// duplicate and conflicting table rows. Diagnostics RG2xx; nothing is printed.
//
// Works on the finite partition of the input space (compiler/partition.h): every rule and row is a
// box (a set of atoms per field), and a rule is reachable iff its box minus the union of the boxes
// that take precedence over it is non-empty (usefulness, after Maranget, "Warnings for pattern
// matching", JFP 2007).
#pragma once

#include <vector>

#include "compiler/diagnostic.h"
#include "compiler/ir.h"

namespace replaygate {

std::vector<Diagnostic> analyze(const ir::CheckedPolicy& policy);

}  // namespace replaygate
