#!/usr/bin/env bash
# Windows CI leg (called by .ci/run): cross-builds pora for x86_64-pc-windows-gnu and runs under
# Wine, through cargo's target runner: pora-core's tests (the vector Keccak kernels against the
# scalar one: on a host with AVX2 they must have run, not been skipped), the Windows I/O tests and
# the CLI tests (`pora.exe --version` must name a SIMD kernel on such a host; a cached-shard slot
# finds the same nonces with every kernel). Then the C ABI: the C example (bindings/c) and the Go
# package's tests (bindings/go, cross-compiled with cgo and mingw, `-test.v` so .ci/run counts
# their `--- PASS:` lines) and porago.exe, all linked against the cross-built libpora_ffi.a and run
# under Wine; then the es-node-shaped tree with pora's hook applied by pora-esnode, cross-built
# and its tests run under Wine. Last, compile-checks the macOS targets. Wine checks correctness only; its timings
# say nothing about Windows speed (bench/wine-keccak.sh measures the kernels, in a quiet window).
#
# Fails loudly (non-zero exit, "windows.sh: FAIL: ..." on stderr) when a package or target
# cannot be installed or any step fails; it never passes by skipping a step.
set -euo pipefail

# shellcheck source=.ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
WIN_TARGET=x86_64-pc-windows-gnu
MAC_TARGETS=(x86_64-apple-darwin aarch64-apple-darwin)

# --- packages: mingw linker and Wine 8 (Debian: gcc-mingw-w64-x86-64, wine64, wine) ---
missing=()
command -v x86_64-w64-mingw32-gcc >/dev/null || missing+=(gcc-mingw-w64-x86-64)
command -v wine >/dev/null || missing+=(wine)
command -v make >/dev/null || missing+=(make)
{ command -v wine64 >/dev/null || [ -x /usr/lib/wine/wine64 ]; } || missing+=(wine64)
install_missing "${missing[@]}"
command -v x86_64-w64-mingw32-gcc >/dev/null || fail "x86_64-w64-mingw32-gcc not found after install"
command -v wine >/dev/null || fail "wine not found after install"

# --- Rust targets ---
step "rustup target add $WIN_TARGET ${MAC_TARGETS[*]}"
rustup target add "$WIN_TARGET" "${MAC_TARGETS[@]}" || fail "rustup target add failed"
for t in "$WIN_TARGET" "${MAC_TARGETS[@]}"; do
    grep -qx "$t" <<<"$(rustup target list --installed)" || fail "Rust target $t is not installed"
done

# --- Wine prefix and the bcryptprimitives.dll stand-in (shared with bench/wine-keccak.sh) ---
# shellcheck source=.ci/wine-prefix.sh
source "$ROOT/.ci/wine-prefix.sh"

export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=wine
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc

# --- a Rust program must actually run under Wine before any test result means anything ---
step "building pora.exe"
cargo build --target "$WIN_TARGET" -p pora || fail "cross-build of pora for $WIN_TARGET failed"
version="$(wine "$TARGET_DIR/$WIN_TARGET/debug/pora.exe" --version 2>/dev/null)" \
    || fail "pora.exe does not run under Wine (status $?; 53 means bcryptprimitives.dll is missing)"
[[ "$version" == pora* ]] || fail "pora.exe --version printed '$version' under Wine"
echo "pora.exe under $(wine --version 2>/dev/null): $version" >&2

# The vector Keccak kernels are in every x86_64 build and chosen by CPUID at run time: on a host
# whose CPU has AVX2 (Wine runs the instructions natively), pora.exe must use one.
host_has() { grep -qw "$1" /proc/cpuinfo; }
kernel="$(sed -n 's/^keccak: \([^ ]*\).*/\1/p' <<<"$version")"
[ -n "$kernel" ] || fail "pora.exe --version names no Keccak kernel: $version"
if host_has avx512f; then
    [ "$kernel" = x8-avx512 ] || fail "the CPU has AVX-512F but pora.exe under Wine hashes with $kernel"
elif host_has avx2; then
    [ "$kernel" = x4-avx2 ] || fail "the CPU has AVX2 but pora.exe under Wine hashes with $kernel"
else
    echo "windows.sh: SKIP SIMD kernel check: the CPU has no AVX2 (pora.exe uses $kernel)" >&2
fi

# pora's other integration tests may use Unix-only APIs; the Windows CLI tests are windows_cli.
step "clippy for $WIN_TARGET (Windows code is not compiled on Linux)"
cargo clippy --no-deps --target "$WIN_TARGET" -p pora-io --all-targets -- -D warnings \
    || fail "clippy found problems in pora-io's Windows build"
cargo clippy --no-deps --target "$WIN_TARGET" -p pora-measure --all-targets -- -D warnings \
    || fail "clippy found problems in pora-measure's Windows build (doctor's Windows findings)"
cargo clippy --no-deps --target "$WIN_TARGET" -p pora --bins --test windows_cli --test version_cli \
    --test keccak_cli -- -D warnings || fail "clippy found problems in pora's Windows build"
cargo clippy --no-deps --target "$WIN_TARGET" -p pora-core --all-targets -- -D warnings \
    || fail "clippy found problems in pora-core's Windows build (the vector Keccak kernels)"

step "cargo test --target $WIN_TARGET -p pora-core (format, sampling, every Keccak kernel vs scalar, under Wine)"
core_log="$TARGET_DIR/windows-pora-core-tests.log"
# --nocapture: the kernel tests print `RUN: <test>: <kernel>` for each kernel they check.
cargo test --target "$WIN_TARGET" -p pora-core -- --nocapture 2>&1 | tee "$core_log" \
    || fail "pora-core tests failed under Wine"
simd=()
host_has avx2 && simd+=(x4-avx2)
host_has avx512f && simd+=(x8-avx512)
for k in "${simd[@]}"; do
    for t in every_kernel_hashes_every_single_block_length every_kernel_handles_every_batch_size_up_to_20 \
        every_kernel_matches_hash0_and_hash_step; do
        # Not -x: with --nocapture another test's `test name ... ` may precede the line.
        grep -q "RUN: $t: $k\$" "$core_log" \
            || fail "the CPU has ${k#*-} but pora-core's $t did not run the $k kernel under Wine"
    done
done
((${#simd[@]})) || echo "windows.sh: SKIP vector kernel tests: the CPU has no AVX2" >&2

# A failing disk under Wine: pora-faultfs (FUSE, on the Linux host) serves a 1 MiB file whose
# bytes [256 KiB, 320 KiB) fail with EIO; tests/windows_mapped_faults.rs maps it under Wine and
# checks that a mapped read there fails alone (Wine raises Linux's SIGBUS as an exception, which
# pora's vectored handler contains) and reads again once the schedule drops the rule.
step "pora-faultfs mount for the Windows mmap fault test"
cargo build --release -p pora-faultfs || fail "release build of pora-faultfs failed"
FAULT_DIR="$(mktemp -d)"
head -c 1048576 /dev/urandom >"$FAULT_DIR/source.bin"
mkdir "$FAULT_DIR/mnt"
printf 'eio 262144 327680\n' >"$FAULT_DIR/rules"
"$TARGET_DIR/release/pora-faultfs" "$FAULT_DIR/source.bin" "$FAULT_DIR/mnt" "$FAULT_DIR/rules" \
    >"$FAULT_DIR/mount.out" 2>"$FAULT_DIR/mount.err" &
FAULTFS_PID=$!
for _ in $(seq 50); do [ -s "$FAULT_DIR/mount.out" ] || ! kill -0 "$FAULTFS_PID" 2>/dev/null && break; sleep 0.1; done
if [ -s "$FAULT_DIR/mount.out" ]; then
    PORA_WINE_FAULT_FILE="$(winepath -w "$FAULT_DIR/mnt/source.bin")" || fail "winepath failed"
    PORA_WINE_FAULT_CONTROL="$(winepath -w "$FAULT_DIR/rules")" || fail "winepath failed"
    export PORA_WINE_FAULT_FILE PORA_WINE_FAULT_CONTROL PORA_WINE_FAULT_RANGE=262144-327680
else
    echo "windows.sh: SKIP Windows mmap fault test: pora-faultfs could not mount ($(cat "$FAULT_DIR/mount.err"))" >&2
fi
step "cargo test --target $WIN_TARGET -p pora-io (unit, conformance and Windows method tests, under Wine)"
io_log="$TARGET_DIR/windows-pora-io-tests.log"
cargo test --target "$WIN_TARGET" -p pora-io -- --nocapture 2>&1 | tee "$io_log" || fail "pora-io tests failed under Wine"
if [ -n "${PORA_WINE_FAULT_FILE:-}" ]; then
    grep -q "the mapped read failed as it should" "$io_log" \
        || fail "the Windows mmap fault test did not run against the faultfs mount"
fi
kill -TERM "$FAULTFS_PID" 2>/dev/null || true
wait "$FAULTFS_PID" 2>/dev/null || true
rm -rf "$FAULT_DIR"

step "cargo test --target $WIN_TARGET -p pora-mine --test switching (auto's switch between slots: every Windows method in turn, identical results, under Wine)"
cargo clippy --no-deps --target "$WIN_TARGET" -p pora-mine --all-targets -- -D warnings \
    || fail "clippy found problems in pora-mine's Windows build"
cargo test --target "$WIN_TARGET" -p pora-mine --test switching -- --nocapture \
    || fail "pora-mine switching tests failed under Wine"

step "cargo test --target $WIN_TARGET -p pora --test windows_cli (pora hash vectors, pora mine per method)"
cargo test --target "$WIN_TARGET" -p pora --test windows_cli -- --nocapture || fail "pora CLI tests failed under Wine"

step "cargo test --target $WIN_TARGET -p pora --test version_cli --test keccak_cli (--version; a cached-shard slot per kernel)"
cargo test --target "$WIN_TARGET" -p pora --test version_cli --test keccak_cli -- --nocapture \
    || fail "pora --version / per-kernel mining tests failed under Wine"

# Windows keeps a directory undeletable while a handle to a file in it is open: a closed session
# must have closed every handle it opened (checked after every open/mine/close cycle).
step "cargo test --target $WIN_TARGET -p pora-mine --test closes_files (a dropped session's handles are closed, under Wine)"
cargo test --target "$WIN_TARGET" -p pora-mine --test closes_files -- --nocapture \
    || fail "a dropped session left a handle open under Wine"

# --- the C ABI: libpora_ffi cross-built as a static library, the C example linked with mingw and
#     run under Wine (es-node ships a Windows build that links this library) ---
step "cargo build --target $WIN_TARGET -p pora-ffi (static library)"
cargo build --target "$WIN_TARGET" -p pora-ffi || fail "cross-build of libpora_ffi for $WIN_TARGET failed"
cargo clippy --no-deps --target "$WIN_TARGET" -p pora-ffi --all-targets -- -D warnings \
    || fail "clippy found problems in pora-ffi's Windows build"
step "C example (bindings/c) linked with mingw, run under Wine"
make -s -C "$ROOT/bindings/c" clean
make -s -C "$ROOT/bindings/c" CC=x86_64-w64-mingw32-gcc EXE=pora_example.exe \
    LIB="$TARGET_DIR/$WIN_TARGET/debug/libpora_ffi.a" \
    LDLIBS="-lws2_32 -luserenv -lntdll -lbcrypt -ladvapi32 -lkernel32" \
    || fail "linking the C example against the Windows libpora_ffi.a failed"
(cd "$ROOT/bindings/c" && wine ./pora_example.exe) || fail "the C example failed under Wine"
make -s -C "$ROOT/bindings/c" clean

# --- the Go package for windows/amd64: its tests cross-compiled with cgo and mingw against the
#     Windows libpora_ffi.a, run under Wine with -test.v (.ci/run counts the `--- PASS:` lines) ---
command -v go >/dev/null || fail "go not found (.ci/run installs it)"
export GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local
export GOCACHE="${GOCACHE:-$TARGET_DIR/go-cache}"
# The tests mine on the simulated disk and compare with `pora.exe mine --method sim`, so the
# library and pora.exe are built with the `sim` feature (tools/go-lib.sh --sim puts the library
# in bindings/go/lib/sim/windows_amd64, linked with -tags pora_sim); without LTO, as
# .ci/bindings.sh does on Linux, to keep the leg within its time.
step "tools/go-lib.sh --sim --with-cli $WIN_TARGET (for the Go tests)"
rustup component add llvm-tools >/dev/null 2>&1 || fail "rustup component add llvm-tools failed (tools/go-lib.sh strips with its llvm-objcopy)"
CARGO_PROFILE_RELEASE_LTO=off CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
    bash "$ROOT/tools/go-lib.sh" --sim --with-cli "$WIN_TARGET" \
    || fail "release cross-build of pora-ffi / pora with the sim feature failed"
GO_WIN=(env GOOS=windows GOARCH=amd64 CGO_ENABLED=1 CC=x86_64-w64-mingw32-gcc)
GO_OUT="$TARGET_DIR/go-windows"
mkdir -p "$GO_OUT"
step "Go package for windows/amd64: gofmt, go vet, test binaries and porago.exe"
(
    cd "$ROOT/bindings/go"
    unformatted="$(gofmt -l .)"
    [ -z "$unformatted" ] || fail "gofmt would reformat: $unformatted"
    "${GO_WIN[@]}" go vet -tags pora_sim ./... || fail "go vet (GOOS=windows) found problems"
    "${GO_WIN[@]}" go vet -tags wine,pora_sim . || fail "go vet (GOOS=windows, -tags wine) found problems"
    # -tags wine: wine_windows.go lets t.TempDir's cleanup work under Wine 8 (see there);
    # it reaches a switch inside Go's std, which the linker allows only with -checklinkname=0.
    "${GO_WIN[@]}" go test -c -tags wine,pora_sim -ldflags=-checklinkname=0 -o "$GO_OUT/pora_test.exe" . \
        || fail "cross-compiling the Go tests failed"
    "${GO_WIN[@]}" go test -c -o "$GO_OUT/keccak_test.exe" ./internal/keccak \
        || fail "cross-compiling the Go Keccak tests failed"
    "${GO_WIN[@]}" go build -tags pora_sim -o "$GO_OUT/porago.exe" ./cmd/porago || fail "cross-building porago.exe failed"
) || exit 1
# The tests compare with the Windows pora.exe (and porago.exe), found through these variables.
PORA_BINARY="$(winepath -w "$TARGET_DIR/$WIN_TARGET/release/pora.exe")" || fail "winepath failed"
PORAGO_BINARY="$(winepath -w "$GO_OUT/porago.exe")" || fail "winepath failed"
export PORA_BINARY PORAGO_BINARY
# TestPoragoEqualsPora builds porago with `go build`, and no Go toolchain runs under Wine; the
# Windows-only TestPoragoExeEqualsPoraExe runs the cross-built porago.exe instead. Every other
# test runs: the list comes from the binary itself, so tests added later run too.
go_tests="$(cd "$ROOT/bindings/go" && wine "$GO_OUT/pora_test.exe" -test.list '^Test' | tr -d '\r')" \
    || fail "listing the Go tests under Wine failed"
go_run="$(grep -vx 'TestPoragoEqualsPora' <<<"$go_tests" | paste -sd'|')"
[ -n "$go_run" ] || fail "the Go test binary lists no tests"
echo "windows.sh: SKIP TestPoragoEqualsPora under Wine: it runs the go toolchain, which Wine has not;" \
    "TestPoragoExeEqualsPoraExe compares porago.exe with pora.exe instead" >&2
step "Go tests under Wine ($(wc -w <<<"${go_run//|/ }") tests)"
(cd "$ROOT/bindings/go" && wine "$GO_OUT/pora_test.exe" -test.v -test.count=1 -test.timeout=20m \
    -test.run "^($go_run)\$") | tr -d '\r' || fail "the Go package's tests failed under Wine"
(cd "$ROOT/bindings/go/internal/keccak" && wine "$GO_OUT/keccak_test.exe" -test.v -test.count=1) \
    | tr -d '\r' || fail "the Go Keccak tests failed under Wine"
# -race and cgocheck2 runs stay in the Linux bindings leg (.ci/bindings.sh).

# --- es-node with pora for windows/amd64: pora-esnode applies the hook (and the encoder block) to
#     the es-node-shaped tree (bindings/go/esnode/hook/testdata/es-node), which is then vetted
#     and built for windows/amd64 with mingw, and its tests (the adapter inside es-node's worker,
#     two shards at once, es-node's log lines; the encoder block; the disk cache) run under Wine,
#     as a Windows miner's es-node.exe would carry them (docs/es-node.md, "A miner builds es-node
#     with pora") ---
step "es-node-shaped tree with pora's hook for windows/amd64: go vet, go build, its tests under Wine"
ESNODE_TREE="$GO_OUT/es-node-tree"
rm -rf "$ESNODE_TREE"
cp -r "$ROOT/bindings/go/esnode/hook/testdata/es-node" "$ESNODE_TREE"
(cd "$ROOT/bindings/go" && go run ./cmd/pora-esnode apply -encoder -pora-dir "$ROOT/bindings/go" "$ESNODE_TREE") \
    || fail "pora-esnode apply on the es-node-shaped tree failed"
(
    cd "$ESNODE_TREE"
    "${GO_WIN[@]}" go vet -tags pora_sim,pora_hooked ./... || fail "go vet (GOOS=windows) of the hooked es-node tree found problems"
    "${GO_WIN[@]}" go build -tags pora_sim ./... || fail "cross-building the hooked es-node tree failed"
    for pkg in node encoder downloader; do
        "${GO_WIN[@]}" go test -c -tags wine,pora_sim,pora_hooked -ldflags=-checklinkname=0 \
            -o "$GO_OUT/esnode-$pkg.test.exe" "./ethstorage/$pkg" \
            || fail "cross-compiling the hooked es-node tree's $pkg tests failed"
    done
    # The stand-in go-ethereum (a module of its own): its Keccak-256's known answers.
    (cd standin/go-ethereum && "${GO_WIN[@]}" go test -c -o "$GO_OUT/esnode-keccak.test.exe" ./crypto) \
        || fail "cross-compiling the es-node tree's stand-in Keccak tests failed"
) || exit 1
for pkg in node encoder downloader; do
    (cd "$ESNODE_TREE/ethstorage/$pkg" && wine "$GO_OUT/esnode-$pkg.test.exe" -test.v -test.count=1 -test.timeout=10m) \
        | tr -d '\r' || fail "the hooked es-node tree's $pkg tests failed under Wine"
done
(cd "$ESNODE_TREE/standin/go-ethereum/crypto" && wine "$GO_OUT/esnode-keccak.test.exe" -test.v -test.count=1) \
    | tr -d '\r' || fail "the es-node tree's stand-in Keccak tests failed under Wine"
step "integrations/es-node/windows-size.sh --sim: es-node.exe with pora's hook keeps .bss out of the file"
bash "$ROOT/integrations/es-node/windows-size.sh" --sim || fail "es-node.exe's .bss has file contents (or the size check failed)"

for t in "${MAC_TARGETS[@]}"; do
    step "cargo clippy --target $t --workspace (compile check of the macOS code, warnings are errors)"
    cargo clippy --target "$t" --workspace --all-targets -- -D warnings || fail "cargo clippy --target $t failed"
done

step "PASS"
