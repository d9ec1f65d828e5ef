#!/usr/bin/env bash
# Runs the embedding benchmarks (docs/benchmarks.md, sections "Decide latency", "Python",
# "End to end") from the repository root after a build: tools/bench/run.sh [OUT_DIR]
# Writes raw outputs to OUT_DIR (default a temporary directory, removed at the end unless given).
# Environment: RG_BENCH_REPS (Google Benchmark repetitions, default 5), RG_BENCH_RECORDS (end-to-end
# dump size, default 1000000), RG_STREAM_ROWS (rg_stream_bench --rows, default 1000000; 0 skips).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-}
if [ -z "$out" ]; then
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out"
reps=${RG_BENCH_REPS:-5}
records=${RG_BENCH_RECORDS:-1000000}
echo "== machine ==" | tee "$out/machine.txt"
{ nproc; grep -m1 'model name' /proc/cpuinfo; uptime; } | tee -a "$out/machine.txt"

echo "== decide latency (C++) =="
# Random interleaving runs the repetitions of every benchmark in a shuffled order, so a baseline
# and decide() see the same drifts of a shared host (its clock and neighbours change over seconds).
build/bin/rg_decide_bench --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
  --benchmark_enable_random_interleaving=true --benchmark_min_time=0.2 | tee "$out/decide_bench.txt"

echo "== decide on unpredictable traffic (streaming, sorted, cached; one run, interleaved passes) =="
build/bin/rg_stream_bench --passes 7 --rows "${RG_STREAM_ROWS:-1000000}" | tee "$out/stream_bench.txt"

echo "== Python: reference gate vs ctypes binding =="
RG_LIBRARY=build/runtime/libreplaygate_runtime.so \
  RG_JSONL_LIBRARY=build/bindings/jsonl/libreplaygate_jsonl.so \
  python3 tools/bench/python_gate_bench.py tests/data/tables/replay_gate.rgt 200000 | tee "$out/python.txt"

echo "== replaygate decide end to end, $records letters =="
python3 - "$records" > "$out/dump.jsonl" <<'PY'
import json, random, sys
rng = random.Random(20261129)
pairs = [("payment.capture", "timeout"), ("payment.capture", "insufficient_funds"),
         ("inventory.reserve", "lock_timeout"), ("webhook.partner", "http_503"),
         ("mail.receipt", "smtp_421"), ("mail.receipt", "unknown_recipient")]
w = sys.stdout.write
for i in range(int(sys.argv[1])):
    t, e = pairs[rng.randrange(len(pairs))]
    w(json.dumps({"message_id": f"m-{i}", "topic": t, "error_class": e,
                  "attempts": rng.randrange(3), "idempotency_key": f"k{i}",
                  "already_committed": rng.randrange(10) == 0}, separators=(",", ":")) + "\n")
PY
ls -l "$out/dump.jsonl"
build/bin/replaygate compile policies/replay_gate.yaml -o "$out/gate.rgt"
/usr/bin/time -v build/bin/replaygate decide --table "$out/gate.rgt" "$out/dump.jsonl" \
  > /dev/null 2> "$out/e2e.txt" || true
grep -E "Elapsed|Maximum resident|User time|System time" "$out/e2e.txt"
grep "^summary" "$out/e2e.txt" || true
echo "-- the first tenth of the dump (memory must be the same: the replayed-key filter is fixed) --"
head -n "$((records / 10))" "$out/dump.jsonl" > "$out/dump_tenth.jsonl"
/usr/bin/time -v build/bin/replaygate decide --table "$out/gate.rgt" "$out/dump_tenth.jsonl" \
  > /dev/null 2> "$out/e2e_tenth.txt" || true
grep -E "Elapsed|Maximum resident|User time|System time" "$out/e2e_tenth.txt"
echo "-- decide's stages (read, + strict letter reader, + decide()) --"
RG_BENCH_DUMP="$out/dump.jsonl" RG_BENCH_TABLE="$out/gate.rgt" build/bin/rg_decide_stages_bench \
  | tee "$out/decide_stages.txt"
echo "== parse floor (the dump read as decide reads it + simdjson On Demand; and in memory) =="
RG_BENCH_DUMP="$out/dump.jsonl" build/bin/rg_parse_floor_bench | tee "$out/parse_floor.txt"

echo "== Node.js baselines (Cedar WebAssembly, json-rules-engine) =="
tools/bench/node_baselines.sh | tee "$out/node.txt" || echo "node baselines failed (see above)"
