#!/usr/bin/env bash
# Compile time, peak memory, table bytes per row and load time against rule count, per front-end.
# Usage (repository root, after a build): tools/bench/compile_scaling.sh [OUT_DIR] [ROWS...]
# Default rows: 1000 10000 100000 1000000. Writes OUT_DIR/compile.tsv
# (frontend rows seconds peak_kib table_bytes bytes_per_row load_ms) and prints it.
# A compile that takes over RG_COMPILE_TIMEOUT seconds (default 120) is reported as "timeout".
# Front-ends: yaml (policies/*.yaml); the DSL front-end adds a generator below when it lands.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-$(mktemp -d)}
shift || true
rows=("$@")
[ ${#rows[@]} -gt 0 ] || rows=(1000 10000 100000 1000000)
mkdir -p "$out"
timeout_s=${RG_COMPILE_TIMEOUT:-120}
tsv=$out/compile.tsv
printf 'frontend\trows\tseconds\tpeak_kib\ttable_bytes\tbytes_per_row\tload_ms\n' > "$tsv"
for n in "${rows[@]}"; do
  # The reference gate's guards, then n table rows: the nine seed rows and synthetic pairs.
  python3 - "$n" > "$out/gate_$n.yaml" <<'PY'
import sys
n = int(sys.argv[1])
src = open("policies/replay_gate.yaml").read()
head, _, _ = src.partition("    rows:\n")
out = [head, "    rows:\n"]
seed = [("payment.capture", "timeout", "replay_once"), ("payment.capture", "insufficient_funds", "never"),
        ("payment.capture", "duplicate", "never"), ("inventory.reserve", "lock_timeout", "replay_once"),
        ("inventory.reserve", "overbook", "never"), ("webhook.partner", "http_503", "replay_once"),
        ("webhook.partner", "http_400", "never"), ("mail.receipt", "smtp_421", "replay_once"),
        ("mail.receipt", "unknown_recipient", "never")]
side = 1
while side * side < n:
    side += 1
rows = seed[:n]
i = 0
while len(rows) < n:
    rows.append((f"topic.{i // side}", f"error_{i % side}", "never" if i % 3 == 0 else "replay_once"))
    i += 1
for t, e, v in rows:
    out.append(f"      - {{keys: [{t}, {e}], verb: {v}}}\n")
sys.stdout.write("".join(out))
PY
  set +e
  /usr/bin/time -v -o "$out/time_$n.txt" timeout "$timeout_s" \
    build/bin/replaygate compile "$out/gate_$n.yaml" -o "$out/gate_$n.rgt" >/dev/null 2>"$out/compile_$n.err"
  rc=$?
  set -e
  if [ $rc -ne 0 ]; then
    printf 'yaml\t%s\t%s\t-\t-\t-\t-\n' "$n" "$([ $rc -eq 124 ] && echo timeout || echo "error($rc)")" >> "$tsv"
    continue
  fi
  secs=$(awk -F': ' '/Elapsed/ {split($2,a,":"); s=0; for(i=1;i<=length(a);i++) s=s*60+a[i]; print s}' "$out/time_$n.txt")
  kib=$(awk -F': ' '/Maximum resident/ {print $2}' "$out/time_$n.txt")
  bytes=$(stat -c %s "$out/gate_$n.rgt")
  load=$(RG_BENCH_TABLES="$out/gate_$n.rgt" build/bin/rg_load_bench --benchmark_format=csv 2>/dev/null |
    awk -F, '/BM_Load/ {print $3}')
  printf 'yaml\t%s\t%s\t%s\t%s\t%.1f\t%s\n' "$n" "$secs" "$kib" "$bytes" "$(echo "$bytes / $n" | bc -l)" "$load" >> "$tsv"
done
column -t "$tsv"
