#!/usr/bin/env bash
# The es-node leg of CI: pora-esnode (bindings/go/cmd/pora-esnode) applied to a tree shaped as
# es-node's (bindings/go/esnode/hook/testdata/es-node: es-node v0.2.10's paths, packages and the
# lines the hook edits, written from docs/spec/es-node.md; no es-node code), then that tree built,
# vetted and tested the way a miner's es-node would be:
#
#   1. the tool's own tests: apply twice (the second changes nothing), revert byte for byte, a
#      renamed function, a missing file, an anchor gone or doubled, a set applied in part, -n;
#   2. a copy of the tree: `pora-esnode apply -encoder` (go.mod gets a require and a replace of
#      this checkout's bindings/go), then a second apply that must say nothing changed;
#   3. on the result: gofmt -l (empty), go vet, go build, and the tree's tests (the adapter inside
#      es-node's worker: exactness against es-node's own loop through the memory and disk caches
#      with a finalization and a reorg, two shards at once, es-node's log lines with pora on, flag
#      off, start-up errors, the encoder block) under -race, and the stand-ins' own (go-ethereum's
#      Keccak-256 against known answers: the tree's second Keccak, apart from pora's); then,
#      with CGO_ENABLED=0, that only --miner.pora makes a build without libpora fail at
#      start-up, and a cross go vet for darwin, linux/riscv64 and freebsd;
#   4. `apply -cleanup-fix` and the disk cache's test of the fix (without the fix the same test
#      asserts es-node v0.2.10's bug);
#   5. revert, and the tree equal byte for byte to the original.
#
# Needs Go (1.26 here, GOTOOLCHAIN=local) and the simulated-disk library the bindings leg built
# (bindings/go/lib/sim/<goos>_<goarch>, tools/go-lib.sh --sim; built here when missing). Prints
# the go test -v lines .ci/run counts. es-node itself is not downloaded: the Go module proxy here
# does not serve it, and none of its code may enter this repository (docs/es-node.md, "A miner
# builds es-node with pora", for building the real one).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
read -r MODULE VERSION <"$ROOT/integrations/es-node/es-node.version"
export GOTOOLCHAIN=local GOFLAGS=-mod=mod GOPROXY=off
export GOCACHE="${GOCACHE:-$ROOT/target/go-cache}"
say() { echo "es-node build: $*"; }
fail() { say "FAIL: $*"; exit 1; }

command -v go >/dev/null || fail "no go on PATH (Go 1.26 is preinstalled on this machine kind)"
GOOS_ARCH="$(go env GOOS)_$(go env GOARCH)"
if [ ! -f "$ROOT/bindings/go/lib/sim/$GOOS_ARCH/libpora_ffi.a" ]; then
    say "no bindings/go/lib/sim/$GOOS_ARCH/libpora_ffi.a: tools/go-lib.sh --sim"
    bash "$ROOT/tools/go-lib.sh" --sim "$(rustc -vV | sed -n 's/^host: //p')" || fail "tools/go-lib.sh --sim failed"
fi
say "the tree stands for $MODULE $VERSION (bindings/go/esnode/hook/testdata/es-node)"

cd "$ROOT/bindings/go"
say "1. the tool's tests (go test ./cmd/pora-esnode/ ./esnode/hook/)"
go test -count=1 -v ./cmd/pora-esnode/ ./esnode/hook/ || fail "pora-esnode's tests failed"
go build -o "$ROOT/target/pora-esnode" ./cmd/pora-esnode || fail "go build ./cmd/pora-esnode failed"
TOOL="$ROOT/target/pora-esnode"

work="$(mktemp -d "${TMPDIR:-/tmp}/es-node-tree.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cp -r "$ROOT/bindings/go/esnode/hook/testdata/es-node" "$work/original"
cp -r "$work/original" "$work/tree"
tree="$work/tree"

say "2. pora-esnode apply -encoder (pora's module from $ROOT/bindings/go)"
"$TOOL" apply -encoder -pora-dir "$ROOT/bindings/go" "$tree" || fail "apply failed"
again="$("$TOOL" apply -encoder -pora-dir "$ROOT/bindings/go" "$tree")" || fail "the second apply failed"
echo "$again"
case "$again" in *"nothing changed"*) ;; *) fail "the second apply did not say it changed nothing" ;; esac

cd "$tree"
say "3. gofmt -l, go vet, go build and go test -race on the hooked tree"
unformatted="$(gofmt -l .)"
[ -z "$unformatted" ] || fail "gofmt -l lists: $unformatted"
go vet -tags pora_sim ./... || fail "go vet failed"
go vet -tags pora_sim,pora_hooked ./... || fail "go vet (with the tree's tests) failed"
go build -tags pora_sim ./... || fail "go build failed"
go test -tags pora_sim,pora_hooked -race -count=1 -v ./... || fail "the hooked tree's tests failed"
# The stand-ins are modules of their own, outside the tree's ./...: vetted and tested each in its
# folder (go-ethereum's crypto holds the Keccak-256 es-node's side of the tests hashes with).
for standin in standin/go-ethereum standin/urfave-cli; do
    (cd "$standin" && go vet ./... && go test -count=1 -v ./...) || fail "the stand-in $standin's vet or tests failed"
done
# Without libpora (CGO_ENABLED=0) the hooked tree builds, and only --miner.pora fails start-up.
CGO_ENABLED=0 go vet -tags pora_hooked ./... || fail "go vet (CGO_ENABLED=0) failed"
CGO_ENABLED=0 go test -tags pora_hooked -count=1 -v -run NoLibrary ./ethstorage/node/ \
    || fail "the no-library start-up test (CGO_ENABLED=0) failed"
# es-node builds for platforms pora has no library for; with the hook it still must (the vet
# compiles the tree's tests too).
for platform in darwin/amd64 darwin/arm64 linux/riscv64 freebsd/amd64; do
    GOOS="${platform%/*}" GOARCH="${platform#*/}" CGO_ENABLED=0 go vet -tags pora_hooked ./... \
        || fail "go vet of the hooked tree for $platform (CGO_ENABLED=0) failed"
done

say "4. pora-esnode apply -cleanup-fix, and the disk cache's test of the fix"
"$TOOL" apply -cleanup-fix -pora-dir "$ROOT/bindings/go" "$tree" || fail "apply -cleanup-fix failed"
go test -tags pora_sim,pora_hooked,pora_cleanup_fix -count=1 -v ./ethstorage/downloader/ \
    || fail "the Cleanup fix's test failed"

say "5. pora-esnode revert: the tree byte for byte as before"
"$TOOL" revert "$tree" || fail "revert failed"
diff -r "$work/original" "$tree" || fail "after revert the tree differs from the original"
say "reverted: every file byte for byte as before"
say "PASS"
