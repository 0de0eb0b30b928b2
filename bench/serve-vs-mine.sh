#!/usr/bin/env bash
# pora serve + RPC vs pora mine on the same cold shard (BENCHMARKS.md 13: serving must add < 2% to a
# slot's samples/s).
#
# Starts `pora serve` once on the shard, then runs PAIRS pairs: a cold `pora_mineSlot` over RPC
# (curl) and a cold `pora mine` slot (serve first in odd pairs, mine first in even ones), each of
# DURATION seconds over a nonce range too large to finish, with the page cache dropped before
# each slot. Both use the same --method,
# --threads and --depth (those `pora serve` chose, passed to `pora mine` explicitly). Prints
# each pair's samples/s, and the ratio serve / mine over all pairs (mean of per-pair ratios and
# ratio of the means). Run it on a quiet machine: alternating pairs cancels slow drifts, not a
# neighbour's bursts.
#
# usage: bench/serve-vs-mine.sh [SHARD_FILE]    (default /tmp/pora-bench/shard0-8g.dat)
# env:   DURATION=12         seconds per slot (es-node's slot)
#        PAIRS=6             serve/mine pairs
#        CACHE=cold          cold: page cache dropped before every slot; hot: never dropped, the
#                            shard read into the cache once (the CPU-bound case, no disk noise)
#        WARMUP=0            seconds of one unrecorded cold `pora mine` slot before the pairs
#        KV_ENTRIES_BITS=16  shard size when creating it (16 = 8 GiB with 128 KiB KVs)
#        PORA=path           pora binary (default: target/release/pora, built if missing)
#        PORA_ARGS="..."     extra flags for both (e.g. "--method io_uring --threads 2 --depth 256")
#        PORT=9645           serve port on 127.0.0.1
# Smoke test: DURATION=1 PAIRS=1 KV_ENTRIES_BITS=6 bench/serve-vs-mine.sh /tmp/x/small.dat
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
SHARD=${1:-$DEFAULT_SHARD}
DURATION=${DURATION:-12}
PAIRS=${PAIRS:-6}
WARMUP=${WARMUP:-0}
CACHE=${CACHE:-cold}
PORT=${PORT:-9645}
RANDAO=0x5eb1a2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f

for tool in curl python3; do
    command -v "$tool" >/dev/null || { echo "serve-vs-mine: $tool is needed" >&2; exit 2; }
done
ensure_pora
ensure_random_shard "$SHARD" "$KV_ENTRIES_BITS"

drop_cache() {
    if [ "$CACHE" = hot ]; then
        return
    fi
    evict "$SHARD"
}

if [ "$CACHE" = hot ]; then
    cat "$SHARD" >/dev/null
fi
LOG=$(mktemp)
drop_cache
# shellcheck disable=SC2086
"$PORA" serve --file "$SHARD" --listen "127.0.0.1:$PORT" $PORA_ARGS 2>"$LOG" &
SERVE_PID=$!
trap 'kill "$SERVE_PID" 2>/dev/null || true; rm -f "$LOG"' EXIT
for _ in $(seq 100); do
    grep -q "listening on" "$LOG" && break
    kill -0 "$SERVE_PID" 2>/dev/null || { cat "$LOG" >&2; exit 1; }
    sleep 0.1
done
URL="http://127.0.0.1:$PORT/"

rpc() {
    curl -sS --max-time $((DURATION + 30)) -H 'content-type: application/json' -d "$1" "$URL"
}

# The knobs the service chose, so `pora mine` runs with exactly the same ones.
read -r METHOD THREADS DEPTH < <(rpc '{"jsonrpc":"2.0","id":0,"method":"pora_status"}' \
    | python3 -c "import json,sys; r=json.load(sys.stdin)['result']; c=r['choice']; print(c['method'], c['threads'], c['depth'])")
echo "shard $SHARD, $METHOD $THREADS threads x depth $DEPTH, $DURATION s slots, $PAIRS pairs, $CACHE" >&2

SLOT_MS=$(python3 -c "print(int(float('$DURATION') * 1000))")
serve_slot() {
    drop_cache
    rpc "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"pora_mineSlot\",\"params\":{\"randao\":\"$RANDAO\",\"nonceStart\":0,\"nonceEnd\":\"0xffffffffffffffff\",\"slotMs\":$SLOT_MS}}" \
        | python3 -c "import json,sys; print('%.0f' % json.load(sys.stdin)['result']['shards'][0]['samplesPerSec'])"
}

mine_slot() {
    drop_cache
    "$PORA" mine --file "$SHARD" --randao "$RANDAO" --slot "$DURATION" --json \
        --nonces 0..18446744073709551615 --method "$METHOD" --threads "$THREADS" --depth "$DEPTH" \
        | python3 -c "import json,sys; print('%.0f' % json.loads(sys.stdin.readline())['samplesPerSec'])"
}

if [ "$WARMUP" -gt 0 ]; then
    echo "warm-up: one unrecorded ${WARMUP} s slot (lets a drifting cloud volume settle)" >&2
    DURATION=$WARMUP mine_slot >/dev/null
fi
RESULTS=()
for pair in $(seq "$PAIRS"); do
    # Alternate who goes first so a disk whose rate drifts during the run favours neither.
    if [ $((pair % 2)) -eq 1 ]; then
        SERVE_RATE=$(serve_slot); MINE_RATE=$(mine_slot)
    else
        MINE_RATE=$(mine_slot); SERVE_RATE=$(serve_slot)
    fi
    echo "pair $pair: serve $SERVE_RATE samples/s, mine $MINE_RATE samples/s" >&2
    RESULTS+=("$SERVE_RATE" "$MINE_RATE")
done

python3 - "${RESULTS[@]}" <<'PY'
import sys
v = [float(x) for x in sys.argv[1:]]
serve, mine = v[0::2], v[1::2]
ratios = [s / m for s, m in zip(serve, mine) if m > 0]
import statistics
print("serve/mine samples/s over %d pairs: median of pair ratios %.4f, mean %.4f (min %.4f, max %.4f); ratio of means %.4f"
      % (len(ratios), statistics.median(ratios), statistics.mean(ratios), min(ratios), max(ratios),
         statistics.mean(serve) / statistics.mean(mine)))
PY
