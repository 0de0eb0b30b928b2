# Sourced by .ci/windows.sh and bench/wine-keccak.sh (not run alone): sets TARGET_DIR and a
# throwaway Wine prefix under it (no display needed), creating the prefix once, and installs the
# bcryptprimitives.dll stand-in that Rust programs need under Wine 8. The caller defines ROOT
# (the repository), `step MESSAGE` and `fail MESSAGE`.

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
