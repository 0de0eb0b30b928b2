#!/usr/bin/env bash
# engine-vs-mine.sh [SHARD_FILE]: es-node's task through pora.Engine (`porago task`: one shard,
# its whole nonce range, the slot deadline, requiredDiff 0 so no nonce ends it early) against
# `pora mine` alone on the same file, side by side. PAIRS rounds (default 3), order alternating per
# round; COLD=1 (default) drops the page cache before every run, COLD=0 reads the file once first
# so every run is cached. Reports mining power (bps, es-node's measure) and nonces/s per run and
# the median engine/mine ratio of nonces/s. Run it on a quiet machine.
#
# usage: bench/engine-vs-mine.sh [SHARD_FILE]    (default /tmp/pora-bench/shard0-8g.dat)
# env:   SLOT=12 PAIRS=3 COLD=1 NONCES=1048576 KV_ENTRIES_BITS=16 (when creating the shard)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SHARD=${1:-/tmp/pora-bench/shard0-8g.dat}
SLOT=${SLOT:-12} PAIRS=${PAIRS:-3} COLD=${COLD:-1} NONCES=${NONCES:-1048576}
PORA=target/release/pora PORAGO=target/release/porago
export GOTOOLCHAIN=local GOFLAGS=-mod=mod GOPROXY=off
cargo build --release -p pora -p pora-ffi >&2
tools/go-lib.sh >&2 # porago links bindings/go/lib/<goos>_<goarch>, the production library
(cd bindings/go && go build -o "$ROOT/$PORAGO" ./cmd/porago)
if [ ! -e "$SHARD" ]; then
    mkdir -p "$(dirname "$SHARD")"
    "$PORA" create "$SHARD" --shard "${SHARD_IDX:-0}" --kv-entries-bits "${KV_ENTRIES_BITS:-16}" --fill random
fi
prepare() {
    if [ "$COLD" = 1 ]; then sync; echo 3 > /proc/sys/vm/drop_caches; else cat "$SHARD" >/dev/null; fi
}
randao=0x$(printf '5a%.0s' $(seq 1 32))
engine() {
    prepare
    "$PORAGO" task --file "$SHARD" --randao "$randao" --required-diff 0 --slot "$SLOT" --nonce-limit "$NONCES" --json \
        | python3 -c "import json,sys; o=json.loads(sys.stdin.readline()); print(o['miningPowerBps'], '%.0f' % (o['noncesTried'] / (o['samplingTimeMs'] / 1000)), o['method'], o['threads'], o['depth'])"
}
mine() {
    prepare
    "$PORA" mine --file "$SHARD" --randao "$randao" --required-diff 0 --slot "$SLOT" --nonces "0..$NONCES" --json \
        | python3 -c "import json,sys; o=json.loads(sys.stdin.readline()); print(int(o['miningPower'] * 10000), '%.0f' % (o['noncesTried'] / o['elapsedSec']), o['method'], o['threads'], o['depth'])"
}
for i in $(seq 1 "$PAIRS"); do
    if [ $((i % 2)) -eq 1 ]; then e=$(engine); m=$(mine); else m=$(mine); e=$(engine); fi
    echo "round $i: engine $e | mine $m"
done | tee /tmp/engine-vs-mine.log
python3 - /tmp/engine-vs-mine.log <<'PY'
import re, statistics, sys
ratios = []
for line in open(sys.argv[1]):
    m = re.match(r"round \d+: engine (\d+) (\d+) .* \| mine (\d+) (\d+) ", line + " ")
    if m: ratios.append(int(m[2]) / int(m[4]))
print("engine/mine nonces/s per round: %s; median %.3f" % (" ".join("%.3f" % r for r in ratios), statistics.median(ratios)))
PY
