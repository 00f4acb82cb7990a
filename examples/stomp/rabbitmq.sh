#!/bin/sh
# RabbitMQ with its Web STOMP plugin, started apart from any system
# instance: its own node name, ports, data and log directory, so that a
# plan (command:) or a test starts and stops it by its process id.
#
#   examples/stomp/rabbitmq.sh PORT [DIR]
#
# Web STOMP listens on 127.0.0.1:PORT, path /ws, binary frames; Erlang's
# distribution on PORT+1 and the node's own epmd on PORT+2 (a child of
# this script, stopped with the node); no AMQP or plain STOMP listener. DIR (default a new temporary
# directory, removed at the end) holds the node's data and logs. SIGTERM
# or SIGINT stops the node. Needs Debian's rabbitmq-server (apt-get
# install rabbitmq-server; the system's instance may stay stopped); the
# user guest/guest logs in from localhost only.
set -eu
port=${1:?usage: rabbitmq.sh PORT [DIR]}
dir=${2:-}
if [ -z "$dir" ]; then
  dir=$(mktemp -d "${TMPDIR:-/tmp}/wsplan-rabbitmq.XXXXXX")
  tmp=$dir
fi
bin=${RABBITMQ_BIN:-/usr/lib/rabbitmq/bin}
mkdir -p "$dir/mnesia" "$dir/log"
cat >"$dir/rabbitmq.conf" <<CONF
listeners.tcp = none
stomp.listeners.tcp = none
web_stomp.tcp.ip = 127.0.0.1
web_stomp.tcp.port = $port
web_stomp.ws_frame = binary
log.console = false
log.file.level = warning
CONF
echo '[rabbitmq_web_stomp].' >"$dir/enabled_plugins"
export HOME="$dir" \
  RABBITMQ_NODENAME="wsplan-stomp-$port@localhost" \
  RABBITMQ_CONF_ENV_FILE="$dir/rabbitmq-env.conf" \
  RABBITMQ_CONFIG_FILE="$dir/rabbitmq.conf" \
  RABBITMQ_ADVANCED_CONFIG_FILE="$dir/advanced.config" \
  RABBITMQ_ENABLED_PLUGINS_FILE="$dir/enabled_plugins" \
  RABBITMQ_MNESIA_BASE="$dir/mnesia" \
  RABBITMQ_LOG_BASE="$dir/log" \
  RABBITMQ_PID_FILE="$dir/rabbitmq.pid" \
  RABBITMQ_DIST_PORT=$((port + 1)) \
  ERL_EPMD_PORT=$((port + 2))

# The node's own epmd, in the foreground: a child of this script, in its
# process group, so that nothing outlives the node.
epmd -port $((port + 2)) &
epmd=$!
stop() {
  kill -TERM "${node:-}" 2>/dev/null || true
  wait "${node:-}" || true
  kill -TERM "$epmd" 2>/dev/null || true
  wait "$epmd" || true
  [ -z "${tmp:-}" ] || rm -rf "$tmp"
}
trap 'stop; exit 0' TERM INT
"$bin/rabbitmq-server" &
node=$!
wait "$node" || true
stop
