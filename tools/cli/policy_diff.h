// The semantic diff of two checked policies as `replaygate diff` prints it, for commands that
// change a policy and must show what the change does (`proposal apply`, docs/proposals.md).
#pragma once

#include <string>

#include "compiler/ir.h"

namespace replaygate::cli {

// Prints the diff of `old_policy` and `new_policy` to stdout in `format` (text, json, markdown),
// naming the sides `old_name` and `new_name`. Returns diff's exit code: 0 no verb changes, 1 verb
// changes and nothing more dangerous, 3 some input gets a more dangerous effect, 2 when the diff
// could not be completed or printed (the reason on stderr).
int print_policy_diff(const ir::Policy& old_policy, const ir::Policy& new_policy,
                      const std::string& old_name, const std::string& new_name,
                      const std::string& format);

}  // namespace replaygate::cli
