#!/usr/bin/env bash
# bench/stalled-disk.sh: RELIABILITY's stalled-disk table on pora's own FUSE server set up as there
# (libfuse's default multithreaded loop: 10 threads each waiting inline in the request it serves,
# the kernel's page cache on; EIO in 8 KVs, reads answered after 8 s in 2 KVs): per access method,
# `pora mine --find all --slot 6 --slots 3 --nonces 0..20000 --on-io-error skip` on a 256 MiB
# shard, cache dropped before each run. Prints per slot the slot's elapsedSec / nonces tried /
# workers out of use, when pora's own exit came after its last record (the main thread inside
# exit_group, or gone: docs/spec/stalls.md, a thread the server holds cannot be killed, so the reap waits
# for the server), when the process was reaped, and the most threads it had.
#
# Usage: bench/stalled-disk.sh [OUT]     (root, /dev/fuse; builds release pora and pora-faultfs)
#   METHODS="pread uring-direct"  the methods (default: every real method that opens here)
#   PORA=path                     the pora binary to measure (default: the release build)
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
stall_bench stalled-disk.sh release 11 "${1:-}"
METHODS="${METHODS:-pread pread-shared direct mmap uring uring-direct}"

mnt="$OUT/mnt"
rules="$OUT/rules.txt"
stall_rules "$rules" "100 300 500 700 900 1100 1300 1500" "600 1600"
mount_libfuse "$FAULTFS" "$SHARD" "$mnt" "$rules" "$OUT/faultfs.log" || { echo "stalled-disk.sh: FAIL" >&2; exit 1; }
fs_pid=$FAULTFS_PID
trap 'kill $fs_pid 2>/dev/null; wait $fs_pid 2>/dev/null || true' EXIT

randao=0x$(printf '11%.0s' $(seq 32))
echo "| method | per slot: elapsedSec / nonces tried / workers out of use | pora's exit after its last record | reaped after | most threads |"
echo "|---|---|---|---|---|"
for m in $METHODS; do
    sync
    echo 3 >/proc/sys/vm/drop_caches
    python3 - "$OUT/$m" "$PORA" mine --file "$mnt/shard.dat" --method "$m" --find all --slot 6 \
        --slots 3 --nonces 0..20000 --on-io-error skip --randao "$randao" --json <<'EOF'
import json, subprocess, sys, threading, time
out, args = sys.argv[1], sys.argv[2:]
exit_group = {"x86_64": "231", "aarch64": "94"}.get(__import__("platform").machine(), "")
started = time.time()
p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=open(out + ".err", "w"), text=True)
lines, stamps = [], []
def read():
    for line in p.stdout:
        lines.append(json.loads(line)); stamps.append(time.time())
reader = threading.Thread(target=read, daemon=True); reader.start()
def exited():
    try:
        state = open(f"/proc/{p.pid}/stat").read().rsplit(") ", 1)[1][0]
        call = open(f"/proc/{p.pid}/syscall").read().split()[0]
    except (OSError, IndexError):
        return True
    return state == "Z" or call == exit_group
threads = 0
while p.poll() is None and not exited():
    try:
        threads = max(threads, int([l for l in open(f"/proc/{p.pid}/status") if l.startswith("Threads:")][0].split()[1]))
    except (OSError, IndexError):
        pass
    time.sleep(0.002)
exit_at = time.time()
p.wait(); reaped = time.time(); reader.join(2)
last = stamps[-1] if stamps else started
slots = " · ".join(f"{l['elapsedSec']:.2f} s / {l['noncesTried']} / {l['stuckBackends']}" for l in lines)
print(f"| {args[args.index('--method') + 1]} | {slots} | {exit_at - last:+.2f} s | {reaped - last:.1f} s | {threads} |")
EOF
done
