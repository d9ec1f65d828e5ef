#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, builds tests/consumer against it with CMake
# (find_package), the C consumer again as a C-only CMake project on the static library
# (tests/consumer/c_static) and with pkg-config, and runs all four on the golden table.
# Usage: run.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
table=$src/tests/data/tables/replay_gate.rgt
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$src/tests/consumer" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/build" >/dev/null
expected_cpp="replay_once known_failures:payment.capture/timeout"
got=$("$work/build/consumer_cpp" "$table")
[ "$got" = "$expected_cpp" ] || { echo "consumer_cpp printed '$got', expected '$expected_cpp'" >&2; exit 1; }
got=$("$work/build/consumer_c" "$table")
case "$got" in
  "$expected_cpp "[0-9a-f]*) ;;
  *) echo "consumer_c printed '$got'" >&2; exit 1 ;;
esac
# A C-only CMake project linking the static library (the C driver links it: the imported target
# brings the C++ standard library).
cmake -S "$src/tests/consumer/c_static" -B "$work/build_c_static" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/build_c_static" >/dev/null
got=$("$work/build_c_static/consumer_c_static" "$table")
case "$got" in
  "$expected_cpp "[0-9a-f]*) ;;
  *) echo "consumer_c_static printed '$got'" >&2; exit 1 ;;
esac
# The shared consumer must use the installed library, not the build tree's. (ldd's output is
# kept whole: `ldd | grep -q` fails under pipefail when grep exits before ldd has written.)
libs=$(ldd "$work/build/consumer_c")
grep -q "$work/prefix/.*libreplaygate_runtime.so" <<<"$libs" || {
  echo "consumer_c does not load the installed libreplaygate_runtime.so:" >&2
  echo "$libs" >&2
  exit 1
}
# pkg-config: a plain C compile with nothing but the .pc file.
pc_dir=$(dirname "$(find "$work/prefix" -name replaygate.pc)")
flags=$(PKG_CONFIG_PATH=$pc_dir pkg-config --cflags --libs replaygate)
# shellcheck disable=SC2086
cc -std=c99 -Wall -Wextra -Werror -o "$work/consumer_pc" "$src/tests/consumer/consumer.c" $flags
libdir=$(PKG_CONFIG_PATH=$pc_dir pkg-config --variable=libdir replaygate)
got=$(LD_LIBRARY_PATH=$libdir "$work/consumer_pc" "$table")
case "$got" in
  "$expected_cpp "[0-9a-f]*) ;;
  *) echo "pkg-config consumer printed '$got'" >&2; exit 1 ;;
esac
echo "consumer: CMake (static C++ at -std=c++14 raised to 17, static C, shared C) and pkg-config builds decide: $expected_cpp"
