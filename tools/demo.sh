#!/usr/bin/env bash
# The main job on a shipped example: set up, compile the reference policy, decide a real DLQ dump.
set -euo pipefail
cd "$(dirname "$0")/.."
# The CLI only (tools/test.sh builds the rest). Build output goes to stderr: stdout is the
# decisions, one JSON object per line, and nothing else.
RG_BUILD_TARGETS=replaygate tools/setup.sh >&2
rg=build/bin/replaygate
"$rg" compile policies/replay_gate.yaml -o build/replay_gate.rgt >&2
echo "== decisions for examples/payments-dlt.kcat.jsonl (Kafka DLT, kcat -J) ==" >&2
status=0
"$rg" decide --table build/replay_gate.rgt --input-format kafka \
  --mapping examples/kafka-spring-dlt.mapping.yaml examples/payments-dlt.kcat.jsonl || status=$?
# Exit 1 means some records were invalid: the shipped dump contains a few on purpose.
[ "$status" -le 1 ] || exit "$status"
