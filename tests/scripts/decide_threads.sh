#!/usr/bin/env bash
# decide --threads end to end in one small script, so that tools/test.sh runs it with the
# ThreadSanitizer build's binary too: the same stdout, stderr and exit code as --threads 1 for a
# dump with repeated keys and unreadable records, read inline and on a source thread, in small
# blocks, with --max-replays, --audit and --ledger (the audit entries' kinds, verbs and keys, and
# the ledger's keys, in order). Usage: decide_threads.sh REPLAYGATE SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# 200 copies of the shipped letters: every key again 30 lines later, across blocks of 7; and 100
# of the Kafka example, read through its mapping (parsers that share one mapping).
# RG_DECIDE_THREADS_SCALE divides both (tools/test.sh's ThreadSanitizer stage: TSan runs the CLI
# about ten times slower, and every ledger block is a durable commit).
scale=${RG_DECIDE_THREADS_SCALE:-1}
for _ in $(seq $((200 / scale))); do cat "$src/examples/letters.jsonl"; echo '{not json'; done > "$dir/dump.jsonl"
for _ in $(seq $((100 / scale))); do cat "$src/examples/payments-dlt.kcat.jsonl"; done > "$dir/kafka.jsonl"
table=$src/tests/data/tables/replay_gate.rgt
status=0
run() {  # run NAME THREADS SOURCE_THREAD ARGS...: stdout, stderr, exit code, audit and ledger lines
  local name=$1 threads=$2 source=$3
  shift 3
  rm -f "$dir/audit.log" "$dir/ledger.db"
  local code=0
  REPLAYGATE_TEST_THREAD_BLOCK=7 REPLAYGATE_TEST_SOURCE_THREAD=$source \
    "$bin" decide --table "$table" --threads "$threads" "$@" \
    > "$dir/$name.out" 2> "$dir/$name.err" || code=$?
  echo "$code" > "$dir/$name.code"
  if [ -f "$dir/audit.log" ]; then
    grep -o '"kind":"[a-z_]*"\|"verb":"[a-z_]*"\|"idempotency_key":"[^"]*"' "$dir/audit.log" \
      > "$dir/$name.audit" || true
  fi
  if [ -f "$dir/ledger.db" ]; then
    { "$bin" ledger export --ledger "$dir/ledger.db" | grep -o '"key":"[^"]*"'; } \
      > "$dir/$name.ledger" || true
  fi
}
kafka="$dir/kafka.jsonl --input-format kafka --mapping $src/examples/kafka-spring-dlt.mapping.yaml"
for options in "$dir/dump.jsonl" "$dir/dump.jsonl --max-replays 40" \
  "$dir/dump.jsonl --audit $dir/audit.log --operator ana" \
  "$dir/dump.jsonl --ledger $dir/ledger.db --ledger-block 9 --audit $dir/audit.log --operator ana" \
  "$kafka" "$kafka --max-replays 5"; do
  # shellcheck disable=SC2086  # the options are words
  run one 1 0 $options
  if [ "$(cat "$dir/one.code")" = 2 ]; then
    echo "decide $options failed: $(cat "$dir/one.err")" >&2
    status=1
  fi
  for variant in "2 0" "3 1" "8 0"; do
    # shellcheck disable=SC2086
    run many $variant $options
    for part in out err code audit ledger; do
      [ -f "$dir/one.$part" ] || continue
      if ! cmp -s "$dir/one.$part" "$dir/many.$part"; then
        echo "decide --threads ${variant% *} (source thread ${variant#* }) $options: $part differs" >&2
        diff "$dir/one.$part" "$dir/many.$part" | head -5 >&2
        status=1
      fi
    done
    rm -f "$dir"/many.*
  done
  rm -f "$dir"/one.*
done
[ "$status" = 0 ] && echo "decide --threads: the same bytes as --threads 1"
exit "$status"
