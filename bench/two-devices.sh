#!/usr/bin/env bash
# Two shards on two devices (BENCHMARKS.md 16): does each shard mine at the rate it reaches alone?
#
# Shard A (shard 0) on the disk under test, shard B (shard 1) on the RAM-backed loop device of
# bench/loop-device.sh. In one run, ROUNDS times, each phase cold (page cache dropped): A alone,
# B alone, A and B together in one `pora mine` (two --file groups), and the control: two `pora
# mine` processes at the same time, one per shard (the two shared phases first in even rounds,
# last in odd ones); each a real es-node slot (2^20 nonces per shard, DURATION seconds). Prints
# each shard's mining power (and samples/s) per phase, the ratios together/alone,
# two-processes/alone and together/two-processes per round, then the medians.
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

# Prints "shard samples_per_sec mining_power method threads depth" per shard of one slot of one
# `pora mine` over the files given (cache not dropped here).
mine_files() {
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
mine() { drop_cache; mine_files "$@"; }
# The control: two `pora mine` processes at the same time, one per shard. What one process over
# both shards should match: it shows what the machine itself (CPUs, the loop device's kernel
# threads, interrupts) leaves when both devices are busy, whatever the scheduler does.
mine_apart() {
    drop_cache
    mine_files "$A" & local pid=$!
    mine_files "$B"
    wait "$pid"
}
# Column $3 (mining power) or $2 (samples/s) of shard $1 in lines $4.
col() { awk -v s="$1" -v c="$2" '$1 == s { print $c }' <<<"$3"; }

results=$(mktemp)
for round in $(seq "$ROUNDS"); do
    # Alternate the order of the phases, so a disk that drifts during the run favours none.
    if [ $((round % 2)) -eq 0 ]; then together=$(mine "$A" "$B"); apart=$(mine_apart); fi
    read -r _ a_rate a_alone method threads depth < <(mine "$A")
    read -r _ b_rate b_alone b_method b_threads b_depth < <(mine "$B")
    if [ $((round % 2)) -eq 1 ]; then apart=$(mine_apart); together=$(mine "$A" "$B"); fi
    a_together=$(col 0 3 "$together") b_together=$(col 1 3 "$together")
    a_apart=$(col 0 3 "$apart") b_apart=$(col 1 3 "$apart")
    echo "round $round [A: $method ${threads}x$depth, B: $b_method ${b_threads}x$b_depth] mining power (samples/s): A alone $a_alone ($a_rate), together $a_together ($(col 0 2 "$together")), two processes $a_apart ($(col 0 2 "$apart")) | B alone $b_alone ($b_rate), together $b_together ($(col 1 2 "$together")), two processes $b_apart ($(col 1 2 "$apart"))" >&2
    echo "$a_alone $a_together $a_apart $b_alone $b_together $b_apart" >>"$results"
done
python3 - "$results" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
def show(name, values):
    print(name, " ".join(f"{v:.3f}" for v in values), f"median {statistics.median(values):.3f}")
for shard, (alone, together, apart) in (("A", (0, 1, 2)), ("B", (3, 4, 5))):
    show(f"ratio_together_to_alone_shard_{shard}", [r[together] / r[alone] for r in rows if r[alone] > 0])
    show(f"ratio_two_processes_to_alone_shard_{shard}", [r[apart] / r[alone] for r in rows if r[alone] > 0])
    show(f"ratio_together_to_two_processes_shard_{shard}", [r[together] / r[apart] for r in rows if r[apart] > 0])
PY
rm -f "$results"
