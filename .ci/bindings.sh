#!/usr/bin/env bash
# Bindings CI leg (called by .ci/run after the Rust tests): builds libpora_ffi and pora in
# release with the simulated disk (`tools/go-lib.sh --sim --with-cli`: the library goes to
# bindings/go/lib/sim/linux_amd64, linked with `-tags pora_sim`), checks that the Go module's copy
# of pora.h is the crate's, then runs the Go package's vet, tests (plain, -race on the concurrency
# subset, and GOEXPERIMENT=cgocheck2) and the C example through pora.h alone. Uses the machine's Go (1.26,
# GOTOOLCHAIN=local; Debian's golang-go is never installed over it). Fails loudly on any failure;
# never passes by skipping a step.
#
# `go test -v` output goes to stdout, so .ci/run can grep the `--- PASS/FAIL` lines and the
# final `ok`/`FAIL` summary.
set -euo pipefail

# shellcheck source=.ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v go >/dev/null || fail "no go on PATH (the machine ships Go 1.26; do not install golang-go)"
missing=()
command -v make >/dev/null || missing+=(make)
install_missing "${missing[@]}"
go version >&2 || fail "go does not run"
command -v cc >/dev/null || fail "no C compiler (cc) for cgo and the C example"

# No module registry is reachable, and the module needs none.
export GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local
export GOCACHE="${GOCACHE:-$ROOT/target/go-cache}"

# CI checks correctness, not speed: a release build without LTO and debug info keeps this leg
# within its time budget (bench/porago-vs-pora.sh rebuilds with the real release profile).
export CARGO_PROFILE_RELEASE_LTO=off CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
# The Go tests mine on the simulated disk through the library and compare with `pora mine
# --method sim`, so both are built for tests with the `sim` feature (a production build of the
# library leaves it out: bindings/go/README.md).
rustup component add llvm-tools >/dev/null 2>&1 || fail "rustup component add llvm-tools failed (tools/go-lib.sh strips with its llvm-objcopy)"
HOST_TARGET="$(rustc -vV | sed -n 's/^host: //p')"
step "tools/go-lib.sh --sim --with-cli (cargo build --release -p pora-ffi -p pora --features sim --target $HOST_TARGET)"
bash tools/go-lib.sh --sim --with-cli "$HOST_TARGET" || fail "release build of pora-ffi / pora failed"
export PORA_BINARY="${CARGO_TARGET_DIR:-$ROOT/target}/$HOST_TARGET/release/pora"
[ -x "$PORA_BINARY" ] || fail "no $PORA_BINARY after the build"
# The fault file system (FUSE, crates/pora-faultfs) for the Engine-under-a-failing-disk tests
# (bindings/go/faultfs_test.go); they skip, saying why, where /dev/fuse or root is missing.
step "cargo build --release -p pora-faultfs (the Go fault tests' FUSE pass-through)"
cargo build --release -p pora-faultfs --target "$HOST_TARGET" || fail "release build of pora-faultfs failed"
export PORA_FAULTFS="${CARGO_TARGET_DIR:-$ROOT/target}/$HOST_TARGET/release/pora-faultfs"
[ -x "$PORA_FAULTFS" ] || fail "no $PORA_FAULTFS after the build"

step "the Go module's include/pora.h is a link to crates/pora-ffi/include/pora.h (one header; dist.sh copies it)"
[ "$(readlink bindings/go/include/pora.h)" = ../../../crates/pora-ffi/include/pora.h ] \
    || fail "bindings/go/include/pora.h must be the link ../../../crates/pora-ffi/include/pora.h, not a copy"

step "no Go file refers to a Cargo target directory"
if grep -rn --include='*.go' -e '\.\./\.\./target' -e '#cgo.*target/' bindings/go; then
    fail "the Go package must find libpora in its own lib/ (link.go), not in a Cargo target directory"
fi

cd "$ROOT/bindings/go"
step "gofmt and go vet"
unformatted="$(gofmt -l .)"
[ -z "$unformatted" ] || fail "gofmt would reformat: $unformatted"
go vet ./... || fail "go vet found problems"
go vet -tags pora_sim ./... || fail "go vet -tags pora_sim found problems"
go build -tags pora_sim ./... || fail "go build ./... failed"

step "go test -tags pora_sim ./..."
go test -tags pora_sim -count=1 -v ./... || fail "go test failed"

step "go test -race (concurrency, cancellation, close, bad input)"
go test -tags pora_sim -count=1 -race -run 'TwoHandles|CloseDuring|BadInput|Cancel|Engine|Overlay' . || fail "go test -race failed"
# Every test of the es-node adapter, except the cache sync's timing bound (TestCacheSyncCost):
# -race makes each operation several times slower, so its sub-millisecond bounds fail there. The
# adapter inside es-node's worker (two shards at once among them) is tested under -race on the
# es-node-shaped tree by the es-node leg (integrations/es-node/build.sh).
go test -tags pora_sim -count=1 -race -skip 'CacheSyncCost' ./esnode/ || fail "go test -race ./esnode/ failed"

step "a platform without libpora still builds (cross go vet and CGO_ENABLED=0 go build)"
# Where no library links (another GOOS/GOARCH, or cgo off) the package builds its no-library
# stub (unsupported.go, internal/stubgen) and the esnode adapter refuses at New naming the
# platform. The package's own tests reach libpora's internals, so its vet covers its non-test
# files; the adapter's vet and `go test -c` compile its tests. The es-node-shaped tree with the
# hook is vetted for the same platforms by the es-node leg (integrations/es-node/build.sh).
for platform in darwin/amd64 darwin/arm64 linux/riscv64 freebsd/amd64; do
    export GOOS="${platform%/*}" GOARCH="${platform#*/}" CGO_ENABLED=0
    go build ./... || fail "CGO_ENABLED=0 go build ./... for $platform failed"
    # shellcheck disable=SC2046 # the file list is split on purpose
    go vet $(go list -f '{{join .GoFiles " "}}' .) || fail "go vet of the package for $platform failed"
    go vet ./esnode/ ./cmd/... || fail "go vet ./esnode/ ./cmd/... for $platform failed"
    go test -c -o /dev/null ./esnode/ || fail "go test -c ./esnode/ for $platform failed"
    unset GOOS GOARCH CGO_ENABLED
done
CGO_ENABLED=0 go test -count=1 -v -run NoLibrary ./esnode/ || fail "the no-library error test (CGO_ENABLED=0) failed"

# Go 1.26 refuses GODEBUG=cgocheck=2 at start-up; the full pointer checks are an experiment now.
step "GOEXPERIMENT=cgocheck2 go test"
GOEXPERIMENT=cgocheck2 go test -tags pora_sim -count=1 -run 'Vector|FindAll|BadInput|CloseDuring|TwoHandles|Engine|Overlay|Encode|Mask|FillEmpty' . \
    || fail "go test with cgocheck2 failed"

step "C example through pora.h"
cd "$ROOT/bindings/c"
make -s clean
make -s run LIB="$ROOT/bindings/go/lib/sim/linux_amd64/libpora_ffi.a" || fail "the C example failed"
make -s clean

step "PASS"
