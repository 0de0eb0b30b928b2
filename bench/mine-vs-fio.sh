#!/usr/bin/env bash
# pora mine vs fio on the same cold shard (docs/BENCHMARKS.md 2, the headline benchmark).
#
# Creates a random shard (8 GiB by default; skipped when the file exists), then in one run, each
# phase cold (page cache dropped): fio 4 KiB random reads (io_uring, O_DIRECT, iodepth 64) for
# DURATION seconds; `pora mine --method auto` with its default threads/depth for one slot of
# DURATION seconds over a nonce range too large to finish; fio again. Prints fio reads/s, pora
# samples/s and their ratio (pora / mean of the two fio runs).
#
# usage: bench/mine-vs-fio.sh [SHARD_FILE]      (default /tmp/pora-bench/shard0-8g.dat)
# env:   DURATION=30        seconds per phase
#        KV_ENTRIES_BITS=16 shard size when creating it (16 = 8 GiB with 128 KiB KVs)
#        FIO_DEPTH=64       fio iodepth
#        PORA=path          pora binary (default: target/release/pora, built if missing)
#        METHOD=auto        `pora mine --method`
#        PORA_ARGS="..."    extra `pora mine` flags (e.g. "--threads 4 --depth 512")
# Prints both rates and both CPU costs per read (user + system time over the reads).
# Smoke test: DURATION=2 KV_ENTRIES_BITS=6 bench/mine-vs-fio.sh /tmp/x/small.dat
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
SHARD=${1:-$DEFAULT_SHARD}
DURATION=${DURATION:-30}
FIO_DEPTH=${FIO_DEPTH:-64}
METHOD=${METHOD:-auto}

command -v fio >/dev/null || { echo "mine-vs-fio: fio is not installed" >&2; exit 2; }
command -v python3 >/dev/null || { echo "mine-vs-fio: python3 is needed to read JSON" >&2; exit 2; }
ensure_pora
ensure_random_shard "$SHARD" "$KV_ENTRIES_BITS"
# fio reads only the data region: after the 4 KiB header, 2^bits KVs of 128 KiB. Inferred from
# the file so an existing shard of any size works.
DATA_BYTES=$(python3 -c "import os,sys; n=os.path.getsize(sys.argv[1])-4096; print((n//(131072+32))*131072)" "$SHARD")

drop_cache() { evict "$SHARD"; }

run_fio() {
    drop_cache
    local engine=io_uring
    if ! fio --enghelp=io_uring >/dev/null 2>&1; then engine=libaio; echo "note: fio has no io_uring engine here, using libaio" >&2; fi
    fio --name=randread --filename="$SHARD" --readonly --rw=randread --bs=4k --direct=1 \
        --ioengine="$engine" --iodepth="$FIO_DEPTH" --offset=4096 --size="$DATA_BYTES" \
        --time_based --runtime="$DURATION" --randrepeat=0 --norandommap --output-format=json \
        | python3 -c "import json,sys; j=json.load(sys.stdin)['jobs'][0]; r=j['read']['iops']; print('%.0f %.3f' % (r, (j['usr_cpu'] + j['sys_cpu']) / 100 / r * 1e6 if r else 0))"
}

run_pora() {
    drop_cache
    local cpu line
    cpu=$(mktemp)
    # The process's user + system time (startup and hashing included) over the samples it read;
    # read once `time` has written it, after the process ended.
    # shellcheck disable=SC2086
    line=$(/usr/bin/time -f "%U %S" -o "$cpu" "$PORA" mine --file "$SHARD" --method "$METHOD" \
        --random-randao --slot "$DURATION" --nonces 0..18446744073709551615 --json $PORA_ARGS | head -n 1)
    python3 -c "import json,sys; o=json.loads(sys.argv[1]); u,s=map(float,open(sys.argv[2]).read().split()[-2:]); print('%.0f %s %s %s %.4f %.3f' % (o['samplesPerSec'], o['method'], o['threads'], o['depth'], o['miningPower'], (u+s)/(o['samplesPerSec']*o['elapsedSec'])*1e6))" "$line" "$cpu"
    rm -f "$cpu"
}

echo "shard $SHARD ($DATA_BYTES data bytes), $DURATION s per phase, cold" >&2
read -r FIO1 FIO1_CPU < <(run_fio)
echo "fio (before):  $FIO1 reads/s, $FIO1_CPU CPU µs per read" >&2
read -r PORA_RATE METHOD THREADS DEPTH POWER PORA_CPU < <(run_pora)
echo "pora mine:     $PORA_RATE samples/s ($METHOD, $THREADS threads x depth $DEPTH), $PORA_CPU CPU µs per sample" >&2
read -r FIO2 FIO2_CPU < <(run_fio)
echo "fio (after):   $FIO2 reads/s, $FIO2_CPU CPU µs per read" >&2
python3 - "$FIO1" "$FIO2" "$PORA_RATE" "$METHOD" "$THREADS" "$DEPTH" "$DURATION" "$FIO1_CPU" "$FIO2_CPU" "$PORA_CPU" <<'PY'
import sys
fio1, fio2, pora = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
method, threads, depth, duration = sys.argv[4:8]
fio_cpu = (float(sys.argv[8]) + float(sys.argv[9])) / 2
pora_cpu = float(sys.argv[10])
fio = (fio1 + fio2) / 2
print(f"fio_reads_per_sec_before {fio1:.0f}")
print(f"fio_reads_per_sec_after {fio2:.0f}")
print(f"pora_samples_per_sec {pora:.0f} (method {method}, {threads} threads x depth {depth}, {duration} s)")
print(f"ratio_pora_to_fio {pora / fio:.3f}" if fio > 0 else "ratio_pora_to_fio n/a (fio measured 0)")
print(f"cpu_us_per_read_fio {fio_cpu:.3f}")
print(f"cpu_us_per_sample_pora {pora_cpu:.3f} (hashing included)")
print(f"ratio_cpu_pora_to_fio {pora_cpu / fio_cpu:.3f}" if fio_cpu > 0 else "ratio_cpu_pora_to_fio n/a")
PY
