#!/usr/bin/env bash
# engine-slots.sh [FILE]: the Go Engine over consecutive slots against `pora mine --slots N`
# (BENCHMARKS 22): es-node keeps one Engine open for months, so `auto` must decide again between its
# tasks as it does between `pora mine`'s slots. Each run drops the page cache once, then mines
# SLOTS (default 8) consecutive 12 s slots of 1,048,576 nonces with requiredDiff 0 (no nonce ends
# a slot early): `porago task --tasks SLOTS` (one Engine, the randao's last byte differing per
# slot) and `pora mine --random-randao --slots SLOTS`. PAIRS runs of each (default 2), the order
# alternating per pair. Prints each run's per-slot mining power and method, the per-slot
# ratio engine/mine of every pair, and per slot the median and mean of those ratios. FILE
# defaults to the 8 GiB shard of the other bench scripts.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
ROOT=$PWD
FILE=${1:-$DEFAULT_SHARD}
SLOTS=${SLOTS:-8} PAIRS=${PAIRS:-2}
PORAGO=target/release/porago
export GOTOOLCHAIN=local GOFLAGS=-mod=mod GOPROXY=off
ensure_pora
if [ ! -x "$PORAGO" ]; then
    tools/go-lib.sh >&2 # the production library, bindings/go/lib/<goos>_<goarch>
    (cd bindings/go && go build -o "$ROOT/$PORAGO" ./cmd/porago)
fi
ensure_random_shard "$FILE" "$KV_ENTRIES_BITS"
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
echo "results in $out" >&2
randao=0x$(printf '5a%.0s' $(seq 1 32))
engine() { # pair
    evict "$FILE"
    "$PORAGO" task --file "$FILE" --randao "$randao" --required-diff 0 --tasks "$SLOTS" --json >"$out/engine-$1.jsonl"
    python3 -c 'import json,sys; print("engine: " + " ".join("%.2f(%s)" % (o["miningPowerBps"] / 1e4, o["method"]) for o in map(json.loads, open(sys.argv[1]))))' "$out/engine-$1.jsonl"
}
mine() { # pair
    evict "$FILE"
    # shellcheck disable=SC2086
    "$PORA" mine $PORA_ARGS --file "$FILE" --random-randao --required-diff 0 --slots "$SLOTS" --json >"$out/mine-$1.jsonl"
    python3 -c 'import json,sys; print("mine:   " + " ".join("%.2f(%s)" % (o["miningPower"], o["method"]) for o in map(json.loads, open(sys.argv[1]))))' "$out/mine-$1.jsonl"
}
for i in $(seq 1 "$PAIRS"); do
    echo "pair $i"
    if [ $((i % 2)) -eq 1 ]; then engine "$i"; mine "$i"; else mine "$i"; engine "$i"; fi
done
python3 - "$out" "$PAIRS" <<'PY'
import json, statistics, sys
out, pairs = sys.argv[1], int(sys.argv[2])
ratios = []  # per pair: engine/mine per slot
for i in range(1, pairs + 1):
    e = [o["miningPowerBps"] / 1e4 for o in map(json.loads, open(f"{out}/engine-{i}.jsonl"))]
    m = [o["miningPower"] for o in map(json.loads, open(f"{out}/mine-{i}.jsonl"))]
    ratios.append([a / b for a, b in zip(e, m)])
    print(f"pair {i}: engine/mine per slot " + " ".join("%.2f" % x for x in ratios[-1]))
# One pair's ratio carries the device's run-to-run spread (a cold slot moves 10-25% between
# consecutive runs): the per-slot median and mean over the interleaved pairs are the comparison.
for s in range(min(map(len, ratios))):
    r = [p[s] for p in ratios]
    print(f"slot {s + 1}: engine/mine median {statistics.median(r):.3f}, mean {statistics.mean(r):.3f}, "
          f"range {min(r):.2f}-{max(r):.2f}, >= 0.95 in {sum(x >= 0.95 for x in r)} of {len(r)} pairs")
PY
