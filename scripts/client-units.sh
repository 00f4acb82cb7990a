#!/usr/bin/env bash
# The client's cost per unit of work, two builds side by side (issue 31,
# item 6): client CPU-seconds per million echoes, rate messages, broadcast
# deliveries and script exchanges, and client memory per idle connection,
# from plans/client-units.yaml and plans/client-units-broadcast.yaml. The
# builds run alternately (old, new, old, new, …), N runs each, so that a
# drift of the host's speed falls on both; the table gives each figure's
# median for both and new/old. Allocations per message are the *Alloc*
# tests' (0), not measured here.
#
#   scripts/client-units.sh OLD_REF [NEW_REF]     # NEW_REF default: the work tree
#   N=5 OUT=/tmp/cu scripts/client-units.sh 7e276aa
set -euo pipefail
cd "$(dirname "$0")/.."
old=${1:?usage: scripts/client-units.sh OLD_REF [NEW_REF]}
new=${2:-}
N=${N:-3}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
root=$(pwd)

# build REF NAME: wsplan at REF (the work tree when REF is empty) as $OUT/NAME.
build() {
  if [ -z "$1" ]; then
    go build -o "$OUT/$2" ./cmd/wsplan
    return
  fi
  local wt="$OUT/src-$2"
  rm -rf "$wt"
  git worktree add -q --detach "$wt" "$1"
  (cd "$wt" && go build -o "$OUT/$2" ./cmd/wsplan)
  git worktree remove --force "$wt"
}
build "$old" old
build "$new" new

# figures JSON...: one line of the five figures.
figures() {
  jq -rs '
    [.[].results[] | {(.phase): .metrics}] | add as $m
    | [$m.echo.client_cpu_per_1m, $m.rate.client_cpu_per_1m,
       $m.broadcast.client_cpu_per_1m, $m.script.client_cpu_per_1m,
       $m.hold.client_mem_per_conn] | @tsv' "$@"
}

for i in $(seq 1 "$N"); do
  for b in old new; do
    # A failed run still has its figures; say so, and go on.
    "$OUT/$b" run "$root/plans/client-units.yaml" --progress off --json "$OUT/$b-$i.json" >"$OUT/$b-$i.log" 2>&1 ||
      echo "$b run $i: exit $? (see $OUT/$b-$i.log)" >&2
    "$OUT/$b" run "$root/plans/client-units-broadcast.yaml" --progress off --json "$OUT/$b-b$i.json" >"$OUT/$b-b$i.log" 2>&1 ||
      echo "$b broadcast run $i: exit $? (see $OUT/$b-b$i.log)" >&2
    echo "$b $(figures "$OUT/$b-$i.json" "$OUT/$b-b$i.json")" >>"$OUT/figures.tsv"
  done
done

# The medians, and new/old.
awk -v n="$N" '
  function median(a, k,   i, j, t) {
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
  }
  { c[$1]++; for (f = 2; f <= 6; f++) v[$1, f, c[$1]] = $f }
  END {
    split("echo CPU-s/1M|rate CPU-s/1M|broadcast CPU-s/1M|script CPU-s/1M|memory/conn (B)", name, "|")
    printf "| figure | old | new | new/old |\n| --- | --- | --- | --- |\n"
    for (f = 2; f <= 6; f++) {
      for (b = 0; b < 2; b++) { side = b ? "new" : "old"; for (i = 1; i <= c[side]; i++) a[i] = v[side, f, i]; m[side] = median(a, c[side]) }
      printf "| %s | %.2f | %.2f | %.2f |\n", name[f - 1], m["old"], m["new"], (m["old"] ? m["new"] / m["old"] : 0)
    }
  }' "$OUT/figures.tsv"
echo "runs: $OUT"
