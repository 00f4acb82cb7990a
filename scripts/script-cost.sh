#!/usr/bin/env bash
# What a script costs the client (issue 21, item 6), from plans/script-cost.yaml:
# client CPU-seconds per million exchanges of the script phase against per
# million echoes of the echo phase in the same run (target: ratio <= 1.5), and
# a user's client memory against a plain connection's (target: at most 4 KB
# more); then the allocations per exchange (BenchmarkScriptExchange). Needs a
# quiet host: figures on a shared one are only indicative. Runs alternate two
# shapes: the plan as it is (10,000 users, the memory claim) and users=5,000
# (as many users as the echo phase has connections: like for like).
#
#   scripts/script-cost.sh            # N=3 runs of each shape
#   N=5 OUT=/tmp/sc scripts/script-cost.sh
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-3}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
go build -o "$OUT/wsplan" ./cmd/wsplan

# figures FILE: echo and script CPU-s/1M, their ratio, memory per connection
# and per user, and the difference (bytes).
figures() {
  jq -r '
    [.results[] | {(.phase): .metrics}] | add as $m
    | [$m.echo.client_cpu_per_1m, $m.script.client_cpu_per_1m,
       ($m.script.client_cpu_per_1m / $m.echo.client_cpu_per_1m),
       $m.hold.client_mem_per_conn, $m.script.client_mem_per_user,
       ($m.script.client_mem_per_user - $m.hold.client_mem_per_conn),
       $m.script.users_peak, $m.script.client_bound, $m.echo.client_bound]
    | @tsv' "$1"
}

printf 'shape\trun\techo_cpu/1M\tscript_cpu/1M\tratio\tmem/conn\tmem/user\tuser-conn\tusers_peak\tscript_bound\techo_bound\n' | tee "$OUT/figures.tsv"
for i in $(seq "$N"); do
  for shape in users=10000 users=5000; do
    "$OUT/wsplan" run plans/script-cost.yaml --set "$shape" --progress off \
      --out "$OUT/logs" --json "$OUT/$shape-$i.json" >"$OUT/$shape-$i.txt" 2>&1 || true # a failed assertion still measured
    printf '%s\t%s\t%s\n' "$shape" "$i" "$(figures "$OUT/$shape-$i.json")" | tee -a "$OUT/figures.tsv"
  done
done

echo "== medians"
for shape in users=10000 users=5000; do
  for col in 5 8; do
    name=$(head -1 "$OUT/figures.tsv" | cut -f"$col")
    med=$(grep "^$shape" "$OUT/figures.tsv" | cut -f"$col" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
    echo "$shape $name median: $med"
  done
done

echo "== allocations per exchange"
go test -run TestScriptExchangeAllocs -bench BenchmarkScriptExchange -benchmem -count 3 ./scenarios/script | tee "$OUT/bench.txt"
echo "results in $OUT"
