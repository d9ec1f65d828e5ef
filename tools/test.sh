#!/usr/bin/env bash
# Runs every test: the -Werror build with unit and property tests, the shipped policies' cases,
# then the same suites under AddressSanitizer + UBSan (skip with RG_SKIP_SANITIZE=1).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
for policy in policies/*.yaml policies/*.policy; do
  case "$policy" in *.test.yaml) continue ;; esac
  build/bin/replaygate test "$policy"
done
if [ "${RG_SKIP_SANITIZE:-0}" != 1 ]; then
  echo "== sanitizer build (ASan + UBSan) ==" >&2
  RG_BUILD_DIR=build-asan RG_SANITIZE=1 RG_BUILD_TYPE=Debug tools/setup.sh
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure -j "$(nproc)"
fi
