#!/usr/bin/env bash
# The fuzz campaign that accumulates (issue 41): runs fuzz targets for a while, nice'd, merges the
# coverage they found into the committed corpus (tests/data/fuzz/NAME/corpus, kept under 2,000
# units and 4 MB: ctest replays it in the plain and sanitizer builds), keeps every crash or leak
# as a regression file (tests/data/fuzz/NAME/regressions, replayed by ctest), and appends one row
# per target to the campaign table of docs/fuzzing.md, with the target's cumulative executions.
# A run changes only the corpora, the regression files and the table; run it again to add more.
#
#   tools/fuzz-campaign.sh [--minutes M] [TARGET...]
#
# M: minutes per target (default 10). Without TARGETs: the RG_FUZZ_JOBS (default 2) targets with
# the fewest cumulative executions in the table (a target with no row first). Targets run
# RG_FUZZ_JOBS at a time. Exit 0 when nothing was found, 1 on a finding (its regression file is
# written; fix the code before committing it), 2 on a usage or build error.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=10
targets=()
while (($# > 0)); do
  case "$1" in
    --minutes)
      minutes=${2:-}
      shift 2 || true
      ;;
    -h | --help)
      sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    -*)
      echo "usage: tools/fuzz-campaign.sh [--minutes M] [TARGET...]" >&2
      exit 2
      ;;
    *)
      targets+=("$1")
      shift
      ;;
  esac
done
if ! [[ "$minutes" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz-campaign: --minutes must be a whole number of minutes, at least 1" >&2
  exit 2
fi
build=${RG_FUZZ_BUILD_DIR:-build-fuzz}
jobs=${RG_FUZZ_JOBS:-2}
table=docs/fuzzing.md
max_units=2000
max_bytes=$((4 * 1024 * 1024))

# Cumulative executions of a target: the last column but one of its last row in the table.
cumulative() {
  awk -F'|' -v t="$1" '$0 ~ /^\| 20[0-9][0-9]-/ { gsub(/ /, "", $4); if ($4 == t) { c = $12 } }
    END { gsub(/[ ,]/, "", c); print (c == "" ? 0 : c) }' "$table"
}

if ((${#targets[@]} == 0)); then
  all=()
  for dir in tests/data/fuzz/*/; do all+=("$(basename "$dir")"); done
  mapfile -t targets < <(for t in "${all[@]}"; do echo "$(cumulative "$t") $t"; done |
    sort -n -k1,1 -k2,2 | head -n "$jobs" | awk '{print $2}')
fi
for name in "${targets[@]}"; do
  if [ ! -d "tests/data/fuzz/$name/corpus" ]; then
    echo "fuzz-campaign: no target '$name' (tests/data/fuzz/$name/corpus)" >&2
    exit 2
  fi
done

echo "== fuzz-campaign: building $build (only ${targets[*]}) ==" >&2
if ! RG_BUILD_DIR="$build" RG_FUZZ=1 RG_BUILD_TYPE=Debug RG_WERROR=0 RG_LINE_TABLES=1 \
  RG_BUILD_TARGETS="$(printf 'fuzz_%s ' "${targets[@]}")" nice -n 10 tools/setup.sh; then
  echo "fuzz-campaign: the build failed" >&2
  exit 2
fi

run_target() {
  local name=$1 work="$build/campaign/$1"
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/artifacts" "$work/merged"
  local seeds=("tests/data/fuzz/$name/corpus")
  [ -d "tests/data/fuzz/$name/regressions" ] && seeds+=("tests/data/fuzz/$name/regressions")
  local status=0
  nice -n 10 "$build/bin/fuzz_$name" -max_total_time=$((minutes * 60)) -timeout=10 \
    -rss_limit_mb=2048 -close_fd_mask=3 -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
    "$work/corpus" "${seeds[@]}" > "$work/log" 2>&1 || status=$?
  echo "$status" > "$work/status"
  merge_into_copy "$name"
}

# Into a copy of the committed corpus (its named seeds kept as they are), the inputs of this run
# that add coverage to it (libFuzzer -merge=1 keeps what is in its first directory).
merge_into_copy() {
  local name=$1 work="$build/campaign/$1"
  rm -rf "$work/merged"
  cp -r "tests/data/fuzz/$name/corpus" "$work/merged"
  nice -n 10 "$build/bin/fuzz_$name" -merge=1 -close_fd_mask=3 "$work/merged" "$work/corpus" \
    > "$work/merge.log" 2>&1 || true
}

echo "== fuzz-campaign: ${targets[*]}, $minutes min each, $jobs at a time ==" >&2
running=0
for name in "${targets[@]}"; do
  if ((running >= jobs)); then
    wait -n || true
    running=$((running - 1))
  fi
  run_target "$name" &
  running=$((running + 1))
done
wait

commit=$(git rev-parse --short HEAD)
today=$(date -u +%Y-%m-%d)
findings=0
if ! grep -q '^| date | commit | target |' "$table"; then
  {
    echo
    echo "### The campaign table (tools/fuzz-campaign.sh)"
    echo
    echo "| date | commit | target | seconds | executions | exec/s | corpus units | features | crashes | leaks | cumulative executions | command |"
    echo "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
  } >> "$table"
fi
for name in "${targets[@]}"; do
  work="$build/campaign/$name"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/log" | tail -1)
  features=$(grep -o 'ft: [0-9]*' "$work/log" | tail -1 | awk '{print $2}')
  crashes=$(find "$work/artifacts" -type f \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
  leaks=$(find "$work/artifacts" -type f -name 'leak-*' | wc -l)
  for a in "$work"/artifacts/*; do
    [ -f "$a" ] || continue
    mkdir -p "tests/data/fuzz/$name/regressions"
    cp "$a" "tests/data/fuzz/$name/regressions/"
    findings=$((findings + 1))
    echo "fuzz-campaign: $name found $(basename "$a") (log: $work/log); kept in" \
      "tests/data/fuzz/$name/regressions: fix the code, then commit it" >&2
  done
  units=$(find "$work/merged" -type f | wc -l)
  bytes=$(du -sb "$work/merged" | awk '{print $1}')
  if ((units <= max_units && bytes <= max_bytes)); then
    cp -n "$work/merged"/* "tests/data/fuzz/$name/corpus/"
  else
    echo "fuzz-campaign: $name: the merged corpus ($units units, $bytes bytes) is over the" \
      "bound; the committed corpus is kept as it was" >&2
    units=$(find "tests/data/fuzz/$name/corpus" -type f | wc -l)
  fi
  total=$(($(cumulative "$name") + ${execs:-0}))
  printf '| %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | `tools/fuzz-campaign.sh --minutes %d %s` |\n' \
    "$today" "$commit" "$name" $((minutes * 60)) "${execs:-0}" "${rate:-0}" "$units" \
    "${features:-?}" "$crashes" "$leaks" "$total" "$minutes" "$name" >> "$table"
  echo "fuzz-campaign: $name: ${execs:-0} executions (${rate:-0}/s), corpus $units units," \
    "cumulative $total" >&2
done
((findings == 0)) || exit 1
