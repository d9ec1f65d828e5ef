// Fixture of tests/scripts/include_rules_refuses.sh: the runtime includes the compiler (refused).
#pragma once

#include "compiler/ir.h"
