#!/usr/bin/env bash
# Runs every test: the -Werror build with unit and property tests, the shipped policies' cases,
# then the same suites under AddressSanitizer + UBSan (skip with RG_SKIP_SANITIZE=1), then the
# hot-reload, C API and decide --threads read-pool tests under ThreadSanitizer (skip with
# RG_SKIP_TSAN=1), then every libFuzzer target for RG_FUZZ_SECONDS (default 15) each
# (tools/fuzz.sh; skip with RG_SKIP_FUZZ=1).
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage's wall time on stderr, so a slow CI run says where its minutes went.
stage_start=$SECONDS
stage_done() {
  echo "== $1: $((SECONDS - stage_start)) s (total $SECONDS s) ==" >&2
  stage_start=$SECONDS
}
# Line tables only (-g1): sanitizer and test-failure traces keep file:line, the builds take about a
# third less time. A developer's own `tools/setup.sh` keeps full debug info.
RG_LINE_TABLES=1 tools/setup.sh
stage_done "build"
ctest --test-dir build --output-on-failure -j "$(nproc)"
for policy in policies/*.yaml policies/*.policy; do
  case "$policy" in *.test.yaml) continue ;; esac
  build/bin/replaygate test "$policy"
done
stage_done "tests"
if [ "${RG_SKIP_SANITIZE:-0}" != 1 ]; then
  echo "== sanitizer build (ASan + UBSan) ==" >&2
  # -Werror was enforced by the build above; GCC's warnings under -fsanitize at -O1 include false
  # positives (-Wstringop-overflow, -Wmaybe-uninitialized) that say nothing about the code.
  RG_BUILD_DIR=build-asan RG_SANITIZE=1 RG_BUILD_TYPE=Debug RG_LINE_TABLES=1 RG_BENCHMARKS=0 \
    RG_WERROR=0 tools/setup.sh
  stage_done "sanitizer build"
  # The server-backed suites (label `server`: a private PostgreSQL per test process) ran once
  # above, and so did the schema exports (label `schema`: every shipped file through `convert`,
  # then ajv) and tests/scripts/decide_threads.sh (the DecideThreads suites run here on dumps a
  # quarter the size, and the script under ThreadSanitizer below).
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 RG_DECIDE_THREADS_SCALE=4 \
    ctest --test-dir build-asan --output-on-failure -j "$(nproc)" -LE 'server|schema' \
    -E '^decide_threads$'
  stage_done "sanitizer tests"
fi
if [ "${RG_SKIP_TSAN:-0}" != 1 ]; then
  # Only the runtime test binary, decide --threads' read pool (linked against the gate library
  # only) and the CLI (whose libraries the runtime tests link already), and only the concurrent
  # suites and tests/scripts/decide_threads.sh: keeps the stage to minutes.
  echo "== ThreadSanitizer build (hot reload, C API, decide --threads) ==" >&2
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREPLAYGATE_WERROR=ON \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DREPLAYGATE_TSAN=ON -DREPLAYGATE_BUILD_BENCHMARKS=OFF >/dev/null
  cmake --build build-tsan -j "$(nproc)" --target rg_runtime_tests rg_read_pool_tests replaygate
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" RG_DECIDE_THREADS_SCALE=10 \
    ctest --test-dir build-tsan --output-on-failure -j "$(nproc)" \
    -R '^((Reload|ReloadCApi|CApi|ReadPool)\.|decide_threads$)'
  stage_done "ThreadSanitizer"
fi
if [ "${RG_SKIP_FUZZ:-0}" != 1 ]; then
  echo "== fuzzing (libFuzzer, tools/fuzz.sh) ==" >&2
  tools/fuzz.sh "${RG_FUZZ_SECONDS:-15}"
  stage_done "fuzzing"
fi
