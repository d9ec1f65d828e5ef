// PLACEHOLDER until the analysis lands (owner: analysis helper). Replace wholesale.
#include "compiler/analysis.h"
namespace replaygate {
std::vector<Diagnostic> analyze(const ir::CheckedPolicy&) { return {}; }
}  // namespace replaygate
