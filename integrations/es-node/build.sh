#!/usr/bin/env bash
# The es-node leg of CI: pora-esnode (bindings/go/cmd/pora-esnode) applied to a tree shaped as
# es-node's (bindings/go/esnode/hook/testdata/es-node: es-node v0.2.10's paths, packages and the
# lines the hook edits, written from docs/spec/es-node.md; no es-node code), then that tree built,
# vetted and tested the way es-node's `make` builds it: go.mod and go.sum as the tool wrote them,
# no GOFLAGS=-mod=mod, an empty module cache, pora's module only from where the tool said, and
# go.mod and go.sum unchanged by the build.
#
#   1. the tool's own tests: each form of checkout (LF, CRLF, a BOM, not gofmt-clean) applied
#      and reverted byte for byte with only the hook's lines added, a write failure at each file,
#      a half-applied tree mended, go mod tidy then revert, the refusals, -n;
#   2. pora's module staged as the release's Go archive holds it (bindings/go's committed non-test
#      files and lib/), and the release's module proxy tree made from it (tools/go-proxy.py);
#   3. docs/es-node.md's recipe: `go run ./cmd/pora-esnode apply -vendor -encoder -pora-dir .`
#      inside the staged module puts the module into a copy of the tree (./pora-go); a second
#      apply must say nothing changed;
#   4. that tree as `make` builds it (GOPROXY=off, a fresh GOMODCACHE): gofmt -l (empty), go vet,
#      go build, and the tree's tests (the adapter inside es-node's worker: exactness against
#      es-node's own loop through the memory and disk caches with a finalization and a reorg, two
#      shards at once, es-node's log lines with pora on, flag off, start-up errors, the encoder
#      block) under -race, and the stand-ins' own; then, with CGO_ENABLED=0, that only
#      --miner.pora makes a build without libpora fail at start-up, and a cross go vet for
#      darwin, linux/riscv64 and freebsd; go.mod and go.sum unchanged;
#   5. `apply -cleanup-fix` and the disk cache's test of the fix (without the fix the same test
#      asserts es-node v0.2.10's bug);
#   6. revert, and the tree equal byte for byte to the original (./pora-go gone);
#   7. the released path with a plain require: `go run <module>/cmd/pora-esnode@v<version> apply`
#      through the module proxy tree (GOPROXY=file://, GONOSUMDB for pora's module, as
#      docs/es-node.md says), go.sum's lines equal to the tree's GOSUM.txt, the tree built with a
#      fresh module cache and go.sum checked (no GONOSUMDB), go.mod and go.sum unchanged; then
#      `apply -vendor` the same way (the module cache's copy into the tree) built with
#      GOPROXY=off; revert byte for byte.
#
# Needs Go (1.26 here, GOTOOLCHAIN=local), python3 and the simulated-disk library the bindings
# leg built (bindings/go/lib/sim/<goos>_<goarch>, tools/go-lib.sh --sim; built here when missing).
# Prints the go test -v lines .ci/run counts. es-node itself is not downloaded: the Go module
# proxy here does not serve it, and none of its code may enter this repository (docs/es-node.md,
# "A miner builds es-node with pora", for building the real one).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
read -r MODULE VERSION <"$ROOT/integrations/es-node/es-node.version"
# No GOFLAGS: es-node's make passes none, so go.mod and go.sum must be complete as the tool wrote
# them (the Go command's default -mod=readonly). Nothing is fetched but from the file proxy below.
export GOTOOLCHAIN=local GOPROXY=off GOWORK=off
unset GOFLAGS
export GOCACHE="${GOCACHE:-$ROOT/target/go-cache}"
MODVERSION="v$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -1)"
PORA_MODULE=github.com/pora-miner/pora/bindings/go
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
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
cp -r "$ROOT/bindings/go/esnode/hook/testdata/es-node" "$work/original"
cp -r "$work/original" "$work/tree"
tree="$work/tree"

say "2. pora's module as the release's Go archive holds it, and its module proxy tree"
stage="$work/pora-$MODVERSION-go"
while IFS= read -r f; do
    mkdir -p "$stage/$(dirname "$f")"
    cp "$ROOT/bindings/go/$f" "$stage/$f"
done < <(git -C "$ROOT/bindings/go" ls-files | grep -v '_test\.go$')
cp -r "$ROOT/bindings/go/lib" "$stage/lib"
python3 "$ROOT/tools/go-proxy.py" "$stage" "$PORA_MODULE" "$MODVERSION" "$work/goproxy" \
    || fail "tools/go-proxy.py failed"

# fresh_cache: a new, empty module cache (es-node's Docker builder starts with none).
fresh_cache() { mktemp -d "$work/gomodcache.XXXXXX"; }
# sums DIR: go.mod's and go.sum's SHA-256, to check a build changed neither.
sums() { (cd "$1" && sha256sum go.mod go.sum); }

say "3. the recipe: go run ./cmd/pora-esnode apply -vendor -encoder -pora-dir . (in the staged module)"
(cd "$stage" && GOMODCACHE="$(fresh_cache)" go run ./cmd/pora-esnode apply -vendor -encoder -pora-dir . "$tree") \
    || fail "apply -vendor failed"
[ -f "$tree/pora-go/go.mod" ] || fail "apply -vendor put no pora-go/go.mod in the tree"
again="$("$TOOL" apply -vendor -encoder -pora-dir "$stage" "$tree")" || fail "the second apply failed"
echo "$again"
case "$again" in *"nothing changed"*) ;; *) fail "the second apply did not say it changed nothing" ;; esac

cd "$tree"
say "4. as make builds it (GOPROXY=off, an empty module cache, no GOFLAGS): gofmt -l, go vet, go build, go test -race"
export GOMODCACHE
GOMODCACHE="$(fresh_cache)"
before_sums="$(sums .)"
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

[ "$(sums .)" = "$before_sums" ] || fail "the build changed go.mod or go.sum"
say "go.mod and go.sum unchanged by the build"

say "5. pora-esnode apply -cleanup-fix, and the disk cache's test of the fix"
"$TOOL" apply -cleanup-fix -vendor -pora-dir "$stage" "$tree" || fail "apply -cleanup-fix failed"
go test -tags pora_sim,pora_hooked,pora_cleanup_fix -count=1 -v ./ethstorage/downloader/ \
    || fail "the Cleanup fix's test failed"

say "6. pora-esnode revert: the tree byte for byte as before"
"$TOOL" revert "$tree" || fail "revert failed"
diff -r "$work/original" "$tree" || fail "after revert the tree differs from the original"
say "reverted: every file byte for byte as before"

say "7. the released path: go run $PORA_MODULE/cmd/pora-esnode@$MODVERSION through the module proxy tree"
cd "$work"
released() {
    GOPROXY="file://$work/goproxy" GONOSUMDB=github.com/pora-miner/pora GOMODCACHE="$1" \
        go run "$PORA_MODULE/cmd/pora-esnode@$MODVERSION" "${@:2}"
}
cp -r "$work/original" "$work/tree-require"
released "$(fresh_cache)" apply -encoder "$work/tree-require" || fail "go run ...@$MODVERSION apply failed"
grep -qxF "require $PORA_MODULE $MODVERSION" "$work/tree-require/go.mod" || fail "go.mod has no require of $MODVERSION"
while IFS= read -r l; do
    grep -qxF "$l" "$work/tree-require/go.sum" || fail "go.sum lacks GOSUM.txt's line: $l"
done <"$work/goproxy/GOSUM.txt"
say "go.sum holds GOSUM.txt's two lines"
(
    cd "$work/tree-require"
    before="$(sums .)"
    # go.sum checks the zip: no GONOSUMDB, and the checksum database is never asked.
    GOPROXY="file://$work/goproxy" GOMODCACHE="$(fresh_cache)" go build -tags pora_sim ./... \
        || fail "the tree requiring $MODVERSION does not build from the proxy tree"
    [ "$(sums .)" = "$before" ] || fail "the build changed go.mod or go.sum"
) || exit 1
released "$(fresh_cache)" revert "$work/tree-require" || fail "revert through go run failed"
diff -r "$work/original" "$work/tree-require" || fail "after revert the tree differs from the original"
say "require form: built from the proxy tree, go.mod and go.sum unchanged, reverted byte for byte"

cp -r "$work/original" "$work/tree-vendor"
released "$(fresh_cache)" apply -vendor "$work/tree-vendor" || fail "go run ...@$MODVERSION apply -vendor failed"
(
    cd "$work/tree-vendor"
    before="$(sums .)"
    GOMODCACHE="$(fresh_cache)" go build -tags pora_sim ./... || fail "the vendored tree does not build with GOPROXY=off"
    [ "$(sums .)" = "$before" ] || fail "the build changed go.mod or go.sum"
) || exit 1
"$TOOL" revert "$work/tree-vendor" || fail "revert failed"
diff -r "$work/original" "$work/tree-vendor" || fail "after revert the tree differs from the original"
say "vendored from the module cache: built with GOPROXY=off, reverted byte for byte"
say "PASS"
