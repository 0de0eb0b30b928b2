#!/usr/bin/env bash
# tools/go-test.sh: the Go package's tests from a checkout, every one this machine can run. It
# builds what they need into the Cargo target directory go-lib.sh uses ($CARGO_TARGET_DIR, else
# target/ of the checkout) and names it to the tests, so the paths are right wherever that is:
#
#   tools/go-lib.sh --sim --with-cli            lib/sim/<goos>_<goarch>/libpora_ffi.a and `pora`
#   cargo build --release -p pora-faultfs        the FUSE pass-through of the EIO tests
#   cd bindings/go && PORA_BINARY=... PORA_FAULTFS=... go test -tags pora_sim -count=1 -v ./...
#
# then prints every test's "SKIP: <why>" line (a missing /dev/fuse, root or platform feature) and
# the counts, so what did not run is said, not hidden in the log.
#
# Usage: tools/go-test.sh [go test arguments, e.g. -run Engine]     (needs what go-lib.sh needs,
# Go 1.19 or newer, and FUSE with root for the two EIO tests)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

fail() {
    echo "go-test.sh: FAIL: $*" >&2
    exit 1
}

command -v go >/dev/null || fail "no go on PATH"
HOST="$(rustc -vV | sed -n 's/^host: //p')" || fail "rustc -vV failed"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
mkdir -p "$TARGET_DIR"
TARGET_DIR="$(cd "$TARGET_DIR" && pwd)"

bash tools/go-lib.sh --sim --with-cli "$HOST" || fail "tools/go-lib.sh --sim --with-cli failed"
echo "go-test.sh: cargo build --release --locked -p pora-faultfs --target $HOST" >&2
CARGO_TARGET_DIR="$TARGET_DIR" cargo build --release --locked -p pora-faultfs --target "$HOST" \
    || fail "cargo build -p pora-faultfs failed"

export PORA_BINARY="$TARGET_DIR/$HOST/release/pora" PORA_FAULTFS="$TARGET_DIR/$HOST/release/pora-faultfs"
[ -x "$PORA_BINARY" ] || fail "no $PORA_BINARY after the build"
[ -x "$PORA_FAULTFS" ] || fail "no $PORA_FAULTFS after the build"

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
cd "$ROOT/bindings/go"
echo "go-test.sh: PORA_BINARY=$PORA_BINARY PORA_FAULTFS=$PORA_FAULTFS go test -tags pora_sim -count=1 -v $* ./..." >&2
status=0
GOFLAGS="${GOFLAGS:--mod=mod}" go test -tags pora_sim -count=1 -v "$@" ./... | tee "$log" || status=$?

echo "go-test.sh: what did not run, and why:" >&2
grep -E 'SKIP:' "$log" | sed 's/^[[:space:]]*/  /' >&2 || echo "  nothing" >&2
echo "go-test.sh: $(grep -c -- '--- PASS' "$log" || true) passed, $(grep -c -- '--- FAIL' "$log" || true) failed, $(grep -c -- '--- SKIP' "$log" || true) skipped (t.Skip); exit $status" >&2
exit "$status"
