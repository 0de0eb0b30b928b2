#!/usr/bin/env bash
# A RAM-backed block device as an NVMe-class stand-in (BENCHMARKS 16): an ext4 file system on a loop
# device whose backing file lives in tmpfs, mounted at $MNT. Reads go through the block layer
# (O_DIRECT, io_uring, the I/O scheduler) but the "device" answers at memory speed.
#
# usage: bench/loop-device.sh up [SIZE_GIB]    (default 9: room for an 8 GiB shard)
#        bench/loop-device.sh down
# env:   MNT=/mnt/pora-loop   IMG=/dev/shm/pora-loop.img
# Needs root (losetup, mkfs, mount). Prints the mount point on `up`.
set -euo pipefail
MNT=${MNT:-/mnt/pora-loop}
IMG=${IMG:-/dev/shm/pora-loop.img}

case "${1:-}" in
up)
    size_gib=${2:-9}
    if mountpoint -q "$MNT"; then echo "$MNT"; exit 0; fi
    truncate -s "${size_gib}G" "$IMG"
    dev=$(losetup --find --show "$IMG")
    mkfs.ext4 -q -F "$dev"
    mkdir -p "$MNT"
    mount "$dev" "$MNT"
    echo "$MNT"
    ;;
down)
    if mountpoint -q "$MNT"; then
        dev=$(findmnt -n -o SOURCE "$MNT")
        umount "$MNT"
        losetup -d "$dev"
    fi
    rm -f "$IMG"
    ;;
*)
    echo "usage: $0 up [SIZE_GIB] | down" >&2
    exit 2
    ;;
esac
