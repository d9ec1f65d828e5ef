#!/usr/bin/env bash
# A plan of N letters through `gate rabbitmq --plan` against the gate without a plan, in the same
# run on one private RabbitMQ node (issue 38: the plan must run at no less than 0.9 of the gate).
# Starts the node (tests/gate/rabbit_server.h: a temporary directory, 127.0.0.1, stopped by pid),
# then per repetition fills `dlq` twice with N distinct shuffled letters (60% replayed, 25% parked,
# 15% held): `gate --apply --all --max-rate 0` on one fill; `plan build --amqp` + `plan approve` +
# `gate --apply --plan --max-rate 0` on the other; only the two gate runs are timed; the arms
# alternate which goes first. Prints each pair, the medians and plain / plan (1.0: as fast).
# Figures in docs/benchmarks.md ("A plan's run on RabbitMQ").
# Usage: tools/bench/plan_gate.sh [LETTERS (10000)] [REPS (5)]
# Run from the repository root; never from ctest.
set -euo pipefail
cd "$(dirname "$0")/../.."
bench=${RG_PLAN_BENCH:-build/bin/rg_plan_bench}
if [ ! -x "$bench" ]; then
  cmake --build build --target rg_plan_bench >&2
fi
exec "$bench" --letters "${1:-10000}" --reps "${2:-5}"
