#!/usr/bin/env bash
# A private RabbitMQ cluster of N nodes on 127.0.0.1 (tests, the cluster benchmark, manual tries):
# the single-node recipe of tools/rabbitmq.sh per node (every path in DIR/nodeI, never the system
# service), one private epmd and one cookie for all, each node's Erlang limited to one scheduler
# (+S 1:1: N nodes on a small host), clustered with join_cluster, stopped by process id.
#   tools/rabbitmq-cluster.sh start DIR N [PORT]  starts N nodes (node I's AMQP port is PORT + 30*I,
#                                                 PORT default 5700), clusters them and prints
#                                                 their amqp:// URLs, one a line
#   tools/rabbitmq-cluster.sh kill DIR I          kill -9 of node I (its data stays)
#   tools/rabbitmq-cluster.sh restart DIR I       starts node I again on its data (it rejoins)
#   tools/rabbitmq-cluster.sh leader DIR QUEUE    the index of the node leading quorum queue QUEUE
#   tools/rabbitmq-cluster.sh ctl DIR I ARGS...   rabbitmqctl ARGS on node I
#   tools/rabbitmq-cluster.sh stop DIR            stops every node and epmd, removes DIR
set -euo pipefail
command=${1:-}
dir=${2:-}
usage() {
  echo "usage: tools/rabbitmq-cluster.sh start DIR N [PORT] | kill DIR I | restart DIR I |" \
    "leader DIR QUEUE | ctl DIR I ARGS... | stop DIR" >&2
  exit 2
}
[ -n "$command" ] && [ -n "$dir" ] || usage

# The environment of node I (its ports from the base port in DIR/base_port): what rabbitmq-server
# and rabbitmqctl read.
node_env() {
  local i=$1 base port
  base=$(cat "$dir/base_port")
  port=$((base + 30 * i))
  export RABBITMQ_NODENAME="rgc$port@localhost" RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
  export RABBITMQ_NODE_PORT=$port RABBITMQ_DIST_PORT=$((port + 1)) ERL_EPMD_PORT=$((base - 1))
  export ERL_EPMD_ADDRESS=127.0.0.1
  export RABBITMQ_CTL_DIST_PORT_MIN=$((port + 10)) RABBITMQ_CTL_DIST_PORT_MAX=$((port + 20))
  local d=$dir/node$i
  export RABBITMQ_MNESIA_BASE=$d/mnesia RABBITMQ_LOG_BASE=$d/log RABBITMQ_PID_FILE=$d/node.pid
  export RABBITMQ_CONF_ENV_FILE=$d/rabbitmq-env.conf RABBITMQ_CONFIG_FILE=$d/rabbitmq.conf
  export RABBITMQ_CONFIG_FILES=$d/conf.d RABBITMQ_ADVANCED_CONFIG_FILE=$d/advanced.config
  export RABBITMQ_ENABLED_PLUGINS_FILE=$d/enabled_plugins HOME=$dir/home
  export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1} +S 1:1"
  export PATH=/usr/lib/rabbitmq/bin:$PATH
}

# Starts node I in the background; waits for its AMQP port.
start_node() {
  local i=$1
  (
    node_env "$i"
    mkdir -p "$RABBITMQ_MNESIA_BASE" "$RABBITMQ_LOG_BASE" "$RABBITMQ_CONFIG_FILES"
    : > "$RABBITMQ_CONF_ENV_FILE"
    printf 'management.tcp.ip = 127.0.0.1\nmanagement.tcp.port = %s\n' $((RABBITMQ_NODE_PORT + 3)) \
      > "$RABBITMQ_CONFIG_FILE"
    echo '[].' > "$RABBITMQ_ENABLED_PLUGINS_FILE"
    (cd "$dir/node$i" && exec setsid rabbitmq-server) > "$dir/node$i/stdout.log" 2>&1 < /dev/null &
  )
  local port=$(($(cat "$dir/base_port") + 30 * i))
  for _ in $(seq 1 900); do
    if (exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null; then return 0; fi
    sleep 0.1
  done
  echo "rabbitmq-cluster.sh: node $i did not open port $port within 90 s; see" \
    "$dir/node$i/stdout.log" >&2
  return 1
}

ctl() {
  local i=$1
  shift
  (node_env "$i" && rabbitmqctl -n "$RABBITMQ_NODENAME" -q "$@")
}


case "$command" in
  start)
    n=${3:-}
    base=${4:-5700}
    [[ "$n" =~ ^[1-9]$ ]] || usage
    if [ ! -x /usr/lib/rabbitmq/bin/rabbitmq-server ]; then
      echo "rabbitmq-cluster.sh: rabbitmq-server is not installed (apt-get install rabbitmq-server)" >&2
      exit 2
    fi
    mkdir -p "$dir/home"
    dir=$(cd "$dir" && pwd)
    echo "$base" > "$dir/base_port"
    head -c 24 /dev/urandom | base64 | tr -dc A-Za-z0-9 > "$dir/home/.erlang.cookie"
    chmod 400 "$dir/home/.erlang.cookie"
    epmd -port $((base - 1)) -address 127.0.0.1 > "$dir/epmd.log" 2>&1 < /dev/null &
    echo $! > "$dir/epmd.pid"
    for i in $(seq 0 $((n - 1))); do mkdir -p "$dir/node$i"; done
    for i in $(seq 0 $((n - 1))); do start_node "$i"; done
    first=$( (node_env 0 && echo "$RABBITMQ_NODENAME"))
    for i in $(seq 1 $((n - 1))); do
      # rabbitmqctl logs expected errors while a node joins: kept in DIR/join.log.
      for step in stop_app "join_cluster $first" start_app; do
        # shellcheck disable=SC2086
        if ! ctl "$i" $step >> "$dir/join.log" 2>&1; then
          echo "rabbitmq-cluster.sh: node $i: rabbitmqctl $step failed; see $dir/join.log" >&2
          exit 1
        fi
      done
    done
    echo "$n" > "$dir/nodes"
    for i in $(seq 0 $((n - 1))); do
      echo "amqp://guest:guest@127.0.0.1:$((base + 30 * i))/%2F"
    done
    ;;
  kill)
    i=${3:-}
    [ -f "$dir/node$i/node.pid" ] || usage
    kill -KILL "$(cat "$dir/node$i/node.pid")" 2> /dev/null || true
    ;;
  restart)
    i=${3:-}
    [ -d "$dir/node$i" ] || usage
    dir=$(cd "$dir" && pwd)
    start_node "$i"
    ;;
  leader)
    queue=${3:-}
    [ -n "$queue" ] || usage
    dir=$(cd "$dir" && pwd)
    n=$(cat "$dir/nodes")
    # Ask any node that answers; the leader is a node name: its index from its port.
    for i in $(seq 0 $((n - 1))); do
      if line=$(ctl "$i" list_queues name leader 2> /dev/null | awk -v q="$queue" '$1 == q {print $2}'); then
        [ -n "$line" ] || continue
        port=${line#rgc}
        port=${port%@*}
        echo $(((port - $(cat "$dir/base_port")) / 30))
        exit 0
      fi
    done
    echo "rabbitmq-cluster.sh: no node names a leader of $queue" >&2
    exit 1
    ;;
  ctl)
    i=${3:-}
    [ -d "$dir/node$i" ] || usage
    dir=$(cd "$dir" && pwd)
    shift 3
    ctl "$i" "$@"
    ;;
  stop)
    [ -d "$dir" ] || exit 0
    # A node removes its pid file as it stops: read them all first.
    pids=()
    for pidfile in "$dir"/node*/node.pid; do
      [ -f "$pidfile" ] && pids+=("$(cat "$pidfile")")
    done
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2> /dev/null || true; done
    for pid in "${pids[@]}"; do
      for _ in $(seq 1 300); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2> /dev/null || true
    done
    if [ -f "$dir/epmd.pid" ]; then kill -TERM "$(cat "$dir/epmd.pid")" 2> /dev/null || true; fi
    rm -rf "$dir"
    ;;
  *)
    usage
    ;;
esac
