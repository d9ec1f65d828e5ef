// Fixture of tests/scripts/include_rules_refuses.sh: the RabbitMQ port includes redrive/ and the
// AMQP headers (allowed), hiredis (refused: another broker's library) and the compiler (refused).
#include <amqp.h>
#include <hiredis/hiredis.h>

#include <string>

#include "compiler/ir.h"
#include "redrive/redrive.h"
