// The policy as YAML (the syntax of policies/replay_gate.yaml): used by `replaygate convert` to
// turn a .policy file into YAML, and by the property tests to feed the YAML front-end.
#pragma once

#include <string>

#include "compiler/ir.h"

namespace replaygate {

// The YAML text of `policy`; loading and checking it gives `policy` back (same IR), except that
// conditions of one guard on the same field are grouped under that field (YAML has one key per
// field), in the order of the field's first condition. Strings are double-quoted with escapes
// unless they are plain words; row ids, row reasons and the default reason are written only when
// they differ from what check() derives. Invariants, domains and derived bools use the YAML forms
// of compiler/syntax/ast.h.
std::string print_yaml(const ir::Policy& policy);

}  // namespace replaygate
