#!/usr/bin/env bash
# What watching a run costs, and whether shards count alike wherever they run.
# Needs a quiet host (nothing else on its CPUs); figures on a shared host are
# only indicative. Writes benchfmt files and benchstat comparisons to $OUT.
#
#   scripts/live-cost.sh            # N=6 alternating pairs of each comparison
#   N=10 OUT=/tmp/lc scripts/live-cost.sh
#
# 1. Overhead of --metrics-listen scraped every second (curl), against the
#    same plan without it, runs alternating: client CPU-seconds per million
#    echoes (plans/client-cost.yaml). Target: ratio <= 1.03.
# 2. The same echo plan with `client: {shards: 2}` and with two
#    `wsplan shard --listen` remote shards on this host: client CPU-seconds
#    per million, the shards' own costs counted both ways. Target: within 10%.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-6}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
go build -o "$OUT/wsplan" ./cmd/wsplan
W="$OUT/wsplan"
PORT=${PORT:-19464}

echo "== 1. --metrics-listen scraped every 1s vs none ($N pairs)"
for i in $(seq "$N"); do
  "$W" run plans/client-cost.yaml --progress off --out "$OUT/logs" --benchfmt "$OUT/off-$i.txt" >/dev/null || true
  "$W" run plans/client-cost.yaml --progress off --out "$OUT/logs" --benchfmt "$OUT/on-$i.txt" \
    --metrics-listen "127.0.0.1:$PORT" >/dev/null &
  run=$!
  while kill -0 "$run" 2>/dev/null; do
    curl -s -o /dev/null "http://127.0.0.1:$PORT/metrics" || true
    sleep 1
  done
  wait "$run" || true # a failed assertion still measured
done
cat "$OUT"/off-*.txt >"$OUT/off.txt"
cat "$OUT"/on-*.txt >"$OUT/on.txt"
go run golang.org/x/perf/cmd/benchstat "$OUT/off.txt" "$OUT/on.txt" | tee "$OUT/listen.benchstat"

echo "== 2. shards: 2 vs two remote shards on this host ($N pairs)"
"$W" shard certs "$OUT/certs" >/dev/null
# Pinned where the plan pins its client (client_cpus: "1"), as local shards are.
PIN=$(command -v taskset >/dev/null && echo "taskset -c 1" || true)
$PIN "$W" shard --listen 127.0.0.1:17070 --certs "$OUT/certs" --idle-exit 10m --loops 1 2>"$OUT/shard-a.log" &
A=$!
$PIN "$W" shard --listen 127.0.0.1:17071 --certs "$OUT/certs" --idle-exit 10m --loops 1 2>"$OUT/shard-b.log" &
B=$!
trap 'kill $A $B 2>/dev/null || true' EXIT
sleep 1
sed 's/^servers:/client: {shards: 2, loops: 1}\nservers:/' plans/client-cost.yaml >"$OUT/local.yaml"
sed "s|^servers:|client: {remote: [127.0.0.1:17070, 127.0.0.1:17071], certs: $OUT/certs, loops: 1}\nservers:|" plans/client-cost.yaml >"$OUT/remote.yaml"
for i in $(seq "$N"); do
  "$W" run "$OUT/local.yaml" --progress off --out "$OUT/logs" --benchfmt "$OUT/local-$i.txt" >/dev/null || true
  "$W" run "$OUT/remote.yaml" --progress off --out "$OUT/logs" --benchfmt "$OUT/remote-$i.txt" >/dev/null || true
done
cat "$OUT"/local-*.txt >"$OUT/local.txt"
cat "$OUT"/remote-*.txt >"$OUT/remote.txt"
go run golang.org/x/perf/cmd/benchstat "$OUT/local.txt" "$OUT/remote.txt" | tee "$OUT/shards.benchstat"
echo "results in $OUT"
