#!/usr/bin/env bash
# The include check refuses (CTest dependency_rules_includes_refuses): tests/scripts/include_rules.py
# run with the real table (tests/scripts/include_rules.txt) on the fixture tree
# tests/data/include_rules/ must exit 1 and name, as FILE:LINE, exactly its refused includes: the
# runtime including the compiler, redrive/ including its broker's folder, the RabbitMQ port
# including another broker's library and the compiler, the pipeline including runtime/internal/.
# Usage: include_rules_refuses.sh SOURCE_DIR
set -uo pipefail
src=$1
out=$(python3 "$src/tests/scripts/include_rules.py" "$src/tests/data/include_rules" \
  "$src/tests/scripts/include_rules.txt" 2>&1)
code=$?
echo "$out"
if [ "$code" != 1 ]; then
  echo "include_rules_refuses: the check exited $code, not 1" >&2
  exit 1
fi
expected="pipeline/stream.cc:3
redrive/rabbitmq/port.cc:4
redrive/rabbitmq/port.cc:8
redrive/redrive.h:4
runtime/table.h:4"
named=$(sed -n 's/^include_rules: \([^ ]*:[0-9]*\): .*/\1/p' <<<"$out" | sort)
if [ "$named" != "$expected" ]; then
  echo "include_rules_refuses: refused" $named "; expected" $expected >&2
  exit 1
fi
echo "include_rules_refuses: ok"
