#!/usr/bin/env bash
# Compile time, peak memory, table bytes per row and load time against rule count, per front-end.
# Usage (repository root, after a build): tools/bench/compile_scaling.sh [OUT_DIR] [ROWS...]
# Default rows: 1000 10000 100000 1000000. Writes OUT_DIR/compile.tsv
# (frontend rows seconds cpu_seconds peak_kib table_bytes bytes_per_row load_ms) and prints it;
# OUT_DIR/timings_<frontend>_<rows>.txt holds `compile --timings` (wall seconds per stage).
# A compile that takes over RG_COMPILE_TIMEOUT seconds (default 120) is reported as "timeout".
# Front-ends (RG_FRONTENDS, default "dsl yaml"): yaml generates policies/replay_gate.yaml with n
# rows, dsl policies/replay_gate.policy with the same n rows; both compile to the same table.
# RG_REPLAYGATE (default build/bin/replaygate) picks the binary, e.g. to compare two builds.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-$(mktemp -d)}
shift || true
rows=("$@")
[ ${#rows[@]} -gt 0 ] || rows=(1000 10000 100000 1000000)
read -r -a frontends <<< "${RG_FRONTENDS:-dsl yaml}"
mkdir -p "$out"
timeout_s=${RG_COMPILE_TIMEOUT:-120}
tsv=$out/compile.tsv
printf 'frontend\trows\tseconds\tcpu_seconds\tpeak_kib\ttable_bytes\tbytes_per_row\tload_ms\n' > "$tsv"
for n in "${rows[@]}"; do
  for fe in "${frontends[@]}"; do
    ext=$([ "$fe" = dsl ] && echo policy || echo yaml)
    src=$out/gate_$n.$ext
    # The reference gate's guards, then n table rows: the nine seed rows and synthetic pairs.
    python3 - "$n" "$fe" > "$src" <<'PY'
import sys
n, frontend = int(sys.argv[1]), sys.argv[2]
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
if frontend == "yaml":
    src = open("policies/replay_gate.yaml").read()
    head, _, rest = src.partition("    rows:\n")
    _, _, tail = rest.partition("\ninvariants:\n")  # keep the invariants: compile proves them
    out = [head, "    rows:\n"]
    out += [f"      - {{keys: [{t}, {e}], verb: {v}}}\n" for t, e, v in rows]
    out += ["\ninvariants:\n", tail]
else:
    src = open("policies/replay_gate.policy").read()
    head, _, rest = src.partition("table known_failures by (topic, error_class) {\n")
    _, _, tail = rest.partition("}\n")
    out = [head, "table known_failures by (topic, error_class) {\n"]
    out += [f"  {t}, {e} -> {v}\n" for t, e, v in rows]
    out += ["}\n", tail]
sys.stdout.write("".join(out))
PY
    set +e
    /usr/bin/time -v -o "$out/time_${fe}_$n.txt" timeout "$timeout_s" \
      "${RG_REPLAYGATE:-build/bin/replaygate}" compile --timings "$src" -o "$out/gate_${fe}_$n.rgt" \
      >/dev/null 2>"$out/timings_${fe}_$n.txt"
    rc=$?
    set -e
    if [ $rc -ne 0 ]; then
      printf '%s\t%s\t%s\t-\t-\t-\t-\t-\n' "$fe" "$n" \
        "$([ $rc -eq 124 ] && echo timeout || echo "error($rc)")" >> "$tsv"
      continue
    fi
    secs=$(awk -F': ' '/Elapsed/ {split($2,a,":"); s=0; for(i=1;i<=length(a);i++) s=s*60+a[i]; print s}' \
      "$out/time_${fe}_$n.txt")
    cpu=$(awk -F': ' '/User time|System time/ {s+=$2} END {printf "%.2f", s}' "$out/time_${fe}_$n.txt")
    kib=$(awk -F': ' '/Maximum resident/ {print $2}' "$out/time_${fe}_$n.txt")
    bytes=$(stat -c %s "$out/gate_${fe}_$n.rgt")
    load=$(RG_BENCH_TABLES="$out/gate_${fe}_$n.rgt" build/bin/rg_load_bench --benchmark_format=csv 2>/dev/null |
      awk -F, '/BM_Load/ {print $3}' || true)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%s\n' "$fe" "$n" "$secs" "$cpu" "$kib" "$bytes" \
      "$(echo "$bytes / $n" | bc -l)" "$load" >> "$tsv"
  done
done
column -t "$tsv"
