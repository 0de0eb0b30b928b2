#!/usr/bin/env bash
# compare-fio.sh FILE: runs fio and `pora bench` side by side on FILE with the same access method,
# 4 KiB random reads, at 1, 32 and 128 reads in flight, each run cold, and prints a table of fio
# IOPS, pora IOPS, their ratio and both CPU% (percent of one core, user + system).
#
# Method mapping (pora -> fio). "depth" is the number of reads in flight in total:
#   pread        -> ioengine=psync            numjobs=depth (pora: --threads depth --depth 1)
#   direct       -> ioengine=psync direct=1   numjobs=depth (pora: --threads depth --depth 1)
#   mmap         -> ioengine=mmap             numjobs=depth (pora: --threads depth --depth 1)
#   uring        -> ioengine=io_uring direct=0 iodepth=depth (pora: --threads 1 --depth depth)
#   uring-direct -> ioengine=io_uring direct=1 iodepth=depth (pora: --threads 1 --depth depth)
# fio runs its jobs as threads (--thread) like pora. Both read the whole file rounded down to
# 4 KiB at uniformly random 4 KiB-aligned offsets. Each pair alternates which tool goes first.
# Cold: before every run the page cache is dropped (echo 1 > /proc/sys/vm/drop_caches when root),
# fio runs with invalidate=1 and pora with --cold (POSIX_FADV_DONTNEED, checked with mincore).
# If pora cannot read 4 KiB blocks with a method (pread reads exactly one 32-byte sample unless
# the backend supports --block-size), pora runs with its natural block and the table says so:
# on a cold cache the kernel still reads one page per read.
#
# Environment: DURATION (seconds per run, default 10), PAIRS (fio/pora pairs per method and
# depth, default 1; with more, the medians of pora/fio are printed too), METHODS (default
# "pread direct mmap uring uring-direct"), DEPTHS (default "1 32 128"), PORA (the pora binary,
# default target/release/pora of this repository), FIO (default fio), FIO_EXTRA (more fio flags).
# Dependencies: bash, python3, fio.

set -euo pipefail

usage() { echo "usage: $0 FILE   (env: DURATION PAIRS METHODS DEPTHS PORA FIO FIO_EXTRA)" >&2; exit 2; }
[[ $# -eq 1 ]] || usage
FILE=$1
[[ -f $FILE ]] || { echo "compare-fio: $FILE is not a regular file" >&2; exit 2; }

DURATION=${DURATION:-10}
PAIRS=${PAIRS:-1}
METHODS=${METHODS:-"pread direct mmap uring uring-direct"}
DEPTHS=${DEPTHS:-"1 32 128"}
FIO=${FIO:-fio}
FIO_EXTRA=${FIO_EXTRA:-}
REPO=$(cd "$(dirname "$0")/.." && pwd)
PORA=${PORA:-$REPO/target/release/pora}
BS=4096

command -v "$FIO" >/dev/null || { echo "compare-fio: fio not found (apt install fio)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "compare-fio: python3 not found" >&2; exit 2; }
[[ -x $PORA ]] || { echo "compare-fio: $PORA not found: cargo build --release -p pora, or set PORA" >&2; exit 2; }

FILE_LEN=$(stat -c %s "$FILE")
SIZE=$(( FILE_LEN / BS * BS ))
(( SIZE >= BS )) || { echo "compare-fio: $FILE is smaller than $BS bytes" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

drop_caches() {
    if [[ -w /proc/sys/vm/drop_caches ]]; then
        sync
        echo 1 > /proc/sys/vm/drop_caches 2>/dev/null || true
    fi
}

# fio_args METHOD DEPTH: fio's engine flags for a pora method (empty when none matches).
fio_args() {
    case $1 in
        pread)        echo "--ioengine=psync --direct=0 --iodepth=1 --numjobs=$2" ;;
        direct)       echo "--ioengine=psync --direct=1 --iodepth=1 --numjobs=$2" ;;
        mmap)         echo "--ioengine=mmap --direct=0 --iodepth=1 --numjobs=$2" ;;
        uring)        echo "--ioengine=io_uring --direct=0 --iodepth=$2 --iodepth_batch_complete_max=$2 --numjobs=1" ;;
        uring-direct) echo "--ioengine=io_uring --direct=1 --iodepth=$2 --iodepth_batch_complete_max=$2 --numjobs=1" ;;
        *)            echo "" ;;
    esac
}

# pora_shape METHOD DEPTH: pora's --threads/--depth for the same number of reads in flight.
pora_shape() {
    case $1 in
        uring|uring-direct) echo "--threads 1 --depth $2" ;;
        *)                  echo "--threads $2 --depth 1" ;;
    esac
}

# run_fio METHOD DEPTH OUT: one cold fio run; prints "IOPS CPU%" into OUT.
run_fio() {
    drop_caches
    # shellcheck disable=SC2046,SC2086
    "$FIO" --name=pora-compare --filename="$FILE" --readonly --rw=randread --bs=$BS \
        --size="$SIZE" --norandommap --randrepeat=0 --thread --invalidate=1 \
        --time_based --runtime="$DURATION" --output-format=json --output="$WORK/fio.json" \
        $(fio_args "$1" "$2") $FIO_EXTRA >"$WORK/fio.log" 2>&1 || {
        echo "compare-fio: fio failed for $1 depth $2:" >&2; cat "$WORK/fio.log" >&2; echo "? ?" >"$3"; return; }
    # Per-job CPU% is of that job's own runtime, so the sum is percent of one core.
    python3 - "$WORK/fio.json" >"$3" <<'PY'
import json, sys
jobs = json.load(open(sys.argv[1]))["jobs"]
iops = sum(j["read"]["iops"] for j in jobs)
cpu = sum(j["usr_cpu"] + j["sys_cpu"] for j in jobs)
print(f"{iops:.0f} {cpu:.1f}")
PY
}

# run_pora METHOD DEPTH BLOCK OUT: one cold pora run; prints "IOPS CPU%" into OUT.
run_pora() {
    drop_caches
    # shellcheck disable=SC2046
    "$PORA" bench "$FILE" --method "$1" $(pora_shape "$1" "$2") --block-size "$3" \
        --range "0..$SIZE" --duration "$DURATION" --cold --json >"$WORK/pora.json" 2>"$WORK/pora.log" || {
        echo "compare-fio: pora failed for $1 depth $2:" >&2; cat "$WORK/pora.log" >&2; echo "? ?" >"$4"; return; }
    python3 - "$WORK/pora.json" >"$4" <<'PY'
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])
cpu = r["cpuPercent"]
print(f"{r['iops']:.0f} {'?' if cpu is None else f'{cpu:.1f}'}")
PY
}

# pora_block METHOD: the --block-size pora can use for the method, or "" (reason in $WORK/reason).
pora_block() {
    local block
    for block in $BS natural; do
        if "$PORA" bench "$FILE" --method "$1" --block-size "$block" --range "0..$SIZE" \
            --duration 0.05 --json >/dev/null 2>"$WORK/probe.log"; then
            echo "$block"; return
        fi
        # The first failure (with bs=4096) says why; keep it.
        [[ $block == natural ]] || { grep -m1 -E "^(SKIP|pora: error)" "$WORK/probe.log" | sed -E "s/^(SKIP [^:]*|pora: error): //" || true; } >"$WORK/reason"
    done
    echo ""
}

echo "compare-fio: $FILE ($SIZE bytes read), bs=$BS, $DURATION s per run, cold, pora=$PORA"
[[ -w /proc/sys/vm/drop_caches ]] || echo "compare-fio: not root: page cache dropped per file only (fio invalidate=1, pora --cold)"
ROWS=()
pair=0
for rep in $(seq "$PAIRS"); do
for method in $METHODS; do
    if [[ -z $(fio_args "$method" 1) ]]; then
        echo "SKIP $method: no matching fio engine"; continue
    fi
    block=$(pora_block "$method")
    if [[ -z $block ]]; then
        echo "SKIP $method: not available in pora ($(cat "$WORK/reason"))"; continue
    fi
    for depth in $DEPTHS; do
        pair=$((pair + 1))
        echo "  running $method depth $depth ..." >&2
        if (( pair % 2 )); then
            run_fio "$method" "$depth" "$WORK/f"; run_pora "$method" "$depth" "$block" "$WORK/p"
        else
            run_pora "$method" "$depth" "$block" "$WORK/p"; run_fio "$method" "$depth" "$WORK/f"
        fi
        read -r fio_iops fio_cpu <"$WORK/f"
        read -r pora_iops pora_cpu <"$WORK/p"
        bs_note=$([[ $block == natural ]] && echo "natural" || echo "$block")
        ROWS+=("$method $depth $fio_iops $pora_iops $fio_cpu $pora_cpu $bs_note")
    done
done
done

printf '%s\n' "${ROWS[@]}" | python3 -c '
import statistics, sys
ratios = {}
def num(s):
    try: return float(s)
    except ValueError: return None
row = "{:<13} {:>5} {:>10} {:>10} {:>6} {:>9} {:>9} {:>8}"
print(row.format("method", "depth", "fio IOPS", "pora IOPS", "ratio", "fio CPU%", "pora CPU%", "pora bs"))
for line in sys.stdin:
    f = line.split()
    if len(f) != 7:
        continue
    fio, pora = num(f[2]), num(f[3])
    ratio = "{:.2f}".format(pora / fio) if fio and pora is not None else "?"
    print(row.format(f[0], f[1], f[2], f[3], ratio, f[4], f[5], f[6]))
    if fio and pora is not None:
        ratios.setdefault((f[0], f[1]), []).append(pora / fio)
if any(len(r) > 1 for r in ratios.values()):
    print("median pora/fio over the pairs:")
    for (method, depth), r in ratios.items():
        print("  {:<13} depth {:>4}: {:.2f}  ({})".format(method, depth, statistics.median(r), " ".join("{:.2f}".format(x) for x in r)))
'
