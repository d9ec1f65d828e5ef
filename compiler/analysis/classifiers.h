// The analysis of classified inputs (issue 20 §3): RG215 (error) a fallback class that a rule
// with a create verb can decide, RG216 (warning) classifier rows that earlier rows shadow, RG217
// (warning) classes no rule mentions.
#pragma once

#include <cstdint>
#include <vector>

#include "common/diagnostic.h"
#include "compiler/ir.h"

namespace replaygate {

// The classifier diagnostics of a checked policy (precondition: it passed check()). RG215 walks
// the decision regions (compiler/analysis/regions.h) with `budget` units of work: a region whose
// verb has effect create, whose class set holds the fallback, and whose raw set holds a raw value
// that lands in the fallback is reported with that raw value as the counterexample. When the
// budget runs out the check is reported as not proven (RG215 too: the unknown must fail closed).
// Empty for a policy without classifiers. Not thread-safe only in the sense that it allocates;
// it shares no state.
std::vector<Diagnostic> classifier_diagnostics(const ir::CheckedPolicy& checked, uint64_t budget);

// Whether row `row` of `classifier` can take any raw value of `raw` (the classifier's raw field)
// that the earlier rows do not take: exact for ints (bounds included) and strings.
bool classify_row_reachable(const ir::Classifier& classifier, const ir::Field& raw, size_t row);

}  // namespace replaygate
