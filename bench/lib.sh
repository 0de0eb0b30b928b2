# Sourced by the bench scripts (not run alone): the defaults and the set-up several of them share.
# A script may source it from anywhere (`source "$(dirname "$0")/lib.sh"`): it sets the strict
# mode every bench script runs in and moves to the repository root, where the paths below (and
# the scripts' own) are relative to; for a script already there both are no-ops.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# The defaults they share (each can be set in the environment): the pora binary, extra flags for
# it, the size of a shard they create, and where that shard goes when no file is named.
# Whether the caller named a pora binary (a script with another default asks, see stall_bench).
PORA_GIVEN=${PORA:-}
PORA=${PORA:-target/release/pora}
PORA_ARGS=${PORA_ARGS:-}
KV_ENTRIES_BITS=${KV_ENTRIES_BITS:-16}
DEFAULT_SHARD=/tmp/pora-bench/shard0-8g.dat

# Builds $PORA (release) when it is not there yet.
ensure_pora() {
    if [ ! -x "$PORA" ]; then
        echo "building $PORA ..." >&2
        cargo build --release -p pora >&2
    fi
}

# ensure_random_shard FILE BITS: creates FILE as a random shard 0 of 2^BITS KVs unless it exists
# (a large shard takes minutes to write: reuse it across runs).
ensure_random_shard() {
    if [ ! -e "$1" ]; then
        mkdir -p "$(dirname "$1")"
        echo "creating $1 (kvEntriesBits $2, random) ..." >&2
        "$PORA" create "$1" --shard 0 --kv-entries-bits "$2" --fill random
    fi
}

# evict FILE [fadvise]: makes FILE's next reads go to the disk. As root the whole page cache is
# dropped (unless `fadvise` is asked for); otherwise the kernel is asked to forget FILE's pages
# (POSIX_FADV_DONTNEED, which works for clean pages).
evict() {
    sync -f "$1" 2>/dev/null || sync
    if [ "${2:-}" != fadvise ] && [ -w /proc/sys/vm/drop_caches ]; then
        echo 3 > /proc/sys/vm/drop_caches
    else
        python3 -c "import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED)" "$1"
    fi
}

# disk_of FILE: the whole disk under FILE as MAJ:MIN (blkio throttles disks, not partitions).
disk_of() {
    local src parent
    src=$(findmnt -nvo SOURCE --target "$1")
    parent=$(lsblk -ndo PKNAME "$src" 2>/dev/null || true)
    lsblk -ndo MAJ:MIN "${parent:+/dev/$parent}${parent:-$src}" | tr -d ' '
}

# stall_rules FILE "EIO_KVS" "SLOW_KVS": pora-faultfs rules for a shard of 128 KiB KVs after its
# 4 KiB header: EIO for reads inside each KV of EIO_KVS, answers after 8 s inside each of
# SLOW_KVS (the stalled-disk table of docs/RELIABILITY.md).
stall_rules() {
    python3 - "$@" <<'EOF'
import sys
kv, data = 131072, 4096
with open(sys.argv[1], "w") as f:
    for k in map(int, sys.argv[2].split()):
        f.write(f"eio {data + k * kv} {data + (k + 1) * kv}\n")
    for k in map(int, sys.argv[3].split()):
        f.write(f"delay {data + k * kv} {data + (k + 1) * kv} 8000\n")
EOF
}

# stall_bench NAME PROFILE BITS [OUT]: the set-up of the scripts that mine through a stalling
# pora-faultfs mount (stalled-disk.sh, stalled-stacks.sh): stops NAME unless it runs as root
# with /dev/fuse (the mount is made with mount(2)), builds pora with PROFILE (release or debug)
# and pora-faultfs (release), sets PORA (unless the caller named one) and FAULTFS, sets OUT
# (default /tmp/pora-NAME without `.sh`) and makes it, and sets SHARD to OUT/shard.dat, a random
# shard 0 of 2^BITS KVs created quietly unless it is there (the FUSE server serves it).
stall_bench() {
    [ "$(id -u)" = 0 ] || { echo "$1: FAIL: needs root (mount(2) of the FUSE server)" >&2; exit 1; }
    [ -e /dev/fuse ] || { echo "$1: FAIL: no /dev/fuse" >&2; exit 1; }
    local target="${CARGO_TARGET_DIR:-$PWD/target}" flag=()
    [ "$2" = release ] && flag=(--release)
    cargo build "${flag[@]}" -q -p pora && cargo build --release -q -p pora-faultfs
    PORA="${PORA_GIVEN:-$target/$2/pora}"
    FAULTFS="$target/release/pora-faultfs"
    OUT="${4:-/tmp/pora-${1%.sh}}"
    mkdir -p "$OUT"
    SHARD="$OUT/shard.dat"
    [ -f "$SHARD" ] || "$PORA" create "$SHARD" --shard 0 --kv-entries-bits "$3" --fill random >/dev/null
}

# mount_libfuse FAULTFS SHARD MNT RULES LOG: serves SHARD at MNT/ through `pora-faultfs --libfuse`
# in the background and waits until it is mounted (10 s at most); its pid is in $FAULTFS_PID.
mount_libfuse() {
    mkdir -p "$3"
    "$1" --libfuse "$2" "$3" "$4" >"$5" 2>&1 &
    FAULTFS_PID=$!
    for _ in $(seq 100); do [ -f "$3/$(basename "$2")" ] && return 0; sleep 0.1; done
    echo "the FUSE server did not mount: $(cat "$5")" >&2
    return 1
}
