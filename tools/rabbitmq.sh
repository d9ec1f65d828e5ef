#!/usr/bin/env bash
# A private RabbitMQ node on 127.0.0.1 for the README's gate example and manual tries (the recipe of
# docs/gate.md and ../shared/SERVERS.md: every path in DIR, a private epmd, stopped by process id;
# never the system service).
#   tools/rabbitmq.sh start DIR [PORT]   starts it (PORT default 5680) and prints its amqp:// URL
#   tools/rabbitmq.sh stop DIR           stops it and removes DIR
set -euo pipefail
command=${1:-}
dir=${2:-}
if [ -z "$command" ] || [ -z "$dir" ]; then
  echo "usage: tools/rabbitmq.sh start DIR [PORT] | stop DIR" >&2
  exit 2
fi
case "$command" in
  start)
    port=${3:-5680}
    if [ ! -x /usr/lib/rabbitmq/bin/rabbitmq-server ]; then
      echo "rabbitmq.sh: rabbitmq-server is not installed (apt-get install rabbitmq-server)" >&2
      exit 2
    fi
    mkdir -p "$dir"/mnesia "$dir"/log "$dir"/conf.d "$dir"/home
    dir=$(cd "$dir" && pwd)
    (
      export RABBITMQ_NODENAME="rg$port@localhost" RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
      export RABBITMQ_NODE_PORT=$port RABBITMQ_DIST_PORT=$((port + 1)) ERL_EPMD_PORT=$((port + 2))
      export ERL_EPMD_ADDRESS=127.0.0.1
      export RABBITMQ_CTL_DIST_PORT_MIN=$((port + 10)) RABBITMQ_CTL_DIST_PORT_MAX=$((port + 20))
      export RABBITMQ_MNESIA_BASE=$dir/mnesia RABBITMQ_LOG_BASE=$dir/log
      export RABBITMQ_PID_FILE=$dir/node.pid RABBITMQ_CONF_ENV_FILE=$dir/rabbitmq-env.conf
      export RABBITMQ_CONFIG_FILE=$dir/rabbitmq.conf RABBITMQ_CONFIG_FILES=$dir/conf.d
      export RABBITMQ_ADVANCED_CONFIG_FILE=$dir/advanced.config
      export RABBITMQ_ENABLED_PLUGINS_FILE=$dir/enabled_plugins HOME=$dir/home
      export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
      export PATH=/usr/lib/rabbitmq/bin:$PATH
      : > "$RABBITMQ_CONF_ENV_FILE"
      if [ ! -f "$HOME/.erlang.cookie" ]; then
        head -c 24 /dev/urandom | base64 | tr -dc A-Za-z0-9 > "$HOME/.erlang.cookie"
        chmod 400 "$HOME/.erlang.cookie"
      fi
      printf 'management.tcp.ip = 127.0.0.1\nmanagement.tcp.port = %s\n' $((port + 3)) \
        > "$RABBITMQ_CONFIG_FILE"
      echo '[].' > "$RABBITMQ_ENABLED_PLUGINS_FILE"
      epmd -port "$ERL_EPMD_PORT" -address 127.0.0.1 > "$dir/epmd.log" 2>&1 < /dev/null &
      echo $! > "$dir/epmd.pid"
      (cd "$dir" && exec setsid rabbitmq-server) > "$dir/stdout.log" 2>&1 < /dev/null &
    )
    for _ in $(seq 1 600); do
      if (exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null; then
        echo "amqp://guest:guest@127.0.0.1:$port/%2F"
        exit 0
      fi
      sleep 0.1
    done
    echo "rabbitmq.sh: the node did not open port $port within 60 s; see $dir/stdout.log" >&2
    exit 2
    ;;
  stop)
    [ -d "$dir" ] || exit 0
    if [ -f "$dir/node.pid" ]; then
      pid=$(cat "$dir/node.pid")
      kill -TERM "$pid" 2> /dev/null || true
      for _ in $(seq 1 300); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2> /dev/null || true
    fi
    if [ -f "$dir/epmd.pid" ]; then kill -TERM "$(cat "$dir/epmd.pid")" 2> /dev/null || true; fi
    rm -rf "$dir"
    ;;
  *)
    echo "usage: tools/rabbitmq.sh start DIR [PORT] | stop DIR" >&2
    exit 2
    ;;
esac
