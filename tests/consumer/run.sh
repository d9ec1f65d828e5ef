#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, checks it holds what docs/embedding.md lists
# (the CLI, both runtime libraries, the verify and JSON Lines libraries and every header), builds
# tests/consumer against it with CMake (find_package), the C consumer again as a C-only CMake
# project on the static library (tests/consumer/c_static) and with pkg-config, the JSON Lines
# consumer with CMake and pkg-config, and runs them all on the golden table; then the installed
# CLI, and the Python binding finding the installed libraries from RG_LIBRARY alone.
# Usage: run.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
table=$src/tests/data/tables/replay_gate.rgt
cmake --install "$build" --prefix "$work/prefix" >/dev/null
prefix=$work/prefix
lib=$(dirname "$(find "$prefix" -name libreplaygate_runtime.a)")  # lib/ or lib64/
inc=$prefix/include/replaygate
for f in "$prefix/bin/replaygate" "$inc/runtime/table.h" "$inc/runtime/reload.h" \
  "$inc/runtime/replaygate.h" "$inc/bindings/jsonl/replaygate_jsonl.h" \
  "$inc/runtime/verify/replaygate_verify.h" "$lib/libreplaygate_verify.so" \
  "$lib/pkgconfig/replaygate-verify.pc" \
  "$lib/libreplaygate_runtime.so" "$lib/libreplaygate_jsonl.so" "$lib/pkgconfig/replaygate.pc" \
  "$lib/pkgconfig/replaygate-jsonl.pc" "$lib/cmake/replaygate/replaygateConfig.cmake"; do
  [ -e "$f" ] || { echo "cmake --install did not install ${f#"$prefix"/}" >&2; exit 1; }
done
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
# The JSON Lines library: CMake (replaygate::jsonl) and pkg-config (replaygate-jsonl).
expected_jsonl="replay_once hold invalid=1"
got=$("$work/build/consumer_jsonl" "$table")
[ "$got" = "$expected_jsonl" ] || { echo "consumer_jsonl printed '$got', expected '$expected_jsonl'" >&2; exit 1; }
libs=$(ldd "$work/build/consumer_jsonl")
grep -q "$work/prefix/.*libreplaygate_jsonl.so" <<<"$libs" || {
  echo "consumer_jsonl does not load the installed libreplaygate_jsonl.so:" >&2
  echo "$libs" >&2
  exit 1
}
flags=$(PKG_CONFIG_PATH=$pc_dir pkg-config --cflags --libs replaygate-jsonl)
# shellcheck disable=SC2086
cc -std=c99 -Wall -Wextra -Werror -o "$work/consumer_jsonl_pc" "$src/tests/consumer/consumer_jsonl.c" $flags
got=$(LD_LIBRARY_PATH=$lib "$work/consumer_jsonl_pc" "$table")
[ "$got" = "$expected_jsonl" ] || { echo "pkg-config jsonl consumer printed '$got'" >&2; exit 1; }
# The installed CLI runs from the prefix (no build-tree rpath).
got=$("$prefix/bin/replaygate" dump "$table" | head -n 1)
[ "$got" = "replaygate table, format version 1" ] || { echo "installed replaygate dump printed '$got'" >&2; exit 1; }
# The Python binding, given only RG_LIBRARY, finds libreplaygate_jsonl.so next to it.
if command -v python3 >/dev/null; then
  got=$(env -u RG_JSONL_LIBRARY RG_LIBRARY="$lib/libreplaygate_runtime.so" \
    PYTHONPATH="$src/bindings/python" PYTHONDONTWRITEBYTECODE=1 python3 -c '
import sys, replaygate
gate = replaygate.JsonlGate(sys.argv[1])
print(gate._lib._name, gate.decide_lines(b"{\"topic\":\"x\"}\n")[0])' "$table")
  [ "$got" = "$lib/libreplaygate_jsonl.so ['hold']" ] || {
    echo "the Python binding on the installed tree printed '$got'" >&2
    exit 1
  }
fi
echo "consumer: CMake (static C++ at -std=c++14 raised to 17, static C, shared C, JSON Lines) and pkg-config builds decide: $expected_cpp; $expected_jsonl"
