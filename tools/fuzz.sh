#!/usr/bin/env bash
# Runs pora's libFuzzer targets (fuzz/fuzz_targets) for SECONDS each (default 10), one after
# another, on the committed corpora (fuzz/corpus/<target>, grown in place when --grow is given).
# Built on the stable toolchain with the coverage instrumentation cargo-fuzz uses (SanitizerCoverage
# through -Cpasses=sancov-module), overflow checks and debug assertions on; no AddressSanitizer
# (it needs nightly; the parsers fuzzed are safe Rust). A crash leaves fuzz/artifacts/<target>/crash-*
# and fails the script; each becomes a regression test. Usage: tools/fuzz.sh [SECONDS] [--grow];
# FUZZ_RUNS=N runs each target for N executions instead of SECONDS (the recorded long runs).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
grow=${2:-}
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
 -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
 -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing"
# An explicit --target keeps RUSTFLAGS off build scripts (they are not linked with libFuzzer).
host=$(rustc -vV | sed -n 's/^host: //p')
cargo build --release --manifest-path fuzz/Cargo.toml --target-dir target/fuzz --target "$host" --bins
for target in header inputs rpc ffi; do
  mkdir -p "fuzz/artifacts/$target" "fuzz/corpus/$target"
  work=$(mktemp -d)
  # The ffi target makes its tiny shard under TMPDIR once per process: a directory of its own,
  # removed with the scratch corpus.
  scratch_tmp=$(mktemp -d)
  # Without --grow, new inputs go to a scratch directory so the committed corpus stays small.
  corpus=("$work" "fuzz/corpus/$target")
  [ "$grow" = "--grow" ] && corpus=("fuzz/corpus/$target")
  limit=(-max_total_time="$secs")
  [ -n "${FUZZ_RUNS:-}" ] && limit=(-runs="$FUZZ_RUNS")
  echo "fuzz: $target for ${limit[0]#-}"
  TMPDIR="$scratch_tmp" "target/fuzz/$host/release/$target" "${limit[@]}" -print_final_stats=1 \
    -artifact_prefix="fuzz/artifacts/$target/" "${corpus[@]}" 2>&1 \
    | grep -E "^(stat::number_of_executed_units|stat::new_units_added|==[0-9]+== ERROR|SUMMARY|Done)" || true
  status=${PIPESTATUS[0]}
  rm -rf "$work" "$scratch_tmp"
  [ "$status" -eq 0 ] || { echo "fuzz: $target FAILED (artifact in fuzz/artifacts/$target)" >&2; exit 1; }
done
echo "fuzz: all targets ran clean"
