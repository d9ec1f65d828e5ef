// PLACEHOLDER until lowering lands (owner: table helper). Replace wholesale.
#include "compiler/lower.h"
namespace replaygate {
std::vector<uint8_t> lower(const ir::CheckedPolicy&) { return {}; }
}  // namespace replaygate
