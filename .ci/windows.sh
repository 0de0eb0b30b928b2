#!/usr/bin/env bash
# Windows CI leg (called by .ci/run): cross-builds pora for x86_64-pc-windows-gnu and runs the
# Windows I/O tests and CLI tests under Wine through cargo's target runner, links the C ABI example
# (bindings/c) against the cross-built libpora_ffi.a and runs it under Wine, then compile-checks
# the macOS targets. Wine checks correctness only; its timings say nothing about Windows speed.
#
# Fails loudly (non-zero exit, "windows.sh: FAIL: ..." on stderr) when a package or target
# cannot be installed or any step fails; it never passes by skipping a step.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
WIN_TARGET=x86_64-pc-windows-gnu
MAC_TARGETS=(x86_64-apple-darwin aarch64-apple-darwin)
START_S=$(date +%s)

step() { echo "== windows.sh: $* ($(($(date +%s) - START_S)) s)" >&2; }
fail() {
    echo "windows.sh: FAIL: $*" >&2
    exit 1
}

# --- packages: mingw linker and Wine 8 (Debian: gcc-mingw-w64-x86-64, wine64, wine) ---
missing=()
command -v x86_64-w64-mingw32-gcc >/dev/null || missing+=(gcc-mingw-w64-x86-64)
command -v wine >/dev/null || missing+=(wine)
command -v make >/dev/null || missing+=(make)
{ command -v wine64 >/dev/null || [ -x /usr/lib/wine/wine64 ]; } || missing+=(wine64)
if ((${#missing[@]})); then
    step "installing ${missing[*]}"
    SUDO=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || fail "need root or sudo to install ${missing[*]}"
        SUDO=(sudo)
    fi
    "${SUDO[@]}" apt-get update || fail "apt-get update failed; cannot install ${missing[*]}"
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" \
        || fail "apt-get install ${missing[*]} failed"
fi
command -v x86_64-w64-mingw32-gcc >/dev/null || fail "x86_64-w64-mingw32-gcc not found after install"
command -v wine >/dev/null || fail "wine not found after install"

# --- Rust targets ---
step "rustup target add $WIN_TARGET ${MAC_TARGETS[*]}"
rustup target add "$WIN_TARGET" "${MAC_TARGETS[@]}" || fail "rustup target add failed"
for t in "$WIN_TARGET" "${MAC_TARGETS[@]}"; do
    rustup target list --installed | grep -qx "$t" || fail "Rust target $t is not installed"
done

# --- Wine prefix (throwaway, under the target dir; no display needed) ---
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
mkdir -p "$TARGET_DIR"
TARGET_DIR="$(cd "$TARGET_DIR" && pwd)"
export WINEPREFIX="$TARGET_DIR/wine-prefix"
export WINEDEBUG=-all
export WINEDLLOVERRIDES="mscoree,mshtml=" # no Mono/Gecko install prompts
unset DISPLAY WAYLAND_DISPLAY
if [ ! -f "$WINEPREFIX/system.reg" ]; then
    step "creating Wine prefix $WINEPREFIX"
    wineboot -i >"$TARGET_DIR/wineboot.log" 2>&1 || { cat "$TARGET_DIR/wineboot.log" >&2; fail "wineboot -i failed"; }
    wineserver -w || true
fi
[ -d "$WINEPREFIX/drive_c/windows/system32" ] || fail "Wine prefix has no system32: $WINEPREFIX"

# --- bcryptprimitives.dll stand-in: Wine 8 lacks it, and Rust's std imports ProcessPrng from it
#     (without it every Rust program exits with status 53 and prints nothing) ---
DLL_SRC="$ROOT/tools/wine-bcryptprimitives"
DLL_OUT="$TARGET_DIR/wine-bcryptprimitives/bcryptprimitives.dll"
mkdir -p "$(dirname "$DLL_OUT")"
step "building $DLL_OUT"
x86_64-w64-mingw32-gcc -shared -O2 -Wall -Wextra -Werror -o "$DLL_OUT" \
    "$DLL_SRC/bcryptprimitives.c" "$DLL_SRC/bcryptprimitives.def" -ladvapi32 \
    || fail "building the ProcessPrng stand-in DLL failed"
cp "$DLL_OUT" "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll"

export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=wine
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc

# --- a Rust program must actually run under Wine before any test result means anything ---
step "building pora.exe"
cargo build --target "$WIN_TARGET" -p pora || fail "cross-build of pora for $WIN_TARGET failed"
version="$(wine "$TARGET_DIR/$WIN_TARGET/debug/pora.exe" --version 2>/dev/null)" \
    || fail "pora.exe does not run under Wine (status $?; 53 means bcryptprimitives.dll is missing)"
[[ "$version" == pora* ]] || fail "pora.exe --version printed '$version' under Wine"
echo "pora.exe under $(wine --version 2>/dev/null): $version" >&2

# pora's other integration tests may use Unix-only APIs; the Windows CLI tests are windows_cli.
step "clippy for $WIN_TARGET (Windows code is not compiled on Linux)"
cargo clippy --no-deps --target "$WIN_TARGET" -p pora-io --all-targets -- -D warnings \
    || fail "clippy found problems in pora-io's Windows build"
cargo clippy --no-deps --target "$WIN_TARGET" -p pora-measure --all-targets -- -D warnings \
    || fail "clippy found problems in pora-measure's Windows build (doctor's Windows findings)"
cargo clippy --no-deps --target "$WIN_TARGET" -p pora --bins --test windows_cli -- -D warnings \
    || fail "clippy found problems in pora's Windows build"

step "cargo test --target $WIN_TARGET -p pora-io (unit, conformance and Windows method tests, under Wine)"
cargo test --target "$WIN_TARGET" -p pora-io || fail "pora-io tests failed under Wine"

step "cargo test --target $WIN_TARGET -p pora --test windows_cli (pora hash vectors, pora mine per method)"
cargo test --target "$WIN_TARGET" -p pora --test windows_cli -- --nocapture || fail "pora CLI tests failed under Wine"

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

for t in "${MAC_TARGETS[@]}"; do
    step "cargo clippy --target $t --workspace (compile check of the macOS code, warnings are errors)"
    cargo clippy --target "$t" --workspace --all-targets -- -D warnings || fail "cargo clippy --target $t failed"
done

step "PASS"
