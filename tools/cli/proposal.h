// `proposal apply`: a proposal file's rows added to the policy (docs/proposals.md), refused when
// check_proposal() (checks/proposal_check.h, RG501-RG509) finds an error.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "checks/proposal_check.h"
#include "tools/cli/commands.h"

namespace replaygate::cli {

using checks::check_proposal;

// Adds `proposal apply` to `sub` (tools/cli/proposal_apply.cc); *runner runs it once parsed.
// Exit codes: diff's 0, 1 and 3; 4 when the proposal is refused (nothing written); 2 usage or I/O.
CLI::App* add_proposal_apply(CLI::App& sub, Runner* runner);

}  // namespace replaygate::cli
