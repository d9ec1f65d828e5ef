#!/usr/bin/env bash
# Determinism across processes and working directories: the same policy compiles to the same bytes
# whether compiled twice, from another directory, or from a copy of the file at another path.
set -euo pipefail
rg=$1; src=$2
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
"$rg" compile "$src/policies/replay_gate.yaml" -o "$work/a.rgt"
"$rg" compile "$src/policies/replay_gate.yaml" -o "$work/b.rgt"
mkdir -p "$work/elsewhere/deeper"
cp "$src/policies/replay_gate.yaml" "$work/elsewhere/deeper/"
(cd "$work/elsewhere" && "$rg" compile deeper/replay_gate.yaml -o "$work/c.rgt")
cmp "$work/a.rgt" "$work/b.rgt"
cmp "$work/a.rgt" "$work/c.rgt"
# Decisions from two independent processes on the same dump are identical.
"$rg" decide --table "$work/a.rgt" "$src/examples/letters.jsonl" >"$work/d1.jsonl" 2>/dev/null || [ $? -eq 1 ]
"$rg" decide --table "$work/c.rgt" "$src/examples/letters.jsonl" >"$work/d2.jsonl" 2>/dev/null || [ $? -eq 1 ]
cmp "$work/d1.jsonl" "$work/d2.jsonl"
[ -s "$work/d1.jsonl" ]
echo "determinism: identical tables and decisions"
