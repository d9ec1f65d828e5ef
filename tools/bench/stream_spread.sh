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
bench=build/bin/rg_stream_bench
[ -x "$bench" ] || { echo "stream_spread: build $bench first" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for ((r = 1; r <= runs; ++r)); do
  "$bench" --passes "$passes" 2>/dev/null | grep -E "^\| $jobs" > "$out/run$r" || true
  [ -s "$out/run$r" ] || { echo "stream_spread: run $r printed no job matching $jobs" >&2; exit 2; }
done
# Columns of the bench's table: | job | ns | min | / hand_written | / map_reused_key |
awk -F'|' -v runs="$runs" '
  { gsub(/ /, "", $2); job = $2; ns[job, FILENAME] = $3 + 0; hand[job, FILENAME] = $5;
    if (!(job in seen)) { seen[job] = 1; order[n++] = job } }
  END {
    printf "| job |"; for (r = 1; r <= runs; ++r) printf " run %d |", r; printf " spread |\n";
    printf "|---|"; for (r = 1; r <= runs; ++r) printf "---|"; printf "---|\n";
    for (i = 0; i < n; ++i) {
      job = order[i]; lo = 1e18; hi = 0; printf "| %s |", job;
      for (r = 1; r <= runs; ++r) {
        f = FILENAME_OF[r]; v = ns[job, f]; printf " %.1f (%s) |", v, hand[job, f];
        if (v < lo) lo = v; if (v > hi) hi = v;
      }
      printf " %.0f%% |\n", lo > 0 ? 100 * (hi - lo) / lo : 0;
    }
  }
  FNR == 1 { FILENAME_OF[++files] = FILENAME }
' $(for ((r = 1; r <= runs; ++r)); do echo "$out/run$r"; done)
