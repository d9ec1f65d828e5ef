#!/usr/bin/env bash
# Builds the libFuzzer tree (build-fuzz/: clang-14, -fsanitize=fuzzer,address,undefined; only the
# fuzz targets and the libraries they link) and runs every target of tests/fuzz for SECONDS
# (default 30) with -seed=1, two at a time, from its seeds (tests/data/fuzz/NAME/corpus) and
# regression files (tests/data/fuzz/NAME/regressions). Prints one line per target (executions,
# executions per second, result). Exit 0 when no target found anything, 1 on any finding (a crash,
# a sanitizer report, a leak, a timeout over 10 s, over 2 GB of memory), 2 on a usage or build error.
# A finding's input is kept as build-fuzz/fuzz-runs/NAME/artifacts/crash-* (or leak-, timeout-,
# oom-) and the run's log beside it; docs/fuzzing.md says how it becomes a regression file.
# Environment: RG_FUZZ_BUILD_DIR (default build-fuzz), RG_FUZZ_TARGETS (names, default all; only
# those are built),
# RG_FUZZ_JOBS (targets at a time, default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]] || (($# > 1)); then
  echo "usage: tools/fuzz.sh [SECONDS]   (each target runs SECONDS, default 30)" >&2
  exit 2
fi
build=${RG_FUZZ_BUILD_DIR:-build-fuzz}
jobs=${RG_FUZZ_JOBS:-2}
build_targets=fuzz_all
if [ -n "${RG_FUZZ_TARGETS:-}" ]; then
  read -r -a targets <<< "$RG_FUZZ_TARGETS"
  build_targets=$(printf 'fuzz_%s ' "${targets[@]}")
else
  targets=()
  for dir in tests/data/fuzz/*/; do targets+=("$(basename "$dir")"); done
fi

echo "== fuzz: building $build (clang-14, libFuzzer + ASan + UBSan) ==" >&2
if ! RG_BUILD_DIR="$build" RG_FUZZ=1 RG_BUILD_TYPE=Debug RG_WERROR=0 RG_LINE_TABLES=1 \
  RG_BUILD_TARGETS="$build_targets" tools/setup.sh; then
  echo "fuzz: the build failed" >&2
  exit 2
fi
for name in "${targets[@]}"; do
  if [ ! -x "$build/bin/fuzz_$name" ] || [ ! -d "tests/data/fuzz/$name/corpus" ]; then
    echo "fuzz: no target '$name' (tests/fuzz/CMakeLists.txt, tests/data/fuzz/$name/corpus)" >&2
    exit 2
  fi
done

# One target: its own scratch corpus (new inputs go there, never into the tree), artifacts and log.
run_target() {
  local name=$1 work="$build/fuzz-runs/$1"
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/artifacts"
  local seeds=("tests/data/fuzz/$name/corpus")
  [ -d "tests/data/fuzz/$name/regressions" ] && seeds+=("tests/data/fuzz/$name/regressions")
  local status=0
  "$build/bin/fuzz_$name" -seed=1 -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -close_fd_mask=3 -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
    "$work/corpus" "${seeds[@]}" >"$work/log" 2>&1 || status=$?
  echo "$status" >"$work/status"
}

echo "== fuzz: ${#targets[@]} targets, ${seconds} s each, $jobs at a time, -seed=1 ==" >&2
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

findings=0
printf '%-22s %8s %12s %8s  %s\n' target seconds execs exec/s result
for name in "${targets[@]}"; do
  work="$build/fuzz-runs/$name"
  status=$(cat "$work/status" 2>/dev/null || echo 2)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/log" | tail -1)
  artifacts=$(find "$work/artifacts" -type f | sort)
  result=ok
  if [ "$status" != 0 ] || [ -n "$artifacts" ]; then
    result="FINDING (exit $status)"
    findings=$((findings + 1))
  fi
  printf '%-22s %8s %12s %8s  %s\n' "$name" "$seconds" "${execs:-?}" "${rate:-?}" "$result"
done
if ((findings > 0)); then
  for name in "${targets[@]}"; do
    work="$build/fuzz-runs/$name"
    status=$(cat "$work/status" 2>/dev/null || echo 2)
    artifacts=$(find "$work/artifacts" -type f | sort)
    [ "$status" = 0 ] && [ -z "$artifacts" ] && continue
    echo "== fuzz: $name found something (log: $work/log) ==" >&2
    grep -E '^(==[0-9]+==|SUMMARY|.*runtime error|artifact_prefix|Test unit written)' "$work/log" \
      | head -20 >&2 || true
    for a in $artifacts; do
      echo "  input kept: $a" >&2
      echo "  replay it:  $build/bin/fuzz_$name $a" >&2
      echo "  once fixed: cp $a tests/data/fuzz/$name/regressions/ (ctest -R fuzz_replay_$name)" >&2
    done
  done
  echo "fuzz: $findings of ${#targets[@]} targets found something" >&2
  exit 1
fi
echo "fuzz: ${#targets[@]} passed, 0 failed" >&2
