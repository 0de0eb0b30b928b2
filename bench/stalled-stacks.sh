#!/usr/bin/env bash
# Where a slot's own thread waits while mapped reads are stuck (RELIABILITY's `mmap` cell). A 16 MiB
# shard (128 KVs) behind `pora-faultfs --libfuse` (libfuse's default loop, the kernel's page cache
# on), EIO in 8 KVs and reads answered after 8 s in 2 (reliability_stalls.rs's slow-eio shape),
# `pora mine --method $METHOD --slot 6 --slots 3`, the page cache dropped first. Prints each
# slot's record time and `elapsedSec`; writes OUT/<method>-<pid>.stacks: the main thread's kernel
# stack whenever it changes (sampled every 20 ms), and every thread's stack, counted, the first
# time the main thread waits for the address-space lock (`brk`, `lock_mm_and_find_vma`).
#
# Usage: bench/stalled-stacks.sh [OUT]   (root, /dev/fuse)
#   RUNS=6 METHOD=mmap PORA=path (default: the debug build, as the tests run it)
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
stall_bench stalled-stacks.sh debug 7 "${1:-}"
METHOD="${METHOD:-mmap}"
RUNS="${RUNS:-6}"

stall_rules "$OUT/rules.txt" "3 19 35 51 67 83 99 115" "40 90"
randao=0x$(printf '22%.0s' $(seq 32))
for run in $(seq "$RUNS"); do
    mnt="$OUT/mnt"
    mount_libfuse "$FAULTFS" "$SHARD" "$mnt" "$OUT/rules.txt" "$OUT/faultfs.log"
    fs_pid=$FAULTFS_PID
    sync
    echo 3 >/proc/sys/vm/drop_caches
    echo -n "run $run: "
    python3 - "$OUT/$METHOD-$run" "$PORA" mine --file "$mnt/shard.dat" --method "$METHOD" --find all \
        --slot 6 --slots 3 --nonces 0..20000 --on-io-error skip --randao "$randao" --json <<'EOF'
import collections, json, os, subprocess, sys, threading, time
out, args = sys.argv[1], sys.argv[2:]
t0 = time.time()
p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=open(out + ".err", "w"), text=True)
log = open(out + ".stacks", "w")
records = []
def read():
    for line in p.stdout:
        j = json.loads(line)
        records.append(f"{time.time() - t0:.2f} s: slot {j['elapsedSec']:.2f} s")
        log.write(f"{time.time() - t0:7.2f} RECORD elapsedSec {j['elapsedSec']:.2f}\n")
reader = threading.Thread(target=read, daemon=True)
reader.start()
last, dumped = None, False
while p.poll() is None:
    try:
        stack = open(f"/proc/{p.pid}/task/{p.pid}/stack").read().strip().replace("\n", " | ")
    except OSError:
        break
    if stack != last:
        log.write(f"{time.time() - t0:7.2f} {stack}\n")
        last = stack
    if not dumped and ("brk" in stack or "lock_mm_and_find_vma" in stack):
        dumped = True
        every = collections.Counter()
        for tid in os.listdir(f"/proc/{p.pid}/task"):
            try:
                every[open(f"/proc/{p.pid}/task/{tid}/stack").read().strip().replace("\n", " | ")] += 1
            except OSError:
                pass
        for stack_text, n in every.most_common():
            log.write(f"ALL {n:4d} {stack_text}\n")
    time.sleep(0.02)
p.wait()
reader.join(2)
waits = sum(1 for l in open(out + ".stacks") if not l.startswith("ALL") and ("brk" in l or "lock_mm_and_find_vma" in l))
print(" · ".join(records), f"· exit {p.returncode} · main thread seen waiting for the address-space lock {waits} times")
EOF
    kill "$fs_pid" 2>/dev/null || true
    wait "$fs_pid" 2>/dev/null || true
    umount -l "$mnt" 2>/dev/null || true
done
