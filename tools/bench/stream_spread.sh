#!/usr/bin/env bash
# The process-to-process spread of rg_stream_bench (issue 43): runs it N times (separate
# processes, so separate heaps, page placement and table allocations), and prints per job the
# median ns per decision of each run, its ratio to the hand-written gate of the same run, and the
# spread of the medians, (max - min) / min. Figures in docs/benchmarks.md ("Two layouts").
# Usage: tools/bench/stream_spread.sh [RUNS (5)] [PASSES (7)] [JOB_REGEX (owned|stream/)]
# Run from the repository root after building rg_stream_bench; never from ctest.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-5}
passes=${2:-7}
jobs=${3:-'shipped/(owned|stream)/'}
bench=${RG_STREAM_BENCH:-build/bin/rg_stream_bench}  # RG_STREAM_BENCH: another build to compare
[ -x "$bench" ] || { echo "stream_spread: build $bench first" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for ((r = 1; r <= runs; ++r)); do
  "$bench" --passes "$passes" 2>/dev/null | grep -E "^\| $jobs" > "$out/run$r" || true
  [ -s "$out/run$r" ] || { echo "stream_spread: run $r printed no job matching $jobs" >&2; exit 2; }
done
# Columns of the bench's table: | job | ns | min | / hand_written | / map_reused_key |
python3 - "$runs" "$out" <<'PY'
import sys
runs, out = int(sys.argv[1]), sys.argv[2]
table = {}  # job -> [(ns, ratio to hand_written), ...] in run order
for r in range(1, runs + 1):
    for line in open(f"{out}/run{r}"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        table.setdefault(cells[0], []).append((float(cells[1]), cells[3]))
print("| job | " + " | ".join(f"run {r}" for r in range(1, runs + 1)) + " | spread |")
print("|---|" + "---|" * runs + "---|")
for job, rows in table.items():
    ns = [v for v, _ in rows]
    spread = 100 * (max(ns) - min(ns)) / min(ns)
    print(f"| {job} | " + " | ".join(f"{v:.1f} ({h})" for v, h in rows) + f" | {spread:.0f}% |")
PY
