// A decision-table row's key as rule ids and the printers spell it: the value, or "*" for a
// wildcard. One spelling for the checker's row ids, lower's row names, print_yaml and print_dsl
// (defined in ir.cc).
#pragma once

#include <optional>
#include <string>

#include "compiler/ir.h"

namespace replaygate::ir {

std::string key_text(const std::optional<Value>& key);

}  // namespace replaygate::ir
