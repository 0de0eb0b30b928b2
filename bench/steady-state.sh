#!/usr/bin/env bash
# steady-state.sh [FILE]: `auto` against the fixed methods over consecutive slots (BENCHMARKS 22).
# Every run drops the page cache once, then mines SLOTS consecutive 12 s slots of 1,048,576
# nonces with `pora mine --random-randao --slots N --json`; the methods run one after another,
# the order rotating per round (ROUNDS, default 1). Scenarios (SCENARIOS, default all three):
#   free   the machine's memory, 8 slots;
#   2g     inside a memory cgroup limited to 2 GiB (a shard four times the memory), 10 slots;
#   hog    inside a 10 GiB cgroup where another process takes and holds 6 GiB from slot 4
#          (it starts allocating when the third slot's record is out), 10 slots;
#   slow   the machine's memory, but the shard's disk throttled to SLOW_IOPS (default 12000)
#          reads/s for the miner (a blkio cgroup) until the third slot's record is out, 10 slots:
#          a disk that is slow when the miner starts (throttled, shared) and recovers.
# SCENARIOS defaults to "free 2g hog". The cgroups are made by this script (cgroup v1 memory
# and blkio controllers, root). Prints each run's
# per-slot mining power, method and decision time, then BENCHMARKS.md 22's checks as ratios.
# FILE defaults to $DEFAULT_SHARD (8 GiB, created when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
FILE=${1:-$DEFAULT_SHARD}
ROUNDS=${ROUNDS:-1}
SCENARIOS=${SCENARIOS:-free 2g hog}
METHODS=${METHODS:-auto uring uring-direct}
CG=/sys/fs/cgroup/memory
BLKIO=/sys/fs/cgroup/blkio
SLOW_IOPS=${SLOW_IOPS:-12000}
ensure_pora
ensure_random_shard "$FILE" "$KV_ENTRIES_BITS"
[ -w "$CG" ] || { echo "steady-state.sh: $CG is not writable (needs root and cgroup v1 memory)" >&2; exit 1; }
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
echo "results in $out" >&2

make_cgroup() { # name limit_bytes
  local dir=$CG/$1
  [ -d "$dir" ] || mkdir "$dir"
  echo 1 >"$dir/memory.force_empty" 2>/dev/null || true
  echo "$2" >"$dir/memory.limit_in_bytes"
  echo "$dir"
}

lift_after_third_slot() { # blkio_dir records_file disk: lifts the throttle once three slot
  # records are out
  (
    while [ ! -f "$2" ] || [ "$(wc -l <"$2")" -lt 3 ]; do sleep 0.05; done
    echo "$3 0" >"$1/blkio.throttle.read_iops_device"
    echo "slow: throttle lifted after slot 3" >>"$out/slow.log"
  ) >/dev/null 2>&1 &
  echo $!
}

hog() { # cgroup_dir records_file bytes: joins the cgroup, waits for the third slot's record,
  # then takes and holds the memory
  python3 - "$1" "$2" "$3" >/dev/null 2>>"$out/hog.log" <<'PY' &
import mmap, os, sys, time
open(os.path.join(sys.argv[1], "cgroup.procs"), "w").write(str(os.getpid()))
while not os.path.exists(sys.argv[2]) or sum(1 for _ in open(sys.argv[2])) < 3:
    time.sleep(0.05)
print("hog: slot 4 starts, taking %d GiB" % (int(sys.argv[3]) >> 30), file=sys.stderr, flush=True)
# private anonymous memory, as a Go heap is
size = int(sys.argv[3]); m = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
for i in range(0, size, 4096): m[i] = 1
print("hog: holding %d GiB" % (size >> 30), file=sys.stderr, flush=True)
time.sleep(3600)
PY
  echo $!
}

run() { # scenario method slots
  local scenario=$1 method=$2 slots=$3 log="$out/$1-$2-r$round.jsonl" cg="" hog_pid="" bcg=""
  evict "$FILE"
  case $scenario in
    2g) cg=$(make_cgroup pora-bench-2g $((2 << 30))) ;;
    hog) cg=$(make_cgroup pora-bench-10g $((10 << 30))); rm -f "$log"; hog_pid=$(hog "$cg" "$log" $((6 << 30))) ;;
    slow)
      [ -w "$BLKIO" ] || { echo "steady-state.sh: $BLKIO is not writable (the slow scenario needs cgroup v1 blkio)" >&2; exit 1; }
      bcg=$BLKIO/pora-bench-slow; mkdir -p "$bcg"; rm -f "$log"
      echo "$(disk_of "$FILE") $SLOW_IOPS" >"$bcg/blkio.throttle.read_iops_device"
      hog_pid=$(lift_after_third_slot "$bcg" "$log" "$(disk_of "$FILE")") ;;
  esac
  # shellcheck disable=SC2086
  (
    [ -n "$cg" ] && echo $BASHPID >"$cg/cgroup.procs"
    [ -n "$bcg" ] && echo $BASHPID >"$bcg/cgroup.procs"
    exec "$PORA" mine --file "$FILE" --method "$method" --random-randao --seed "$round" \
      --slots "$slots" --json $PORA_ARGS
  ) >"$log" 2>"$out/$1-$2-r$round.err"
  [ -n "$hog_pid" ] && kill "$hog_pid" 2>/dev/null && wait "$hog_pid" 2>/dev/null || true
  [ -z "$bcg" ] || echo "$(disk_of "$FILE") 0" >"$bcg/blkio.throttle.read_iops_device"
  python3 - "$log" "$scenario" "$method" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
cells = []
for r in rows:
    s = r.get("steering") or {}
    cells.append("%.2f%s" % (r["miningPower"], "" if r["miningPower"] < 1 else " in %.1fs" % r["elapsedSec"]))
print("%-5s %-13s %s" % (sys.argv[2], sys.argv[3], " | ".join(cells)))
for r in rows:
    s = r.get("steering")
    if s:
        print("      slot %d: %s %dx%d cached %.2f cacheable %s hit %s predicted %.2f/%.2f decide %.1f ms switch %.1f ms%s" % (
            r["slot"], r["method"], r["threads"], r["depth"], s["cachedFraction"],
            "%.2f" % s["cacheableFraction"] if s["cacheableFraction"] is not None else "?",
            "%.2f" % s["hitRatio"] if s["hitRatio"] is not None else "?",
            s["predictedMiningPower"], s["predictedSteadyMiningPower"], s["decisionMs"], s["switchMs"],
            " EXPLORING" if s["exploring"] else ""))
PY
}

slots_of() { case $1 in free) echo 8 ;; *) echo 10 ;; esac; }

for round in $(seq 1 "$ROUNDS"); do
  for scenario in $SCENARIOS; do
    # rotate the order of methods per round
    read -ra ms <<<"$METHODS"
    k=$(( (round - 1) % ${#ms[@]} ))
    order=("${ms[@]:k}" "${ms[@]:0:k}")
    for method in "${order[@]}"; do
      run "$scenario" "$method" "$(slots_of "$scenario")"
    done
  done
done | tee "$out/table.txt"

python3 - "$out" "$SCENARIOS" <<'PY'
import glob, json, os, statistics, sys
out, scenarios = sys.argv[1], sys.argv[2].split()
def power(scn, method):
    runs = []
    for f in sorted(glob.glob(os.path.join(out, "%s-%s-r*.jsonl" % (scn, method)))):
        runs.append([json.loads(l)["miningPower"] for l in open(f)])
    return runs
for scn in scenarios:
    a, u, d = power(scn, "auto"), power(scn, "uring"), power(scn, "uring-direct")
    for i, (ra, ru, rd) in enumerate(zip(a, u, d)):
        if scn == "free":
            ratios = [x / max(y, z) for x, y, z in zip(ra, ru, rd)]
            print("free  round %d: auto / best(uring, uring-direct) per slot: %s; min %.2f; auto from slot 3: %s" % (
                i + 1, " ".join("%.2f" % r for r in ratios), min(ratios), " ".join("%.2f" % x for x in ra[2:])))
        elif scn == "slow":
            ratios = [x / max(y, z) for x, y, z in zip(ra, ru, rd)]
            m = lambda r: statistics.mean(r[3:10])
            print("slow  round %d: auto / best per slot: %s; mean of slots 4-10: auto %.3f uring %.3f uring-direct %.3f; auto / best %.2f" % (
                i + 1, " ".join("%.2f" % r for r in ratios), m(ra), m(ru), m(rd), m(ra) / max(m(ru), m(rd))))
        elif scn == "2g":
            m = lambda r: statistics.mean(r[3:10])
            print("2g    round %d: mean of slots 4-10: auto %.3f uring %.3f uring-direct %.3f; auto / best %.2f" % (
                i + 1, m(ra), m(ru), m(rd), m(ra) / max(m(ru), m(rd))))
        else:
            ratios = [x / max(y, z) for x, y, z in zip(ra, ru, rd)]
            print("hog   round %d: auto / best per slot: %s; min %.2f" % (i + 1, " ".join("%.2f" % r for r in ratios), min(ratios)))
PY
