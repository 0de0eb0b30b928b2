#!/usr/bin/env bash
# Two shards on two devices (issue 13): does each shard mine at the rate it reaches alone?
#
# Shard A (shard 0) on the disk under test, shard B (shard 1) on the RAM-backed loop device of
# bench/loop-device.sh. In one run, ROUNDS times, each phase cold (page cache dropped): A alone,
# B alone, A and B together in one `pora mine` (two --file groups), each a real es-node slot (2^20
# nonces per shard, DURATION seconds). Prints each shard's mining power (and samples/s) alone and
# together, the ratio together/alone of mining power per round, then the medians.
#
# usage: bench/two-devices.sh [SHARD_A] [SHARD_B]
#        (defaults /tmp/pora-bench/shard0-8g.dat and /mnt/pora-loop/shard1-8g.dat; created when
#        missing, the loop device set up when needed; `bench/loop-device.sh down` removes it)
# env:   DURATION=12 slot seconds   ROUNDS=3   KV_ENTRIES_BITS=16 (8 GiB)
#        PORA=target/release/pora   PORA_ARGS="..." extra `pora mine` flags
set -euo pipefail
cd "$(dirname "$0")/.."
A=${1:-/tmp/pora-bench/shard0-8g.dat}
B=${2:-/mnt/pora-loop/shard1-8g.dat}
DURATION=${DURATION:-12}
ROUNDS=${ROUNDS:-3}
KV_ENTRIES_BITS=${KV_ENTRIES_BITS:-16}
PORA=${PORA:-target/release/pora}
PORA_ARGS=${PORA_ARGS:-}

[ -x "$PORA" ] || cargo build --release -p pora >&2
case "$B" in /mnt/pora-loop/*) bench/loop-device.sh up >/dev/null ;; esac
make_shard() { # path shard-index
    [ -e "$1" ] && return
    mkdir -p "$(dirname "$1")"
    echo "creating $1 (shard $2, kvEntriesBits $KV_ENTRIES_BITS) ..." >&2
    "$PORA" create "$1" --shard "$2" --kv-entries-bits "$KV_ENTRIES_BITS" --fill random --quiet
}
make_shard "$A" 0
make_shard "$B" 1

drop_cache() { sync; echo 3 > /proc/sys/vm/drop_caches; }

# Prints "shard samples_per_sec mining_power" per shard of one slot.
mine() {
    drop_cache
    local files=()
    for f in "$@"; do files+=(--file "$f"); done
    # shellcheck disable=SC2086
    "$PORA" mine "${files[@]}" --random-randao --slot "$DURATION" --json $PORA_ARGS \
        | python3 -c "
import json, sys
for line in sys.stdin:
    o = json.loads(line)
    print(o['shard'], '%.0f' % o['samplesPerSec'], '%.4f' % o['miningPower'], o['method'], o['threads'], o['depth'])"
}

results=$(mktemp)
for round in $(seq "$ROUNDS"); do
    read -r _ a_rate a_alone method threads depth < <(mine "$A")
    read -r _ b_rate b_alone _ _ _ < <(mine "$B")
    together=$(mine "$A" "$B")
    a_together=$(awk '$1 == 0 { print $3 }' <<<"$together")
    b_together=$(awk '$1 == 1 { print $3 }' <<<"$together")
    a_rate2=$(awk '$1 == 0 { print $2 }' <<<"$together")
    b_rate2=$(awk '$1 == 1 { print $2 }' <<<"$together")
    echo "round $round: mining power A alone $a_alone, together $a_together ($a_rate -> $a_rate2 samples/s) | B alone $b_alone, together $b_together ($b_rate -> $b_rate2 samples/s) [$method ${threads}x$depth]" >&2
    echo "$a_alone $a_together $b_alone $b_together" >>"$results"
done
python3 - "$results" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
ra = [t / a for a, t, _, _ in rows if a > 0]
rb = [t / b for _, _, b, t in rows if b > 0]
print("ratio_together_to_alone_shard_A", " ".join(f"{r:.3f}" for r in ra), f"median {statistics.median(ra):.3f}")
print("ratio_together_to_alone_shard_B", " ".join(f"{r:.3f}" for r in rb), f"median {statistics.median(rb):.3f}")
PY
rm -f "$results"
