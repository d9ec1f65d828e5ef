#!/usr/bin/env bash
# Installs missing Debian 12 packages (as root) and builds replaygate into $RG_BUILD_DIR (default build/).
# Environment: RG_BUILD_DIR, RG_BUILD_TYPE (RelWithDebInfo), RG_SANITIZE=1 (ASan+UBSan), RG_WERROR=1,
# RG_BUILD_TARGETS (default all), RG_FUZZ=1 (clang-14, ASan + UBSan, the
# libFuzzer targets beside the tests: tools/fuzz.sh, tools/test.sh),
# RG_GENERATOR (a CMake generator, default Ninja), RG_TSAN=1 (ThreadSanitizer),
# RG_LINE_TABLES=1 (debug info as line tables only, -g1: about a third less compile and link time;
# stack traces keep file:line), RG_BENCHMARKS=0 (leave out tools/bench). With the default targets
# it also installs the JSON Schema validator of the `schema` tests (npm ci in tools/schema).
set -euo pipefail
cd "$(dirname "$0")/.."

# libcmark-gfm renders docs/cli.md into the man pages at build time (tools/docgen.cc); dpkg-dev
# (dpkg-shlibdeps), file (CPack's shared-library scan) and lintian build and check the Debian
# package (docs/packaging.md).
packages=(cmake g++ make ninja-build pkg-config libyaml-cpp-dev tao-pegtl-dev libfmt-dev libgtest-dev
  googletest librapidcheck-dev nlohmann-json3-dev libsimdjson-dev libcli11-dev libbenchmark-dev
  libxxhash-dev libmimalloc-dev python3 python3-jsonschema libsqlite3-dev libpq-dev postgresql-15
  libsodium-dev rabbitmq-server librabbitmq-dev redis-server libhiredis-dev ruby-sidekiq neovim
  libcmark-gfm-dev libcmark-gfm-extensions-dev libcpp-httplib-dev
  dpkg-dev file lintian ccache mold)
# The fuzz tree (tests/fuzz, docs/fuzzing.md) needs clang and its libFuzzer runtime.
if [ "${RG_FUZZ:-0}" = 1 ]; then packages+=(clang-14 libclang-rt-14-dev); fi
# A build with the tests (the default target list) also gets the JSON Schema validator of the
# `schema` tests (below); npm comes with the machine's Node.js, else with Debian's npm.
schema_tools=0
if [ "${RG_BUILD_TARGETS:-all}" = all ] && [ "${RG_FUZZ:-0}" != 1 ]; then
  schema_tools=1
  command -v npm >/dev/null 2>&1 || packages+=(npm)
  # The web console's browser test (ctest -L browser, docs/console.md): headless Chromium.
  packages+=(chromium chromium-driver python3-selenium)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing packages and not root; run: sudo apt-get install -y ${missing[*]}" >&2
    exit 2
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# ajv-cli (npm), the validator the `schema` tests run (tests/scripts/schemas.py): the versions
# tools/schema/package-lock.json pins, into tools/schema/node_modules (git-ignored), once per lock.
if [ "$schema_tools" = 1 ] &&
  ! cmp -s tools/schema/package-lock.json tools/schema/node_modules/.rg-installed-lock; then
  echo "setup: installing the schema validator (npm ci in tools/schema)" >&2
  npm ci --prefix tools/schema --no-audit --no-fund --loglevel=error >&2
  cp tools/schema/package-lock.json tools/schema/node_modules/.rg-installed-lock
fi

build_dir=${RG_BUILD_DIR:-build}
# ccache shares compiled objects between build trees, worktrees and clones (docs/development.md):
# one cache outside the clone (CCACHE_DIR, default ~/.cache/ccache), base_dir at this clone's root
# and -ffile-prefix-map, so the same commit built in another folder hits. Given through the
# launcher, so builds started later by `cmake --build` or ctest hash the same way.
ccache_size=${RG_CCACHE_MAXSIZE:-20G}
launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER="env;CCACHE_BASEDIR=$PWD;CCACHE_MAXSIZE=$ccache_size;ccache"
  -DCMAKE_C_COMPILER_LAUNCHER="env;CCACHE_BASEDIR=$PWD;CCACHE_MAXSIZE=$ccache_size;ccache")
# Paths inside the clone are written relative to its root (__FILE__, debug info), so an object is
# the same in every clone.
prefix_map="-ffile-prefix-map=$PWD/="
compiler=()
# RG_FUZZ=1: clang-14, whose tree is also the sanitizer tree of tools/test.sh (the suites and the
# libFuzzer binaries from one build).
if [ "${RG_FUZZ:-0}" = 1 ]; then
  compiler=(-DREPLAYGATE_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_C_COMPILER=clang-14)
fi
# mold links the GCC trees, lld the clang one: the test binaries are large, and GNU ld took a
# tenth of a cold build.
linker=-fuse-ld=mold
if [ "${RG_FUZZ:-0}" = 1 ]; then linker=-fuse-ld=lld; fi
extra=(-DCMAKE_CXX_FLAGS="$prefix_map" -DCMAKE_C_FLAGS="$prefix_map"
  -DCMAKE_EXE_LINKER_FLAGS="$linker" -DCMAKE_SHARED_LINKER_FLAGS="$linker"
  -DCMAKE_MODULE_LINKER_FLAGS="$linker")
debug_flags="-g"
if [ "${RG_LINE_TABLES:-0}" = 1 ]; then
  extra+=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG")
  debug_flags="-g1"
fi
# A sanitizer build at -O1, as AddressSanitizer's documentation advises: at -O0 the CLI ran about
# 20x slower than the release build and the sanitizer stage took half an hour of CI.
if [ "${RG_SANITIZE:-0}" = 1 ] || [ "${RG_FUZZ:-0}" = 1 ]; then debug_flags="-O1 $debug_flags"; fi
extra+=(-DCMAKE_CXX_FLAGS_DEBUG="$debug_flags" -DCMAKE_C_FLAGS_DEBUG="$debug_flags")
if [ "${RG_BENCHMARKS:-1}" = 0 ] || [ "${RG_FUZZ:-0}" = 1 ] || [ "${RG_TSAN:-0}" = 1 ]; then
  extra+=(-DREPLAYGATE_BUILD_BENCHMARKS=OFF)
fi
cmake -S . -B "$build_dir" -G "${RG_GENERATOR:-Ninja}" "${launcher[@]}" "${compiler[@]}" "${extra[@]}" \
  -DCMAKE_BUILD_TYPE="${RG_BUILD_TYPE:-RelWithDebInfo}" \
  -DREPLAYGATE_WERROR="$([ "${RG_WERROR:-1}" = 1 ] && echo ON || echo OFF)" \
  -DREPLAYGATE_TSAN="$([ "${RG_TSAN:-0}" = 1 ] && echo ON || echo OFF)" \
  -DREPLAYGATE_SANITIZE="$([ "${RG_SANITIZE:-0}" = 1 ] && echo ON || echo OFF)" >/dev/null
# RG_BUILD_TARGETS: what to build (default: everything; tools/demo.sh builds only the CLI).
read -r -a targets <<< "${RG_BUILD_TARGETS:-all}"
cmake --build "$build_dir" -j "$(nproc)" --target "${targets[@]}"
