#!/usr/bin/env bash
# The live gate end to end on a private RabbitMQ node (docs/gate.md): three dead letters, a dry run
# of the whole queue, then one reviewed message replayed with a ledger claim and an audit trail.
#
# Needs the CLI (cmake --build build --target replaygate, or tools/setup.sh), rabbitmq-server,
# librabbitmq-dev and g++ (Debian 12). Everything lives in a temporary directory: the node listens
# on 127.0.0.1 only, on free ports, and is stopped (by process id) when the script ends, however it
# ends. Run it from anywhere: bash examples/gate-demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
rg=build/bin/replaygate
if [ ! -x "$rg" ]; then
  echo "gate-demo: $rg is missing: build it first (cmake --build build --target replaygate)" >&2
  exit 2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rg-gate-demo.XXXXXX")
cleanup() {
  tools/rabbitmq.sh stop "$tmp/node" || true
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A free port P: the node takes P (AMQP), P+1 (distribution), P+2 (epmd), P+3 (management, not
# enabled here) and P+10..P+20 (the CLI tools), so all of P..P+20 must be closed.
port=
for base in $(seq 5800 30 6700); do
  busy=0
  for p in $(seq "$base" $((base + 20))); do
    if (exec 3<> "/dev/tcp/127.0.0.1/$p") 2> /dev/null; then
      busy=1
      break
    fi
  done
  if [ "$busy" = 0 ]; then
    port=$base
    break
  fi
done
if [ -z "$port" ]; then
  echo "gate-demo: no free range of 21 ports between 5800 and 6720" >&2
  exit 2
fi

echo "== a private RabbitMQ node on 127.0.0.1:$port (about 6 s) =="
url=$(tools/rabbitmq.sh start "$tmp/node" "$port")
echo "$url"

# There is no publishing tool in the CLI: a small program on the tests' AMQP client seeds the
# letters (examples/gate_demo_seed.cc).
seed=$tmp/gate_demo_seed
g++ -std=c++20 -O1 -Itests/gate examples/gate_demo_seed.cc tests/gate/amqp_test_client.cc \
  -lrabbitmq -o "$seed"
echo
echo "== payment.capture's consumer rejects three payments; the broker dead-letters them =="
"$seed" "$url" seed
"$seed" "$url" counts

gate=("$rg" gate rabbitmq --policy policies/replay_gate.yaml
  --mapping examples/rabbitmq.mapping.yaml --amqp "$url" --queue payment.capture.dlq
  --idle-exit 1000)

echo
echo "== dry run of the whole queue: what the gate would do (nothing is claimed, published or acked) =="
"${gate[@]}" --all
"$seed" "$url" counts

echo
echo "== apply, for one reviewed message: m-1 is claimed in the ledger, recorded, replayed, confirmed, acked =="
"${gate[@]}" --apply --message-id m-1 --ledger "$tmp/ledger.db" --audit "$tmp/audit.log" \
  --operator demo
"$seed" "$url" counts

echo
echo "== the replay in payment.capture (the same body and message id, x-replay=1) =="
"$seed" "$url" drain payment.capture
echo
echo "== the ledger's claim for its idempotency key, and the audit trail =="
"$rg" ledger show cap_a101 --ledger "$tmp/ledger.db"
"$rg" audit verify "$tmp/audit.log"
echo
echo "m-2 and m-3 are still in payment.capture.dlq, as they were: only m-1 was reviewed and applied."
