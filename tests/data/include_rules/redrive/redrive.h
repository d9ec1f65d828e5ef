// Fixture of tests/scripts/include_rules_refuses.sh: redrive/ includes its broker's port (refused).
#pragma once

#include "redrive/rabbitmq/port.h"
