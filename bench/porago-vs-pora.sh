#!/usr/bin/env bash
# porago (Go, through libpora over cgo) vs pora (Rust CLI) vs an es-node-style pure-Go sampler on
# the same cold shard (docs/BENCHMARKS.md 14). Run it on a quiet machine.
#
# In one run, PAIRS rounds, each phase cold (page cache dropped): `porago mine` and `pora mine`
# (order alternating per round, so a disk that drifts during the run favours neither), same
# flags (--method auto, one slot of DURATION seconds over a nonce range too large to finish);
# then, in the same round, the pure-Go sampler (bindings/go BenchmarkGoSampler: one shared
# *os.File, a goroutine per CPU, ReadAt of 32 bytes, Keccak in Go) for SAMPLER_NONCES nonces.
# Prints every round, porago/pora per round and overall (target >= 0.97) and porago/pure-Go
# (target >= 2.4).
#
# usage: bench/porago-vs-pora.sh [SHARD_FILE]     (default /tmp/pora-bench/shard0-8g.dat)
# env:   DURATION=30 PAIRS=3 SAMPLER_NONCES=1048576 KV_ENTRIES_BITS=16 (when creating the shard)
#        EVICT=fadvise  evict only the shard's pages (POSIX_FADV_DONTNEED) instead of dropping the
#                       whole page cache (root), e.g. on a machine shared with other work
# Smoke test: DURATION=2 PAIRS=1 SAMPLER_NONCES=4096 KV_ENTRIES_BITS=6 bench/porago-vs-pora.sh /tmp/x/small.dat
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
# shellcheck source=bench/lib.sh
source bench/lib.sh
SHARD=${1:-$DEFAULT_SHARD}
DURATION=${DURATION:-30}
PAIRS=${PAIRS:-3}
SAMPLER_NONCES=${SAMPLER_NONCES:-1048576}
# The pora this script builds (not $PORA from the environment), where cargo puts it.
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
PORA=$TARGET_DIR/release/pora
PORAGO=$TARGET_DIR/release/porago

command -v go >/dev/null || { echo "porago-vs-pora: go is not installed (Go 1.26 from go.dev, not Debian's golang-go)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "porago-vs-pora: python3 is needed to read JSON" >&2; exit 2; }
echo "building pora, libpora_ffi and porago ..." >&2
cargo build --release -p pora -p pora-ffi >&2
tools/go-lib.sh >&2 # porago links bindings/go/lib/<goos>_<goarch>, the production library
(cd bindings/go && go build -o "$PORAGO" ./cmd/porago)
ensure_random_shard "$SHARD" "$KV_ENTRIES_BITS"

drop_cache() { evict "$SHARD" "${EVICT:-}"; }

# samples/s of one cold slot through binary $1.
mine_rate() {
    drop_cache
    "$1" mine --file "$SHARD" --method auto --random-randao --slot "$DURATION" \
        --nonces 0..18446744073709551615 --json \
        | python3 -c "import json,sys; o=json.loads(sys.stdin.readline()); print('%.0f' % o['samplesPerSec'])"
}

go_rates=() rust_rates=() sampler_rates=()
for i in $(seq 1 "$PAIRS"); do
    # Alternate who goes first (porago, pora / pora, porago) so a disk whose rate drifts during
    # the run (a cloud volume warming its host cache) does not favour one side.
    if [ $((i % 2)) -eq 1 ]; then
        g=$(mine_rate "$PORAGO"); r=$(mine_rate "$PORA")
    else
        r=$(mine_rate "$PORA"); g=$(mine_rate "$PORAGO")
    fi
    go_rates+=("$g"); rust_rates+=("$r")
    drop_cache
    s=$(cd bindings/go && go test -run '^$' -bench '^BenchmarkGoSampler$' -benchtime 1x \
        -bench-shard "$SHARD" -bench-nonces "$SAMPLER_NONCES" . \
        | awk '/samples\/s/ { for (i = 1; i <= NF; i++) if ($i == "samples/s") print $(i-1) }')
    sampler_rates+=("$s")
    echo "round $i: porago $g, pora $r, pure-Go sampler $s samples/s" >&2
done
python3 - "${sampler_rates[*]}" "${go_rates[*]}" "${rust_rates[*]}" <<'PY'
import statistics, sys
sampler = [float(x) for x in sys.argv[1].split()]
go = [float(x) for x in sys.argv[2].split()]
rust = [float(x) for x in sys.argv[3].split()]
g, r, s = statistics.median(go), statistics.median(rust), statistics.median(sampler)
pair = [a / b for a, b in zip(go, rust)]
print(f"porago median {g:,.0f} samples/s, pora median {r:,.0f}, pure-Go sampler median {s:,.0f}")
print(f"porago/pora: per round {' '.join(f'{x:.3f}' for x in pair)}; median {statistics.median(pair):.3f}, ratio of means {sum(go) / sum(rust):.3f}")
print(f"porago/pure-Go: per round {' '.join(f'{a / b:.2f}' for a, b in zip(go, sampler))}; medians {g / s:.2f}x")
PY
