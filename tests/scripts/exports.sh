#!/usr/bin/env bash
# Checks that a shared library exports the C API (rg_*) and nothing else: no C++ runtime
# internals, no standard-library instantiations. Usage: exports.sh libreplaygate_runtime.so
set -euo pipefail
lib=$1
symbols=$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | sort -u)
extra=$(grep -v '^rg_' <<<"$symbols" || true)
if [ -n "$extra" ]; then
  echo "exports.sh: $lib exports symbols outside the C API:" >&2
  echo "$extra" >&2
  exit 1
fi
for required in rg_table_load_file rg_decide rg_decide_columns rg_shared_reload rg_reader_decide \
    rg_input_set_operator_string rg_input_set_operator_int rg_input_set_operator_bool; do
  grep -qx "$required" <<<"$symbols" || { echo "exports.sh: $required is not exported" >&2; exit 1; }
done
echo "exports.sh: $(wc -l <<<"$symbols") symbols, all rg_*"
