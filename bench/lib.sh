# Sourced by the bench scripts (not run alone), from the repository root: the defaults and the
# set-up several of them share.

# The defaults they share (each can be set in the environment): the pora binary, extra flags for
# it, the size of a shard they create, and where that shard goes when no file is named.
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
