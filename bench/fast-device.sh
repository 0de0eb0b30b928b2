#!/usr/bin/env bash
# fast-device.sh: several shards on one NVMe-class device, as a miner with a fast drive sets it
# up (BENCHMARKS "A fast device with several shards"). Two parts, each on its own:
#
# shards  ext4 on a RAM-backed loop device (bench/loop-device.sh), N complete shards of 2^13 KVs
#         (1 GiB each: `pora create --shard i --kv-entries-bits 13`), pora inside a memory cgroup
#         of MEM (v1 memory.limit_in_bytes where /sys/fs/cgroup/memory is writable, else v2
#         memory.max), the page cache dropped before every run. In order: `pora tune` the N
#         files (its shard count and forecast), `pora mine --profile` the tuned profile, `pora
#         mine` without a profile (auto), then each fixed method of METHODS; SLOTS slots each;
#         all of it ROUNDS times, the order reversed every other round (per slot, a run's mean).
#         Prints per run and slot the mean mining power over the shards, and the checks: tune's
#         shard count, its forecast against what mine mined, every auto slot against the best
#         fixed method of that slot.
# raw     one shard of 2^RAW_KV_BITS KVs written straight onto a second RAM-backed loop device
#         (no file system), read through the block device. PAIRS interleaved pairs of: fio's
#         best of iodepth 32/64/128 x 1/2 jobs (io_uring, O_DIRECT, 512 B random reads, fio's
#         default options otherwise) and `pora mine` with its own choices (no flags, hashing
#         included) over --nonces 0..100000000; DURATION s each. CPU per read is the process's
#         user + system time (/usr/bin/time) over the reads, for both.
#
# usage: bench/fast-device.sh [shards|raw|all]       (default all; needs root)
# env:   N=4 MEM=1G SLOTS=4 ROUNDS=2 BUDGET=60 METHODS="uring-direct uring mmap"
#        RAW_KV_BITS=16 (8 GiB) PAIRS=3 DURATION=6 OUT=dir PORA=path (target/release/pora)
#        BASE=path: raw also runs this pora binary in every pair, against the same fio best
#        (the order of the two alternating by pair), to compare two builds on one device
# Short version (a loaded machine): N=2 SLOTS=2 BUDGET=20 RAW_KV_BITS=13 PAIRS=1 DURATION=3
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
PART=${1:-all}
N=${N:-4}
MEM=${MEM:-1G}
SLOTS=${SLOTS:-4}
ROUNDS=${ROUNDS:-2}
BUDGET=${BUDGET:-60}
METHODS=${METHODS:-uring-direct uring mmap}
RAW_KV_BITS=${RAW_KV_BITS:-16}
PAIRS=${PAIRS:-3}
DURATION=${DURATION:-6}
[ "$(id -u)" = 0 ] || { echo "fast-device.sh: needs root (loop devices, mounts, cgroups, drop_caches)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "fast-device.sh: needs python3" >&2; exit 1; }
ensure_pora
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
echo "results in $out" >&2
echo "machine: $(uptime); rustc processes: $(pgrep -c rustc || true)" | tee "$out/machine.txt" >&2

drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }

# The memory cgroup pora runs in: its directory, created with limit MEM (bytes or K/M/G).
CGROUP_DIR=
make_cgroup() {
  local bytes
  bytes=$(numfmt --from=iec "$MEM")
  if [ -w /sys/fs/cgroup/memory ]; then
    CGROUP_DIR=/sys/fs/cgroup/memory/pora-fast-device
    mkdir -p "$CGROUP_DIR"
    echo "$bytes" >"$CGROUP_DIR/memory.limit_in_bytes"
  elif [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    CGROUP_DIR=/sys/fs/cgroup/pora-fast-device
    echo +memory >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
    mkdir -p "$CGROUP_DIR"
    echo "$bytes" >"$CGROUP_DIR/memory.max"
  else
    echo "fast-device.sh: no writable memory cgroup (v1 or v2)" >&2
    exit 1
  fi
  echo "memory cgroup $CGROUP_DIR, limit $MEM" >&2
}

# in_cgroup CMD...: runs CMD as a member of the memory cgroup.
in_cgroup() {
  sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CGROUP_DIR" "$@"
}

shards_part() {
  local mnt=/mnt/pora-fast-device img=/dev/shm/pora-fast-device.img files=() groups=()
  MNT=$mnt IMG=$img bash bench/loop-device.sh up $((N + 1)) >/dev/null
  for i in $(seq 0 $((N - 1))); do
    local f=$mnt/shard$i.dat
    [ -e "$f" ] || "$PORA" create "$f" --shard "$i" --kv-entries-bits 13 --fill random >&2
    files+=("$f")
    groups+=(--file "$f")
  done
  rm -f "$mnt"/*.pora-profile.toml
  make_cgroup
  drop_caches
  in_cgroup "$PORA" tune "${files[@]}" --budget "$BUDGET" --json --profile "$out/profile.toml" \
    >"$out/tune.json" 2>"$out/tune.log"
  # ROUNDS rounds of every run, the order reversed every other round: the device's speed drifts
  # by a few percent between runs, so each run's figure per slot is its mean over the rounds.
  local runs=(profile auto $METHODS) order=() round
  for round in $(seq "$ROUNDS"); do
    order=("${runs[@]}")
    if [ $((round % 2)) = 0 ]; then
      order=()
      for ((k = ${#runs[@]} - 1; k >= 0; k--)); do order+=("${runs[k]}"); done
    fi
    for run in "${order[@]}"; do
      local flags=()
      case $run in
        profile) flags=(--profile "$out/profile.toml") ;;
        auto) ;;
        *) flags=(--method "$run") ;;
      esac
      drop_caches
      echo "round $round: $run" >&2
      in_cgroup "$PORA" mine "${groups[@]}" "${flags[@]}" --random-randao --slots "$SLOTS" --json \
        >"$out/mine-$run-r$round.jsonl" 2>"$out/mine-$run-r$round.log"
    done
  done
  python3 - "$out" "$N" "$SLOTS" "$ROUNDS" "${runs[@]}" <<'PY'
import json, sys, collections
out, n, slots, rounds, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:]
tune = json.load(open(f"{out}/tune.json"))
fc = tune.get("forecast") or {}
print(f"tune: shards {tune['shards']} (given {n}); forecast {fc.get('method')} first slot "
      f"{fc.get('firstSlotMiningPower', 0):.2f}, steady {fc.get('steadyMiningPower', 0):.2f}; "
      f"knee alone {tune['predictedMiningPower']:.2f}")
per = {}
for run in runs:
    means = []
    for r in range(1, rounds + 1):
        slot_power, slot_method = collections.defaultdict(list), {}
        for line in open(f"{out}/mine-{run}-r{r}.jsonl"):
            o = json.loads(line)
            slot_power[o["slot"]].append(o["miningPower"])
            slot_method[o["slot"]] = o["method"]
        shown = [(sum(p) / len(p), slot_method[s]) for s, p in sorted(slot_power.items())]
        print(f"{run:>13} round {r}: " + "  ".join(f"{p:.2f} {m}" for p, m in shown))
        means.append(shown)
    per[run] = [(sum(r[i][0] for r in means) / rounds, means[-1][i][1]) for i in range(len(means[0]))]
    print(f"{run:>13} mean   : " + "  ".join(f"{p:.2f} {m}" for p, m in per[run]))
fixed = [r for r in runs if r not in ("profile", "auto")]
if per.get("auto") and fixed:
    worst = min(p / max(max(per[f][i][0] for f in fixed), 1e-9)
                for i, (p, _) in enumerate(per["auto"]))
    print(f"auto / best fixed, worst slot: {worst:.2f} (asked >= 0.95; means over {rounds} rounds)")
if per.get("profile"):
    first, rest = per["profile"][0][0], [p for p, _ in per["profile"][1:]]
    print(f"tune forecast / mined with the profile: first slot "
          f"{fc.get('firstSlotMiningPower', 0) / max(first, 1e-9):.2f}"
          + (f", steady {fc.get('steadyMiningPower', 0) / max(sum(rest) / len(rest), 1e-9):.2f}"
             if rest else "") + " (asked within 0.90-1.10)")
PY
  rmdir "$CGROUP_DIR" 2>/dev/null || true
  MNT=$mnt IMG=$img bash bench/loop-device.sh down
}

raw_part() {
  local img=/dev/shm/pora-fast-raw.img dev
  [ -e "$img" ] || "$PORA" create "$img" --shard 0 --kv-entries-bits "$RAW_KV_BITS" --fill random >&2
  dev=$(losetup --find --show --direct-io=on "$img" 2>/dev/null || losetup --find --show "$img")
  trap 'losetup -d "$dev"' RETURN
  local data
  data=$(python3 -c "import sys; n=$(blockdev --getsize64 "$dev")-4096; print((n//(131072+32))*131072)")
  fio_one() { # qd jobs -> "reads/s cpu_us_per_read"
    local t
    t=$(mktemp)
    /usr/bin/time -f "%U %S" -o "$t" fio --name=r --filename="$dev" --readonly --rw=randread \
      --bs=512 --direct=1 --ioengine=io_uring --iodepth="$1" --numjobs="$2" --group_reporting \
      --offset=4096 --size="$data" --time_based --runtime="$DURATION" --norandommap \
      --randrepeat=0 --output-format=json >"$t.json"
    python3 - "$t" <<'PY'
import json, sys
j = json.load(open(sys.argv[1] + ".json"))["jobs"][0]
u, s = map(float, open(sys.argv[1]).read().split()[-2:])
r = j["read"]["iops"]
print(f"{r:.0f} {(u + s) / (r * j['read']['runtime'] / 1000) * 1e6:.3f}")
PY
    rm -f "$t" "$t.json"
  }
  pora_one() { # [binary] -> "samples/s cpu_us_per_sample method threads depth"
    local t line
    t=$(mktemp)
    line=$(/usr/bin/time -f "%U %S" -o "$t" "${1:-$PORA}" mine --file "$dev" --random-randao \
      --nonces 0..100000000 --slot "$DURATION" --json | head -n 1)
    python3 - "$t" "$line" <<'PY'
import json, sys
o = json.loads(sys.argv[2])
u, s = map(float, open(sys.argv[1]).read().split()[-2:])
print(f"{o['samplesPerSec']:.0f} {(u + s) / (o['samplesPerSec'] * o['elapsedSec']) * 1e6:.3f} "
      f"{o['method']} {o['threads']} {o['depth']}")
PY
    rm -f "$t"
  }
  echo "raw: $dev, shard of 2^$RAW_KV_BITS KVs, $PAIRS pairs of $DURATION s runs" >&2
  : >"$out/raw.txt"
  for pair in $(seq "$PAIRS"); do
    local best=0 best_cpu=0 best_cfg=
    for qd in 32 64 128; do
      for jobs in 1 2; do
        drop_caches
        read -r r c < <(fio_one "$qd" "$jobs")
        echo "pair $pair fio qd $qd x $jobs: $r reads/s, $c CPU µs/read" | tee -a "$out/raw.txt" >&2
        if [ "${r%.*}" -gt "$best" ]; then best=${r%.*} best_cpu=$c best_cfg="qd $qd x $jobs"; fi
      done
    done
    # With BASE, the base binary runs beside pora against the same fio best, first in odd pairs.
    local who pair_order=pora
    [ -n "${BASE:-}" ] && { pair_order="base pora"; [ $((pair % 2)) = 0 ] && pair_order="pora base"; }
    for who in $pair_order; do
      local bin=$PORA
      [ "$who" = base ] && bin=$BASE
      drop_caches
      read -r p pc m th de < <(pora_one "$bin")
      echo "pair $pair $who ($m $th x $de): $p samples/s, $pc CPU µs/sample" | tee -a "$out/raw.txt" >&2
      python3 -c "print(f'pair $pair: $who / fio best ($best_cfg) {$p / $best:.3f}, CPU per read {$pc / $best_cpu:.3f} (asked >= 1.05 and <= 0.85)')" \
        | tee -a "$out/raw.txt"
    done
  done
}

case $PART in
  shards) shards_part ;;
  raw) raw_part ;;
  all) shards_part; raw_part ;;
  *) echo "usage: $0 [shards|raw|all]" >&2; exit 2 ;;
esac
