#!/bin/sh
# (Re)starts examples/node-ws/server.js the way a url: server's
# restart_command does it (plans/restart-node.yaml): stops the process
# named by PIDFILE if it runs and waits for it to exit, starts the server
# again on ADDR in the background (its output in PIDFILE.log), writes its
# pid to PIDFILE and waits until it listens. Run it once by hand to start
# the server the first time:
#
#   sh examples/node-ws/restart.sh node-ws.pid 127.0.0.1:9300
set -eu
pidfile=$1
addr=$2
dir=$(dirname "$0")
if [ -s "$pidfile" ]; then
  pid=$(cat "$pidfile")
  if kill "$pid" 2>/dev/null; then
    while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
  fi
fi
: > "$pidfile.log"
nohup node "$dir/server.js" "$addr" >> "$pidfile.log" 2>&1 &
echo $! > "$pidfile"
i=0
until grep -q "listening on" "$pidfile.log"; do
  i=$((i + 1))
  if [ "$i" -gt 200 ] || ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    cat "$pidfile.log" >&2
    exit 1
  fi
  sleep 0.05
done
