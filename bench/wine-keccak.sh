#!/usr/bin/env bash
# wine-keccak.sh [FILE]: nonces/s of the Windows pora.exe, under Wine, mining a shard held in the
# page cache with each Keccak kernel the CPU runs (PORA_KECCAK=scalar, x4, x8): ROUNDS rounds
# (default 5), the kernels interleaved and their order rotated every round, so a drift of the
# machine's load spreads over all of them; each run is one slot of NONCES nonces (default
# 1,048,576, es-node's slot; it ends when every nonce is tried) with METHOD (default mmap: memory
# copies, so the slot is hashing-bound) and pora's default threads and depth unless MINE_ARGS
# says otherwise (e.g. MINE_ARGS="--threads 2 --depth 64"). Prints every run, then a table per
# kernel: median, min and max nonces/s and the median against scalar.
#
# Timings mean something only on a quiet machine (no builds running); Wine runs the kernels'
# instructions natively, so the ratios say how much the vector kernels give a Windows build on
# this CPU, not how fast Windows is.
#
# FILE defaults to target/wine-bench/shard0.dat, created once with pora.exe (KV_BITS=13: 8192
# KVs of 128 KiB, 1 GiB; read once before the runs so it is cached). pora.exe is built with the
# real release profile (LTO) into target/wine-bench, apart from CI's faster release build.
set -euo pipefail
[[ $# -le 1 ]] || { echo "usage: $0 [FILE]   (env: ROUNDS NONCES METHOD MINE_ARGS KV_BITS PORA_EXE)" >&2; exit 2; }
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROUNDS=${ROUNDS:-5} NONCES=${NONCES:-1048576} METHOD=${METHOD:-mmap} KV_BITS=${KV_BITS:-13}
read -r -a MINE_ARGS <<<"${MINE_ARGS:-}"
step() { echo "== wine-keccak.sh: $*" >&2; }
fail() {
    echo "wine-keccak.sh: FAIL: $*" >&2
    exit 1
}
for tool in wine winepath x86_64-w64-mingw32-gcc python3; do
    command -v "$tool" >/dev/null || fail "$tool not found (.ci/windows.sh installs Wine and mingw)"
done
for n in "$ROUNDS" "$NONCES" "$KV_BITS"; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || fail "ROUNDS, NONCES and KV_BITS must be positive integers (got '$n')"
done
# shellcheck source=.ci/wine-prefix.sh
source "$ROOT/.ci/wine-prefix.sh"
BENCH_DIR="$TARGET_DIR/wine-bench"
mkdir -p "$BENCH_DIR"

if [[ -n ${PORA_EXE:-} ]]; then
    EXE=$PORA_EXE
else
    step "cargo build --release --target x86_64-pc-windows-gnu -p pora (release profile, LTO)"
    CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc \
        cargo build --release --target x86_64-pc-windows-gnu -p pora --target-dir "$BENCH_DIR" \
        --manifest-path "$ROOT/Cargo.toml" || fail "building pora.exe failed"
    EXE="$BENCH_DIR/x86_64-pc-windows-gnu/release/pora.exe"
fi
[[ -f $EXE ]] || fail "no pora.exe at $EXE"
wine "$EXE" --version >&2 || fail "$EXE does not run under Wine"

FILE=${1:-$BENCH_DIR/shard0.dat}
if [[ ! -f $FILE ]]; then
    step "creating $FILE (2^$KV_BITS KVs of random bytes)"
    wine "$EXE" create "$(winepath -w "$FILE")" --shard 0 --kv-entries-bits "$KV_BITS" --fill random \
        --quiet || fail "pora.exe create failed"
fi
cat "$FILE" >/dev/null
WIN_FILE="$(winepath -w "$FILE")"

# The kernels this CPU runs: pora.exe refuses a PORA_KECCAK value naming one it cannot.
kernels=()
for k in scalar x4 x8; do
    if PORA_KECCAK=$k wine "$EXE" --version >/dev/null 2>&1; then
        kernels+=("$k")
    else
        echo "wine-keccak.sh: SKIP $k: this CPU cannot run it" >&2
    fi
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() { # kernel round
    PORA_KECCAK=$1 wine "$EXE" mine --file "$WIN_FILE" --method "$METHOD" --random-randao --seed "$2" \
        --nonces "0..$NONCES" --slot 600 "${MINE_ARGS[@]}" --json 2>/dev/null | tr -d '\r' >"$tmp/j" \
        || fail "pora.exe mine with PORA_KECCAK=$1 failed"
    python3 - "$tmp/j" "$1" "$2" <<'PY'
import json, sys
d = json.loads([l for l in open(sys.argv[1]) if l.startswith("{")][-1])
if d["noncesTried"] != d["nonceLimit"]:
    sys.exit("%s: the slot ended after %d of %d nonces" % (sys.argv[2], d["noncesTried"], d["nonceLimit"]))
print("round %s %s %.0f nonces/s (%s %dx%d)" % (sys.argv[3], sys.argv[2], d["noncesTried"] / d["elapsedSec"],
      d["method"], d["threads"], d["depth"]))
PY
}
step "$ROUNDS rounds of ${kernels[*]}, $NONCES nonces per slot, --method $METHOD ${MINE_ARGS[*]}"
for round in $(seq 1 "$ROUNDS"); do
    n=${#kernels[@]}
    for i in $(seq 0 $((n - 1))); do
        run "${kernels[$(((i + round - 1) % n))]}" "$round"
    done
done | tee "$tmp/log"
# The log's rounds (bench/runlog.py) are "round N"; each kernel's rates over them.
PYTHONPATH="$ROOT/bench${PYTHONPATH:+:$PYTHONPATH}" python3 -B - "$tmp/log" <<'PY'
import statistics, sys
from runlog import rounds
rates = {}
for r in rounds(sys.argv[1]).values():
    for kernel, rate in r.items():
        rates.setdefault(kernel, []).append(rate)
base = statistics.median(rates["scalar"]) if "scalar" in rates else None
print("%-8s %5s %14s %14s %14s %10s" % ("kernel", "runs", "median/s", "min/s", "max/s", "vs scalar"))
for kernel, r in rates.items():
    med = statistics.median(r)
    ratio = "%.2fx" % (med / base) if base else "-"
    print("%-8s %5d %14.0f %14d %14d %10s" % (kernel, len(r), med, min(r), max(r), ratio))
PY
