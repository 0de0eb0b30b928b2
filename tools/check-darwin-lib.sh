#!/usr/bin/env bash
# tools/check-darwin-lib.sh LIB TARGET: checks a macOS libpora_ffi.a built on Linux as far as
# Linux can (no macOS machine runs it here; docs/release.md):
#   1. every member of the archive is a Mach-O object of TARGET's architecture
#      (x86_64-apple-darwin: "Mach-O 64-bit x86-64"; aarch64-apple-darwin: "Mach-O arm64");
#   2. every function pora.h declares is defined and external (`_pora_*`);
#   3. every symbol the archive leaves undefined (referenced, defined in none of its objects) is
#      in tools/darwin-undefined-symbols.txt: the macOS system library's (libSystem: libc,
#      libm, pthread, dyld, libdispatch, unwind, CommonCrypto), which every macOS program links.
#      A new one fails, naming it, so a dependency that needs another library or framework is
#      seen before a macOS user meets the link error.
# Tools: llvm-readobj, llvm-nm and llvm-ar from rustup's llvm-tools component (else on PATH).
# Prints "check-darwin-lib.sh: OK ..." or fails loudly ("check-darwin-lib.sh: FAIL: ...").
set -euo pipefail
export LC_ALL=C

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
fail() {
    echo "check-darwin-lib.sh: FAIL: $*" >&2
    exit 1
}
[ $# -eq 2 ] || fail "usage: tools/check-darwin-lib.sh LIB TARGET"
lib="$1" target="$2"
[ -f "$lib" ] || fail "no library $lib"
case "$target" in
    x86_64-apple-darwin) want_format="Mach-O 64-bit x86-64" ;;
    aarch64-apple-darwin) want_format="Mach-O arm64" ;;
    *) fail "$target is not a macOS target" ;;
esac
tool() {
    local bin
    bin="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin/$1"
    [ -x "$bin" ] || bin="$(command -v "$1" || true)"
    [ -n "$bin" ] || fail "no $1 (rustup component add llvm-tools)"
    echo "$bin"
}
READOBJ="$(tool llvm-readobj)" NM="$(tool llvm-nm)" AR="$(tool llvm-ar)"
allowlist="$ROOT/tools/darwin-undefined-symbols.txt"
header="$ROOT/crates/pora-ffi/include/pora.h"

# 1. the objects' format.
members="$("$AR" t "$lib" | wc -l)"
formats="$("$READOBJ" --file-headers "$lib" | sed -n 's/^Format: //p' | sort | uniq -c)"
[ "$members" -gt 0 ] || fail "$lib has no members"
good="$(sed -n "s/^ *\([0-9]*\) $want_format\$/\1/p" <<<"$formats")"
[ "${good:-0}" -eq "$members" ] || fail "$lib: $members members, ${good:-0} of them $want_format; formats:"$'\n'"$formats"

# 2. pora.h's functions (the prototypes: lines that start with a type, not comments).
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
grep -v '^\s*\(//\|\*\|/\*\)' "$header" | grep -o '\bpora_[a-z0-9_]*\s*(' | tr -d '( ' | sort -u >"$work/declared"
[ -s "$work/declared" ] || fail "no function found in $header"
"$NM" --extern-only --defined-only --format=just-symbols "$lib" 2>/dev/null | grep -v ':$' | grep . | sort -u >"$work/defined"
sed -n 's/^_\(pora_.*\)/\1/p' "$work/defined" | sort -u >"$work/exported"
missing="$(comm -23 "$work/declared" "$work/exported")"
[ -z "$missing" ] || fail "$lib does not define these pora.h functions: $(tr '\n' ' ' <<<"$missing")"

# 3. what the archive needs from outside, against the allowlist.
"$NM" --extern-only --undefined-only --format=just-symbols "$lib" 2>/dev/null | grep -v ':$' | grep . | sort -u >"$work/undefined"
comm -23 "$work/undefined" "$work/defined" >"$work/external"
grep -v '^\s*\(#\|$\)' "$allowlist" | sort -u >"$work/allowed"
unknown="$(comm -23 "$work/external" "$work/allowed")"
[ -z "$unknown" ] || fail "$lib ($target) needs symbols outside tools/darwin-undefined-symbols.txt (the system library's): $(tr '\n' ' ' <<<"$unknown")"
echo "check-darwin-lib.sh: OK $lib: $members objects, all $want_format; $(wc -l <"$work/declared") pora.h functions defined; $(wc -l <"$work/external") undefined symbols, all the system library's"
