#!/usr/bin/env bash
# es-node's encoder through pora, per kernel: ms per KV per core of the hooked `Encode` (the
# es-node stand-in in bindings/go/esnode, BenchmarkEncoderMask: through the Go package, a new
# 128 KiB mask per call as es-node gets it) on 1 and 2 goroutines, for each kernel this CPU runs
# (ifma, avx512f, adx, portable; PORA_ENCODE_ARITH forces one per process), ROUNDS rounds with the
# kernels interleaved within each round. Prints the machine's load first, every measurement,
# then per kernel and goroutine count the min and median over the rounds. Run it on a quiet
# machine: ms/KV/core is wall time x goroutines / KVs (cpu-ms/KV, the process's CPU time per KV,
# is printed beside it).
#
# usage: bench/encoder-kernels.sh [ROUNDS]        (default 3)
# env:   KVS=40      masks per measurement
#        SIM=1       link the tests' library (bindings/go/lib/sim, `tools/go-lib.sh --sim`, as
#                    CI builds it) and do not build; default: build and link the production
#                    library with the workspace's release profile (tools/go-lib.sh)
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
ROUNDS=${1:-3}
KVS=${KVS:-40}
export GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local

command -v go >/dev/null || { echo "encoder-kernels: go is not installed (Go 1.26 from go.dev, not Debian's golang-go)" >&2; exit 2; }
tags=()
if [ "${SIM:-0}" = 1 ]; then
    tags=(-tags pora_sim)
    echo "linking the tests' library bindings/go/lib/sim (as built; not rebuilt)" >&2
else
    echo "building the production library (tools/go-lib.sh) ..." >&2
    tools/go-lib.sh >&2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd bindings/go && go test -c "${tags[@]}" -o "$work/esnode.test" ./esnode/)

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //')"
echo "load: $(uptime)"
echo "compilers running: $(pgrep -c rustc || true) rustc, $(pgrep -c -x compile || true) go compile"
echo "KVs per measurement: $KVS; rounds: $ROUNDS; library: ${tags[*]:-production}"

for round in $(seq 1 "$ROUNDS"); do
    for kernel in ifma avx512f adx portable; do
        # A kernel this CPU lacks: the benchmark prints "SKIP: ... PORA_ENCODE_ARITH ..." itself.
        (cd bindings/go/esnode && PORA_ENCODE_ARITH=$kernel "$work/esnode.test" -test.run '^$' \
            -test.bench '^BenchmarkEncoderMask$' -test.benchtime "${KVS}x" -test.v) |
            grep -E '^Benchmark|SKIP' | sed "s/^/round $round $kernel: /" | tee -a "$work/results"
    done
done
echo "load after: $(uptime)"

echo
echo "min and median over the rounds: ms per KV per core (wall x goroutines / KVs), and the process's CPU ms per KV:"
awk '/ms\/KV\/core/ {
        name = $4; sub(/^BenchmarkEncoderMask\//, "", name); sub(/-[0-9]+$/, "", name)
        for (i = 5; i <= NF; i++) {
            if ($i == "ms/KV/core") wall[name] = wall[name] " " $(i - 1)
            if ($i == "cpu-ms/KV") cpu[name] = cpu[name] " " $(i - 1)
        }
    }
    # summary LIST: "min M median D (LIST)" of the space-separated numbers.
    function summary(list,    xs, n, i, j, t) {
        n = split(list, xs, " ")
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (xs[j] + 0 < xs[i] + 0) { t = xs[i]; xs[i] = xs[j]; xs[j] = t }
        return sprintf("min %6.2f median %6.2f (%s )", xs[1], xs[int((n + 1) / 2)], list)
    }
    END {
        for (name in wall) printf "%-28s ms/KV/core %s   cpu-ms/KV %s\n", name, summary(wall[name]), summary(cpu[name])
    }' "$work/results" | sort
