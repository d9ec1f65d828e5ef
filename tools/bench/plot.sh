#!/usr/bin/env bash
# Draws docs/benchmarks.png: decide latency (p50, replaygate and unordered_map) and compile time
# (YAML front-end) against the number of table rows, from the outputs of run.sh and
# compile_scaling.sh. Usage: tools/bench/plot.sh DECIDE_BENCH_OUTPUT COMPILE_TSV [OUT_PNG]
# Needs gnuplot (Debian: gnuplot-nox).
set -euo pipefail
decide=$1
compile=$2
png=${3:-docs/benchmarks.png}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# "BM_Replaygate/100_median ... p50_ns=52.9 ..." -> "100 52.9"; the shipped policy (Arg 0) is
# left out: its 9 rows are on the plot as the first synthetic point's neighbourhood.
extract() {
  grep -E "^$1/[0-9]+(_median)? " "$decide" | grep -v "^$1/0" | sed -E "s|^$1/([0-9]+)[^ ]* .*p50_ns=([0-9.]+)([kM]?).*|\1 \2 \3|" |
    awk '{m = $3 == "k" ? 1e3 : ($3 == "M" ? 1e6 : 1); print $1, $2 * m}' | sort -n
}  # sorted by rows: an interleaved run (run.sh) lists the sizes in a shuffled order
extract BM_Replaygate > "$work/rg.dat"
extract BM_UnorderedMap > "$work/map.dat"
awk -F'\t' 'NR > 1 && $1 == "yaml" && $3 ~ /^[0-9.]+$/ {print $2, $3}' "$compile" > "$work/compile.dat"
awk -F'\t' 'NR > 1 && $1 == "dsl" && $3 ~ /^[0-9.]+$/ {print $2, $3}' "$compile" > "$work/compile_dsl.dat"
gnuplot <<GP
set terminal pngcairo size 1000,420 font "sans,10" noenhanced
set output "$png"
set multiplot layout 1,2 title "replaygate on a 2-vCPU VM (see docs/benchmarks.md)"
set logscale x
set xlabel "table rows"
set grid
set key top left
set ylabel "ns per decision (p50)"
set title "decide latency"
plot "$work/rg.dat" using 1:2 with linespoints title "replaygate decide", \
     "$work/map.dat" using 1:2 with linespoints title "unordered_map + guards"
set logscale y
set ylabel "seconds"
set title "compile time per front-end"
plot "$work/compile.dat" using 1:2 with linespoints title "replaygate compile (yaml)", \
     "$work/compile_dsl.dat" using 1:2 with linespoints title "replaygate compile (.policy)"
unset multiplot
GP
echo "wrote $png"
