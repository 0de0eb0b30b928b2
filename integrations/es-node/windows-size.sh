#!/usr/bin/env bash
# integrations/es-node/windows-size.sh [--sim]: what pora adds to es-node.exe, measured on the
# es-node-shaped tree (bindings/go/esnode/hook/testdata/es-node, its stand-in cmd/es-node).
#
# Cross-builds cmd/es-node for windows/amd64 with mingw twice: the tree as it is, and the tree
# with pora's hook (pora-esnode apply -encoder), both linked by x86_64-w64-mingw32-gcc (the tree
# without the hook has no cgo, so it is linked externally on purpose: the same linker both
# times). Fails unless the hooked binary's .bss has no file contents (`objdump -h`: ALLOC only).
# GNU ld for PE gives the whole output .bss file contents when one input .bss has some, which
# pora's windows library had after llvm-objcopy stripped it (tools/coff-bss.py says why): Go's
# .bss was then written into es-node.exe as zeros (34 MB for es-node v0.2.10). Prints both
# sizes and the growth, split into loaded bytes, debug info and .bss.
#
# Needs Go, x86_64-w64-mingw32-gcc and -objdump, python3, and pora's windows_amd64 library:
# bindings/go/lib/windows_amd64 (tools/go-lib.sh x86_64-pc-windows-gnu), or with --sim the
# tests' library bindings/go/lib/sim/windows_amd64 (tools/go-lib.sh --sim x86_64-pc-windows-gnu,
# what .ci/windows.sh builds) and the build tag pora_sim. Downloads nothing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export GOTOOLCHAIN=local GOPROXY=off
export GOCACHE="${GOCACHE:-$ROOT/target/go-cache}"
say() { echo "es-node windows size: $*"; }
fail() { say "FAIL: $*"; exit 1; }

tags="" lib="$ROOT/bindings/go/lib/windows_amd64/libpora_ffi.a"
case "${1:-}" in
    --sim) tags=pora_sim lib="$ROOT/bindings/go/lib/sim/windows_amd64/libpora_ffi.a" ;;
    "") ;;
    *) fail "usage: integrations/es-node/windows-size.sh [--sim]" ;;
esac
for tool in go x86_64-w64-mingw32-gcc x86_64-w64-mingw32-objdump python3; do
    command -v "$tool" >/dev/null || fail "no $tool on PATH"
done
[ -f "$lib" ] || fail "no $lib (tools/go-lib.sh ${tags:+--sim }x86_64-pc-windows-gnu)"

work="$(mktemp -d "${TMPDIR:-/tmp}/es-node-windows.XXXXXX")"
trap 'rm -rf "$work"' EXIT
(cd "$ROOT/bindings/go" && go build -o "$work/pora-esnode" ./cmd/pora-esnode) || fail "go build ./cmd/pora-esnode failed"
cp -r "$ROOT/bindings/go/esnode/hook/testdata/es-node" "$work/plain"
cp -r "$work/plain" "$work/hooked"
"$work/pora-esnode" apply -encoder -pora-dir "$ROOT/bindings/go" "$work/hooked" >/dev/null \
    || fail "pora-esnode apply failed"

win=(env GOOS=windows GOARCH=amd64 CGO_ENABLED=1 CC=x86_64-w64-mingw32-gcc)
(cd "$work/plain" && "${win[@]}" go build -ldflags=-linkmode=external -o "$work/plain.exe" ./cmd/es-node) \
    || fail "cross-building the tree's cmd/es-node failed"
(cd "$work/hooked" && "${win[@]}" go build -tags "$tags" -o "$work/hooked.exe" ./cmd/es-node) \
    || fail "cross-building the hooked tree's cmd/es-node failed"

# sections EXE: "<loaded bytes with file contents> <debug bytes> <alloc-only bytes> <.bss flags>"
sections() {
    x86_64-w64-mingw32-objdump -h "$1" | python3 -c '
import sys
lines = sys.stdin.read().splitlines()
loaded = debug = alloc = 0
bss = "none"
for i, line in enumerate(lines):
    f = line.split()
    if len(f) >= 7 and f[0].isdigit():
        size, flags = int(f[2], 16), lines[i + 1].strip()
        if f[1] == ".bss":
            bss = flags.replace(" ", "")
        if "DEBUGGING" in flags:
            debug += size
        elif "CONTENTS" in flags:
            loaded += size
        else:
            alloc += size
print(loaded, debug, alloc, bss)'
}
read -r p_loaded p_debug p_alloc p_bss <<<"$(sections "$work/plain.exe")"
read -r h_loaded h_debug h_alloc h_bss <<<"$(sections "$work/hooked.exe")"
p_size="$(stat -c %s "$work/plain.exe")" h_size="$(stat -c %s "$work/hooked.exe")"
say "es-node.exe of the tree: $p_size bytes (loaded $p_loaded, debug $p_debug, alloc-only $p_alloc; .bss $p_bss)"
say "with pora's hook:        $h_size bytes (loaded $h_loaded, debug $h_debug, alloc-only $h_alloc; .bss $h_bss)"
say "growth: $((h_size - p_size)) bytes (loaded $((h_loaded - p_loaded)), debug $((h_debug - p_debug)), alloc-only $((h_alloc - p_alloc)))"
[ "$h_bss" = "ALLOC" ] || fail "the hooked es-node.exe's .bss is $h_bss, not ALLOC only: Go's .bss is written into the file (is $lib stripped without tools/coff-bss.py?)"
say "PASS: .bss has no file contents"
