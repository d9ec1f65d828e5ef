#!/usr/bin/env bash
# Runs every test, in stages: the -Werror build (GCC, CMake's default generator) with unit and
# property tests and the shipped policies' cases; the clang-14 tree with ASan + UBSan, whose suites
# run next and whose libFuzzer binaries then run RG_FUZZ_SECONDS (default 15) each (skip both with
# RG_SKIP_SANITIZE=1, the fuzzing alone with RG_SKIP_FUZZ=1); the hot-reload, C API and decide
# --threads read-pool tests under ThreadSanitizer (skip with RG_SKIP_TSAN=1).
# Each stage's seconds and ccache's hit counts go to stderr; past RG_CI_WARN_AFTER seconds (default
# 2400, CI's budget) a loud warning names the stage it is in (docs/development.md).
set -euo pipefail
cd "$(dirname "$0")/.."
stage_start=$SECONDS
stage_file=$(mktemp)
echo "build" >"$stage_file"
warn_after=${RG_CI_WARN_AFTER:-2400}
if ! [[ "$warn_after" =~ ^[0-9]+$ ]]; then
  echo "test.sh: RG_CI_WARN_AFTER must be a number of seconds, not '$warn_after'" >&2
  exit 2
fi
# The watchdog: one warning, from a background shell that ends with this script.
(
  sleep "$warn_after"
  echo "!!!!!!!! test.sh: ${warn_after} s have passed (RG_CI_WARN_AFTER), still in stage '$(cat "$stage_file")'; see the '== stage: N s ==' lines above for where the time went !!!!!!!!" >&2
) &
watchdog=$!
trap 'kill "$watchdog" 2>/dev/null || true; rm -f "$stage_file"' EXIT
stage_done() {
  echo "== $1: $((SECONDS - stage_start)) s (total $SECONDS s) ==" >&2
  stage_start=$SECONDS
  echo "${2:-}" >"$stage_file"
}
ccache_report() {
  if command -v ccache >/dev/null 2>&1; then
    echo "== ccache ($1) ==" >&2
    ccache -s 2>&1 | grep -E '^(Cacheable calls|  Hits|  Misses|Uncacheable)' >&2 || true
    ccache -z >/dev/null 2>&1 || true
  fi
}
command -v ccache >/dev/null 2>&1 && ccache -z >/dev/null 2>&1 || true
# The plain tree with CMake's default generator (Unix Makefiles), so that a Ninja-only assumption
# (a folder Ninja creates and Make does not) fails here; a build/ configured with another generator
# by hand keeps it. Line tables only (-g1): traces keep file:line, the builds take about a third
# less time. A developer's own `tools/setup.sh` keeps full debug info.
generator="Unix Makefiles"
if [ -f build/CMakeCache.txt ]; then
  generator=$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' build/CMakeCache.txt)
fi
RG_GENERATOR="$generator" RG_LINE_TABLES=1 tools/setup.sh
ccache_report "plain build"
stage_done "build" "tests"
ctest --test-dir build --output-on-failure -j "$(nproc)"
for policy in policies/*.yaml policies/*.policy; do
  case "$policy" in *.test.yaml) continue ;; esac
  build/bin/replaygate test "$policy"
done
stage_done "tests" "sanitizer build"
if [ "${RG_SKIP_SANITIZE:-0}" != 1 ]; then
  # One clang-14 tree (build-fuzz/) for ASan + UBSan: its suites, then the libFuzzer binaries of
  # the same objects (tools/fuzz.sh finds them built). -Werror was enforced by the GCC build above.
  echo "== sanitizer build (clang-14, ASan + UBSan, the suites and the libFuzzer targets) ==" >&2
  RG_BUILD_DIR=build-fuzz RG_FUZZ=1 RG_BUILD_TYPE=Debug RG_LINE_TABLES=1 RG_WERROR=0 \
    RG_BUILD_TARGETS="all fuzz_all" tools/setup.sh
  ccache_report "sanitizer build"
  stage_done "sanitizer build" "sanitizer tests"
  # The server-backed suites (label `server`: a private PostgreSQL per test process) ran once
  # above, and so did the schema exports (label `schema`: every shipped file through `convert`,
  # then ajv), the console's browser test (label `browser`: the console's HTTP tests run here) and
  # tests/scripts/decide_threads.sh (the DecideThreads suites run here on dumps a
  # quarter the size, and the script under ThreadSanitizer below).
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 RG_DECIDE_THREADS_SCALE=4 \
    ctest --test-dir build-fuzz --output-on-failure -j "$(nproc)" -LE 'server|schema|browser' \
    -E '^decide_threads$'
  stage_done "sanitizer tests" "fuzzing"
  if [ "${RG_SKIP_FUZZ:-0}" != 1 ]; then
    echo "== fuzzing (libFuzzer, tools/fuzz.sh) ==" >&2
    RG_FUZZ_BUILD_DIR=build-fuzz tools/fuzz.sh "${RG_FUZZ_SECONDS:-15}"
    stage_done "fuzzing" "ThreadSanitizer"
  fi
fi
if [ "${RG_SKIP_TSAN:-0}" != 1 ]; then
  # Only the runtime test binary, decide --threads' read pool (linked against the gate library
  # only) and the CLI (whose libraries the runtime tests link already), and only the concurrent
  # suites and tests/scripts/decide_threads.sh: keeps the stage to minutes.
  echo "== ThreadSanitizer build (hot reload, C API, decide --threads) ==" >&2
  RG_BUILD_DIR=build-tsan RG_TSAN=1 RG_LINE_TABLES=1 \
    RG_BUILD_TARGETS="rg_runtime_tests rg_read_pool_tests replaygate" tools/setup.sh
  ccache_report "ThreadSanitizer build"
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" RG_DECIDE_THREADS_SCALE=10 \
    ctest --test-dir build-tsan --output-on-failure -j "$(nproc)" \
    -R '^((Reload|ReloadCApi|CApi|ReadPool)\.|decide_threads$)'
  stage_done "ThreadSanitizer"
fi
