#!/usr/bin/env bash
# overlay-cost.sh [FILE]: what the slot overlay (es-node's blob cache) costs the reads outside it.
# The Go package's BenchmarkMineSlot mines one full slot of 1,048,576 nonces per iteration on a
# shard held in the page cache (the CPU-bound case, where a per-read lookup would show most),
# PAIRS pairs (default 6), order alternating per pair: no overlay vs an overlay of KVS (default
# 256) of the shard's KVs spread evenly. Prints samples/s per run and the median with/without
# ratio. FILE defaults to /tmp/pora-bench/shard0-1g.dat (created by `pora create` if missing).
# Needs the Go package's library built first: tools/go-lib.sh (bindings/go/lib/<goos>_<goarch>).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
FILE=${1:-/tmp/pora-bench/shard0-1g.dat} PAIRS=${PAIRS:-6} KVS=${KVS:-256}
export GOTOOLCHAIN=local GOFLAGS=-mod=mod GOPROXY=off
if [[ ! -f $FILE ]]; then
  mkdir -p "$(dirname "$FILE")"
  "$ROOT/target/release/pora" create "$FILE" --shard 0 --kv-entries-bits 13 --fill random
fi
cat "$FILE" >/dev/null
cd "$ROOT/bindings/go"
go test -c -o /tmp/pora-overlay-bench.test . >/dev/null
run() { # kvs
  /tmp/pora-overlay-bench.test -test.run '^$' -test.bench '^BenchmarkMineSlot$' -test.benchtime 3x \
    -bench-shard "$FILE" -bench-nonces 1048576 -bench-overlay-kvs "$1" | awk '/samples\/s/ { for (i = 1; i <= NF; i++) if ($i == "samples/s") print $(i-1) }'
}
for pair in $(seq 1 "$PAIRS"); do
  order="0 $KVS"; [[ $((pair % 2)) == 0 ]] && order="$KVS 0"
  for kvs in $order; do echo "pair $pair overlay-kvs $kvs $(run "$kvs") samples/s"; done
done | tee /tmp/overlay-cost.log
python3 - /tmp/overlay-cost.log "$KVS" <<'PY'
import re, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    m = re.match(r"pair (\d+) overlay-kvs (\d+) ([\d.e+]+) samples/s", line)
    if m: runs.setdefault(m[1], {})[m[2]] = float(m[3])
ratios = [r[sys.argv[2]] / r["0"] for r in runs.values() if len(r) == 2]
print("with %s overlay KVs / without, per pair: %s; median %.3f" % (sys.argv[2], " ".join("%.3f" % x for x in ratios), statistics.median(ratios)))
PY
