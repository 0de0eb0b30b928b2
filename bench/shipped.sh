#!/usr/bin/env bash
# bench/shipped.sh [DIST_DIR]: the release archives benchmarked as a miner gets them (BENCHMARKS 24).
# What ships must be what docs/BENCHMARKS.md measured; this compares the shipped binaries with the
# checkout's own release build, side by side in one run.
#
# From DIST_DIR (default dist/, written by tools/dist.sh; SHA256SUMS checked) it unpacks, into an
# empty temp folder outside the repository:
#   - the Go module archive pora-<version>[-QUICK]-go.tar.gz, and builds porago
#     (bindings/go/cmd/porago) from the unpacked module alone: PATH without any directory holding
#     cargo or rustc (checked), GOPROXY=off, a fresh GOCACHE (no link reused from another build of
#     the library); porago links the archive's lib/linux_amd64 (glibc), as es-node would;
#   - the musl archive's `pora`;
#   - the Windows zip's `pora.exe` (phase wine).
# and compares each with the checkout's `cargo build --release --locked -p pora` (and, for
# pora.exe, the checkout's `cargo build --release --locked --target x86_64-pc-windows-gnu -p pora`,
# the same workspace profile, linked with x86_64-w64-mingw32-gcc), in CARGO_TARGET_DIR (default
# target/). All builds happen before the first measurement.
#
# Phases (PHASES, default "hot cold wine"), each PAIRS rounds (default 4), the order of the
# binaries rotating per round (a drift during the run favours none):
#   hot:  a 1 GiB shard (kvEntriesBits 13) on tmpfs (HOT_DIR, default /dev/shm/pora-shipped),
#         `mine --method mmap --random-randao --required-diff 0 --nonces 0..2^64-1 --slots 6
#         --slot SLOT --json` (SLOT default 5 s; required-diff 0 and the endless nonce range make
#         every slot full); a run's rate is the median samples/s of slots 2-6 (slot 1 faults the
#         mapping in). CPU-bound: this is where a slower build shows.
#   cold: the 8 GiB shard (COLD_SHARD, default /tmp/pora-bench/shard0-8g.dat, created with the
#         checkout pora when missing), evicted before each run (bench/lib.sh evict; EVICT=fadvise
#         for only its pages), one slot of COLD_SLOT seconds (default 12, es-node's slot),
#         `--method auto`, the same flags otherwise; a run's rate is that slot's samples/s.
#   wine: the hot shard under Wine (the Wine prefix of .ci/wine-prefix.sh), the zip's pora.exe vs
#         the checkout's pora.exe, hot flags. Wine's timings say nothing about Windows speed; the
#         two builds are compared under the same Wine, nothing more.
# ALT_LIB=FILE (optional): a second libpora_ffi.a for linux_amd64 (e.g. another profile's, stripped
# as tools/dist.sh strips), linked into a second porago ("porago-alt", from a copy of the same
# unpacked module with only that library replaced) that joins the hot and cold phases.
# LOCK_FILE=PATH (optional, for a machine shared with others who build): after every build and
# before the first measurement, waits while PATH exists (someone else's benchmark), creates it,
# waits up to QUIET_WAIT seconds (default 600) until no rustc, cc1, ld or `go build` runs and the 1-minute load average
# stays below QUIET_LOAD (default 0.5) for 20 s, measures, and removes PATH on exit. The load seen
# is printed and kept in OUT/load.txt.
# Prints each run, each round's ratio shipped / checkout, and per phase and binary the median and
# range of the ratios (the issue's target: >= 0.95 each). Results and raw JSON in OUT (default a
# temp folder). Run it on a quiet machine (nothing compiling).
#
# usage: bench/shipped.sh [DIST_DIR]
# env:   ALT_LIB=FILE LOCK_FILE=PATH QUIET_LOAD=0.5 QUIET_WAIT=600 PAIRS=4 PHASES="hot cold wine" SLOT=5 COLD_SLOT=12 HOT_DIR=/dev/shm/pora-shipped
#        COLD_SHARD=/tmp/pora-bench/shard0-8g.dat EVICT=fadvise OUT=DIR
# Smoke test: PAIRS=1 SLOT=1 COLD_SLOT=1 COLD_SHARD=/tmp/x/small.dat KV_ENTRIES_BITS=6 bench/shipped.sh
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
# shellcheck source=bench/lib.sh
source bench/lib.sh
fail() {
    echo "shipped.sh: FAIL: $*" >&2
    exit 1
}
step() { echo "== shipped.sh: $*" >&2; }

DIST=${1:-dist}
PAIRS=${PAIRS:-4}
PHASES=${PHASES:-hot cold wine}
SLOT=${SLOT:-5}
COLD_SLOT=${COLD_SLOT:-12}
HOT_DIR=${HOT_DIR:-/dev/shm/pora-shipped}
HOT_BITS=13 # 8192 KVs of 128 KiB: 1 GiB
COLD_SHARD=${COLD_SHARD:-$DEFAULT_SHARD}
NONCES=0..18446744073709551615
WIN_TARGET=x86_64-pc-windows-gnu
for n in "$PAIRS" "$SLOT" "$COLD_SLOT"; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || fail "PAIRS, SLOT and COLD_SLOT must be positive integers (got '$n')"
done
for p in $PHASES; do
    case "$p" in hot | cold | wine) ;; *) fail "unknown phase '$p' in PHASES (hot, cold, wine)" ;; esac
done
want() { [[ " $PHASES " == *" $1 "* ]]; }
for tool in cargo go python3 tar sha256sum; do
    command -v "$tool" >/dev/null || fail "'$tool' not found"
done
if want wine; then
    for tool in wine winepath x86_64-w64-mingw32-gcc; do
        command -v "$tool" >/dev/null || fail "'$tool' not found (phase wine; .ci/windows.sh installs Wine and mingw), or PHASES without wine"
    done
fi
[ -d "$DIST" ] || fail "no $DIST (run tools/dist.sh first)"
DIST="$(cd "$DIST" && pwd)"
(cd "$DIST" && sha256sum -c --quiet SHA256SUMS) || fail "sha256sum -c SHA256SUMS fails in $DIST"

OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/pora-shipped.XXXXXX")}
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
case "$OUT/" in "$ROOT"/*) fail "OUT ($OUT) is inside the repository: the archives must be used from outside it" ;; esac
step "results in $OUT"

# --- unpack the archives ---
shopt -s nullglob
go_tgz=("$DIST"/pora-*-go.tar.gz)
musl_tgz=("$DIST"/pora-*-x86_64-unknown-linux-musl.tar.gz)
win_zip=("$DIST"/pora-*-"$WIN_TARGET".zip)
shopt -u nullglob
[ ${#go_tgz[@]} -eq 1 ] || fail "expected one pora-*-go.tar.gz in $DIST, found ${#go_tgz[@]}"
[ ${#musl_tgz[@]} -eq 1 ] || fail "expected one pora-*-x86_64-unknown-linux-musl.tar.gz in $DIST, found ${#musl_tgz[@]}"
[ ${#win_zip[@]} -eq 1 ] || fail "expected one pora-*-$WIN_TARGET.zip in $DIST, found ${#win_zip[@]}"
U="$OUT/unpacked"
rm -rf "$U"
mkdir -p "$U"
tar -xzf "${go_tgz[0]}" -C "$U" || fail "extracting ${go_tgz[0]} failed"
tar -xzf "${musl_tgz[0]}" -C "$U" || fail "extracting ${musl_tgz[0]} failed"
python3 -m zipfile -e "${win_zip[0]}" "$U" || fail "extracting ${win_zip[0]} failed"
GM="$(dirname "$(find "$U" -maxdepth 2 -name go.mod | head -n 1)")"
[ -f "$GM/go.mod" ] || fail "the Go module archive holds no go.mod"
MUSL_PORA="$(find "$U" -maxdepth 2 -path '*x86_64-unknown-linux-musl/pora' -type f)"
ZIP_EXE="$(find "$U" -maxdepth 2 -path "*$WIN_TARGET/pora.exe" -type f)"
[ -x "$MUSL_PORA" ] || fail "the musl archive holds no executable pora"
[ -f "$ZIP_EXE" ] || fail "the Windows zip holds no pora.exe"
{
    echo "archives: $(cd "$DIST" && ls | tr '\n' ' ')"
    echo "Go module TARGETS.txt:"
    cat "$GM/TARGETS.txt"
    grep -h '^profile:' "$U"/*/BUILDINFO.txt || true
} | tee "$OUT/archives.txt" >&2

# --- porago from the unpacked module, no Rust on PATH ---
# shellcheck source=tools/path-without-rust.sh
source "$ROOT/tools/path-without-rust.sh"
NORUST_PATH="$(path_without_rust)"
GOENV=(env PATH="$NORUST_PATH" GOTOOLCHAIN=local GOPROXY=off GOFLAGS=-mod=mod GOCACHE="$OUT/go-cache" GOPATH="$OUT/gopath")
if "${GOENV[@]}" sh -c 'command -v cargo || command -v rustc' >/dev/null; then
    fail "cargo or rustc is still on the PATH porago is built with"
fi
step "go build ./cmd/porago in $GM (PATH without cargo/rustc, fresh GOCACHE)"
rm -rf "$OUT/go-cache"
(cd "$GM" && "${GOENV[@]}" go build -o "$OUT/porago" ./cmd/porago) || fail "building porago from the unpacked Go module failed"
PORAGO="$OUT/porago"
if [ -n "${ALT_LIB:-}" ]; then
    [ -f "$ALT_LIB" ] || fail "ALT_LIB $ALT_LIB does not exist"
    rm -rf "$OUT/alt-module" "$OUT/go-cache"
    cp -r "$GM" "$OUT/alt-module"
    cp "$ALT_LIB" "$OUT/alt-module/lib/linux_amd64/libpora_ffi.a"
    step "go build ./cmd/porago with ALT_LIB $ALT_LIB as lib/linux_amd64 ($(stat -c %s "$ALT_LIB") bytes)"
    (cd "$OUT/alt-module" && "${GOENV[@]}" go build -o "$OUT/porago-alt" ./cmd/porago) || fail "building porago-alt failed"
fi

# --- the checkout's builds ---
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
step "cargo build --release --locked -p pora (the checkout's pora, target dir $TARGET_DIR)"
cargo build --release --locked -p pora >&2 || fail "cargo build --release -p pora failed"
CHECKOUT_PORA="$TARGET_DIR/release/pora"
if want wine; then
    step "cargo build --release --locked --target $WIN_TARGET -p pora (the checkout's pora.exe)"
    CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc \
        cargo build --release --locked --target "$WIN_TARGET" -p pora >&2 || fail "building the checkout's pora.exe failed"
    CHECKOUT_EXE="$TARGET_DIR/$WIN_TARGET/release/pora.exe"
    # The Wine prefix with the bcryptprimitives.dll stand-in (Rust programs need it under Wine 8).
    # shellcheck source=.ci/wine-prefix.sh
    source "$ROOT/.ci/wine-prefix.sh"
fi
{
    echo "checkout: $(git rev-parse --short=12 HEAD)$(git diff --quiet HEAD -- crates Cargo.toml Cargo.lock || echo ' (crates modified)')"
    echo "checkout pora: $("$CHECKOUT_PORA" --version | head -n 1)"
    echo "musl pora:     $("$MUSL_PORA" --version | head -n 1)"
    echo "porago:        $PORAGO"
} | tee -a "$OUT/archives.txt" >&2

# --- shards ---
if want hot || want wine; then
    HOT="$HOT_DIR/shard0-1g.dat"
    mkdir -p "$HOT_DIR"
    PORA="$CHECKOUT_PORA" ensure_random_shard "$HOT" "$HOT_BITS"
    [ "$(df --output=fstype "$HOT" | tail -n 1)" = tmpfs ] || fail "$HOT is not on tmpfs (HOT_DIR must be a tmpfs folder)"
fi
if want cold; then
    PORA="$CHECKOUT_PORA" ensure_random_shard "$COLD_SHARD" "$KV_ENTRIES_BITS"
fi

# rate FILE.jsonl FIRST: the median samplesPerSec of the JSON lines from line FIRST on.
rate() {
    python3 -c 'import json, statistics, sys
r = [json.loads(l)["samplesPerSec"] for l in open(sys.argv[1]) if l.strip()]
r = r[int(sys.argv[2]) - 1:]
assert r, "no slot reported"
print("%.0f" % statistics.median(r))' "$1" "$2"
}
# run PHASE NAME ROUND BINARY...: one measured run; prints its rate and records it.
run() {
    local phase="$1" name="$2" round="$3" json
    shift 3
    json="$OUT/$phase-$name-$round.jsonl"
    case "$phase" in
        hot | wine)
            "$@" mine --file "$RUN_FILE" --method mmap --random-randao --required-diff 0 --nonces "$NONCES" \
                --slots 6 --slot "$SLOT" --json 2>"$OUT/$phase-$name-$round.err" | tr -d '\r' >"$json" \
                || fail "$phase run $round of $name failed: $(tail -n 3 "$OUT/$phase-$name-$round.err")"
            r="$(rate "$json" 2)"
            ;;
        cold)
            evict "$COLD_SHARD" "${EVICT:-}"
            "$@" mine --file "$COLD_SHARD" --method auto --random-randao --required-diff 0 --nonces "$NONCES" \
                --slots 1 --slot "$COLD_SLOT" --json 2>"$OUT/$phase-$name-$round.err" >"$json" \
                || fail "$phase run $round of $name failed: $(tail -n 3 "$OUT/$phase-$name-$round.err")"
            r="$(rate "$json" 1)"
            ;;
    esac
    echo "$phase $round $name $r" >>"$OUT/rates.txt"
    echo "$phase round $round: $name $r samples/s" >&2
}
# phase PHASE NAME=CMD...: PAIRS rounds over the named binaries, the order rotating per round.
phase() {
    local p="$1" i k n
    shift
    local names=("$@")
    step "phase $p: $PAIRS rounds of ${names[*]}"
    for i in $(seq 1 "$PAIRS"); do
        n=${#names[@]}
        for k in $(seq 0 $((n - 1))); do
            local name="${names[$(((k + i - 1) % n))]}"
            # shellcheck disable=SC2086
            run "$p" "$name" "$i" ${CMD[$name]}
        done
    done
}
# --- a quiet machine (LOCK_FILE) ---
loadavg() { cut -d' ' -f1 /proc/loadavg; }
busy() {
    local p
    for p in rustc cc1 cc1plus ld ld.lld rust-lld; do pgrep -x "$p" >/dev/null && return 0; done
    pgrep -f '^go build|/go build ' >/dev/null
}
if [ -n "${LOCK_FILE:-}" ]; then
    while [ -e "$LOCK_FILE" ]; do
        step "waiting: $LOCK_FILE exists ($(cat "$LOCK_FILE" 2>/dev/null))"
        sleep 10
    done
    echo "bench/shipped.sh pid $$ since $(date -u +%H:%M:%S)" >"$LOCK_FILE"
    trap 'rm -f "$LOCK_FILE"' EXIT
    quiet_since="" SECONDS=0
    while :; do
        if ! busy && python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) else 1)" "$(loadavg)" "${QUIET_LOAD:-0.5}"; then
            [ -n "$quiet_since" ] || quiet_since=$SECONDS
            [ $((SECONDS - quiet_since)) -lt 20 ] || break
        else
            quiet_since=""
        fi
        [ "$SECONDS" -lt "${QUIET_WAIT:-600}" ] || { step "not quiet after ${QUIET_WAIT:-600} s (load $(loadavg)); measuring anyway, the load is recorded"; break; }
        sleep 2
    done
    waited=$SECONDS
    echo "start: load $(cat /proc/loadavg) after ${waited} s; compiling: $(busy && echo yes || echo no)" | tee "$OUT/load.txt" >&2
fi

declare -A CMD=([checkout]="$CHECKOUT_PORA" [porago]="$PORAGO" [musl]="$MUSL_PORA")
NATIVE=(checkout porago musl)
if [ -n "${ALT_LIB:-}" ]; then
    CMD[porago-alt]="$OUT/porago-alt"
    NATIVE+=(porago-alt)
fi
: >"$OUT/rates.txt"
if want hot; then
    RUN_FILE="$HOT"
    cat "$HOT" >/dev/null
    phase hot "${NATIVE[@]}"
fi
if want cold; then
    phase cold "${NATIVE[@]}"
fi
if want wine; then
    CMD[checkout-exe]="wine $CHECKOUT_EXE"
    CMD[zip-exe]="wine $ZIP_EXE"
    RUN_FILE="$(winepath -w "$HOT")"
    wine "$ZIP_EXE" --version >&2 || fail "the zip's pora.exe does not run under Wine"
    phase wine checkout-exe zip-exe
fi

[ -z "${LOCK_FILE:-}" ] || echo "end: load $(cat /proc/loadavg)" | tee -a "$OUT/load.txt" >&2
python3 - "$OUT/rates.txt" <<'PY' | tee "$OUT/summary.txt"
import collections, statistics, sys
rates = collections.defaultdict(dict)  # (phase, name) -> round -> rate
for line in open(sys.argv[1]):
    phase, rnd, name, r = line.split()
    rates[(phase, name)][int(rnd)] = float(r)
base = {"hot": "checkout", "cold": "checkout", "wine": "checkout-exe"}
for phase in ("hot", "cold", "wine"):
    b = rates.get((phase, base[phase]))
    if not b:
        continue
    print(f"{phase}: {base[phase]} median {statistics.median(b.values()):,.0f} samples/s over {len(b)} runs")
    for (p, name), r in sorted(rates.items()):
        if p != phase or name == base[phase]:
            continue
        ratios = [r[i] / b[i] for i in sorted(r) if i in b]
        med = statistics.median(ratios)
        print(f"  {name} / {base[phase]}: per round {' '.join(f'{x:.3f}' for x in ratios)}; "
              f"median {med:.3f}, range {min(ratios):.3f}-{max(ratios):.3f} "
              f"({'>= 0.95' if med >= 0.95 else 'BELOW 0.95'}); {name} median {statistics.median(r.values()):,.0f} samples/s")
PY
