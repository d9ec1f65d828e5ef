#!/usr/bin/env bash
# `replaygate decide --ledger` end to end on a 1,000,000-letter dump (not a test; the numbers go to
# docs/benchmarks.md and docs/ledger.md): no ledger, a fresh SQLite ledger, a fresh PostgreSQL
# ledger (a private postgresql-15 server on 127.0.0.1, fsync on, started and stopped here by its
# process id), and --dry-run against each filled ledger; then a dump of letters that need no claim,
# with and without a ledger. Every run in this one invocation, one after the other.
#
#   tests/ledger/bench/run_decide_ledger.sh [BUILD_DIR [OUT_DIR [LETTERS]]]
#
# Prints one row per run: wall, user and system seconds, peak RSS, records/s and claims/s (both per
# wall second: a claim waits for its commit's fsync, which is not CPU time).
set -euo pipefail
build=${1:-build}
out=${2:-$(mktemp -d /tmp/rg-ledger-bench-XXXXXX)}
letters=${3:-1000000}
rg="$build/bin/replaygate"
mkdir -p "$out"
src=$(cd "$(dirname "$0")/../../.." && pwd)

echo "== dump: $letters letters, in $out =="
# A realistic mix: 70% replayable letters with distinct keys, 5% repeating an earlier key (a
# retried letter: held by the in-memory guard, never reaching the ledger), 25% that the policy
# parks or holds (declined cards, committed work, exhausted attempts: no claim).
python3 - "$letters" > "$out/dump.jsonl" <<'PY'
import json, random, sys
rng = random.Random(20261202)
replay = [("payment.capture", "timeout"), ("inventory.reserve", "lock_timeout"),
          ("webhook.partner", "http_503"), ("mail.receipt", "smtp_421")]
park = [("payment.capture", "insufficient_funds"), ("mail.receipt", "unknown_recipient"),
        ("webhook.partner", "http_400")]
w = sys.stdout.write
keys = []
for i in range(int(sys.argv[1])):
    r = rng.random()
    # Keys as services make them: random (a UUID's 128 bits in hex), so a block's claims land all
    # over the ledger's key index, not on a few neighbouring pages.
    key, attempts, committed = "%032x" % rng.getrandbits(128), rng.randrange(3), False
    keys.append(key)
    if r < 0.70:
        t, e = replay[rng.randrange(len(replay))]
    elif r < 0.75 and i > 0:
        t, e = replay[rng.randrange(len(replay))]
        key = keys[rng.randrange(i)]
    elif r < 0.85:
        t, e = park[rng.randrange(len(park))]
    elif r < 0.92:
        t, e = replay[rng.randrange(len(replay))]
        committed = True
    else:
        t, e = replay[rng.randrange(len(replay))]
        attempts = 3
    w(json.dumps({"message_id": f"m-{i}", "topic": t, "error_class": e, "attempts": attempts,
                  "idempotency_key": key, "already_committed": committed},
                 separators=(",", ":")) + "\n")
PY
# The same number of letters, none of which needs a claim (parked by the policy).
python3 - "$letters" > "$out/noclaim.jsonl" <<'PY'
import json, sys
pairs = [("payment.capture", "insufficient_funds"), ("mail.receipt", "unknown_recipient"),
         ("webhook.partner", "http_400")]
w = sys.stdout.write
for i in range(int(sys.argv[1])):
    t, e = pairs[i % 3]
    w(json.dumps({"message_id": f"m-{i}", "topic": t, "error_class": e, "attempts": 1,
                  "idempotency_key": f"k{i}", "already_committed": False},
                 separators=(",", ":")) + "\n")
PY
ls -l "$out/dump.jsonl" "$out/noclaim.jsonl"
"$rg" compile "$src/policies/replay_gate.yaml" -o "$out/gate.rgt"

# A private PostgreSQL server (the recipe of /work/shared/SERVERS.md and tests/ledger/pg_server.cc).
pgbin=/usr/lib/postgresql/15/bin
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
pgdir=$(mktemp -d /tmp/rg-ledger-bench-pg-XXXXXX)
pgpid=
stop_pg() {
  if [ -n "$pgpid" ]; then
    kill -INT "$pgpid" 2>/dev/null || true
    for _ in $(seq 300); do kill -0 "$pgpid" 2>/dev/null || break; sleep 0.02; done
    pgpid=
  fi
  rm -rf "$pgdir"
}
trap stop_pg EXIT
[ "$(id -u)" = 0 ] && chown postgres "$pgdir"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
as_pg "$pgbin/initdb" -D "$pgdir/data" -U rg --auth=trust -E UTF8 --no-sync > "$pgdir/initdb.log"
as_pg "$pgbin/pg_ctl" -D "$pgdir/data" -l "$pgdir/server.log" -w -t 30 start \
  -o "-c listen_addresses=127.0.0.1 -p $port -k $pgdir" > /dev/null
pgpid=$(head -n 1 "$pgdir/data/postmaster.pid")
pgurl="postgresql://rg@127.0.0.1:$port/postgres"
echo "PostgreSQL $(as_pg "$pgbin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (pid $pgpid, fsync $(psql -XAtq -d "$pgurl" -c 'show fsync'), synchronous_commit $(psql -XAtq -d "$pgurl" -c 'show synchronous_commit'))"

printf '%-34s %7s %7s %7s %8s %11s %9s %10s\n' run wall_s user_s sys_s rss_mb records/s claims claims/s
row() {  # NAME DUMP [decide options...]
  local name=$1 dump=$2
  shift 2
  /usr/bin/time -f '%e %U %S %M' -o "$out/time.txt" \
    "$rg" decide --table "$out/gate.rgt" "$@" "$dump" > "$out/$name.out" 2> "$out/$name.err" || true
  read -r wall user sys rss < "$out/time.txt"
  local claims
  claims=$(grep -o 'claims [0-9]*' "$out/$name.err" | awk '{print $2}' || true)
  claims=${claims:-0}
  local n
  n=$(wc -l < "$out/$name.out")
  awk -v name="$name" -v w="$wall" -v u="$user" -v s="$sys" -v m="$rss" -v n="$n" -v c="$claims" \
    'BEGIN { printf "%-34s %7.2f %7.2f %7.2f %8.1f %11.0f %9d %10.0f\n", name, w, u, s, m / 1000, n / w, c, c / w }'
  grep '^summary' "$out/$name.err" >> "$out/summaries.txt" || true
  grep -v '^summary' "$out/$name.err" | head -n 3 || true
}

row no_ledger "$out/dump.jsonl"
row sqlite_fresh "$out/dump.jsonl" --ledger "$out/ledger.db"
row sqlite_dry_run_filled "$out/dump.jsonl" --ledger "$out/ledger.db" --dry-run
row postgres_fresh "$out/dump.jsonl" --ledger "$pgurl"
row postgres_dry_run_filled "$out/dump.jsonl" --ledger "$pgurl" --dry-run
row noclaim_no_ledger "$out/noclaim.jsonl"
row noclaim_sqlite "$out/noclaim.jsonl" --ledger "$out/ledger_noclaim.db"
row noclaim_postgres "$out/noclaim.jsonl" --ledger "$pgurl" --ledger-scope noclaim
# The decisions are the same with and without a ledger, but for the "claimed" member.
if cmp -s <(sed 's/,"claimed":true}$/}/' "$out/sqlite_fresh.out") "$out/no_ledger.out" &&
   cmp -s <(sed 's/,"claimed":true}$/}/' "$out/postgres_fresh.out") "$out/no_ledger.out"; then
  echo "fresh-ledger decisions = no-ledger decisions (but for \"claimed\": true)"
else
  echo "WARNING: a fresh ledger changed a decision"
fi
echo "summaries in $out/summaries.txt"
