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
# A prefix is ready when a Windows program runs in it, not when wineboot says so: on a clean CI
# machine `wineboot -i` once exited non-zero ("ShellExecuteEx failed: Internal error", after the
# 32-bit syswow64 step that a wine64-only install always reports), and the same command on the next
# machine succeeds. So each attempt starts from an empty prefix, waits for the wineserver, and
# proves the prefix by running cmd.exe in it; three failed attempts fail the leg with every log.
# The marker file records a proven prefix so that .ci/dist.sh and reruns reuse it.
wine_prefix_runs() {
    local out
    out="$(timeout 300 wine cmd.exe /c echo pora-wine-ready 2>>"$1" | tr -d '\r')" || return 1
    [ "$out" = "pora-wine-ready" ]
}
if [ ! -f "$WINEPREFIX/.pora-ready" ]; then
    ready=""
    for attempt in 1 2 3; do
        step "creating Wine prefix $WINEPREFIX (attempt $attempt of 3)"
        log="$TARGET_DIR/wineboot-$attempt.log"
        wineserver -k >/dev/null 2>&1 || true
        rm -rf "$WINEPREFIX"
        boot_rc=0
        timeout 600 wineboot -i >"$log" 2>&1 || boot_rc=$?
        wineserver -w || true
        if wine_prefix_runs "$log" && [ -d "$WINEPREFIX/drive_c/windows/system32" ]; then
            [ "$boot_rc" = 0 ] || echo "wineboot -i exited $boot_rc, yet cmd.exe runs in the prefix: using it (log: $log)" >&2
            ready=1
            break
        fi
        echo "attempt $attempt: wineboot -i exited $boot_rc and cmd.exe did not run in the prefix; its log:" >&2
        cat "$log" >&2
    done
    [ -n "$ready" ] || fail "no working Wine prefix at $WINEPREFIX after 3 attempts (logs above)"
    touch "$WINEPREFIX/.pora-ready"
fi

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
