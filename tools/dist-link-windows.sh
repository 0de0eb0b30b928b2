#!/usr/bin/env bash
# tools/dist-link-windows.sh: the linker tools/dist.sh gives cargo for x86_64-pc-windows-gnu. It
# runs x86_64-w64-mingw32-gcc with every input under the target dir, $CARGO_HOME or the Rust
# toolchain named by a relative path through fixed-name links (target/, cargo/, sysroot/) in a
# scratch folder, and runs the link there.
#
# Why: GNU ld's PE linker script orders the import tables by input file name
# (KEEP (SORT(*)(.idata$N))). rustc writes the import libraries of raw-dylib imports next to the
# output (target/.../deps/rustcXXXX/), so with absolute names pora.exe's bytes (its import table
# and the calls through it) depended on whether the target dir sorts before or after /usr (the
# MinGW import libraries) or $CARGO_HOME: a build in /tmp and one in /work differed. Relative
# names always sort after absolute ones, in a fixed order among themselves.
#
# Needs PORA_DIST_TARGET_DIR, PORA_DIST_CARGO_HOME and PORA_DIST_SYSROOT (absolute paths).
set -euo pipefail

fail() {
    echo "dist-link-windows.sh: FAIL: $*" >&2
    exit 1
}
: "${PORA_DIST_TARGET_DIR:?dist-link-windows.sh: PORA_DIST_TARGET_DIR is not set (tools/dist.sh sets it)}"
: "${PORA_DIST_CARGO_HOME:?dist-link-windows.sh: PORA_DIST_CARGO_HOME is not set (tools/dist.sh sets it)}"
: "${PORA_DIST_SYSROOT:?dist-link-windows.sh: PORA_DIST_SYSROOT is not set (tools/dist.sh sets it)}"

scratch="$(mktemp -d "${TMPDIR:-/tmp}/pora-link.XXXXXX")" || fail "mktemp failed"
trap 'rm -rf "$scratch"' EXIT
names=(target cargo sysroot)
dirs=("$PORA_DIST_TARGET_DIR" "$PORA_DIST_CARGO_HOME" "$PORA_DIST_SYSROOT")
for i in "${!names[@]}"; do
    [[ "${dirs[$i]}" == /* ]] || fail "${names[$i]} dir '${dirs[$i]}' is not absolute"
    ln -s "${dirs[$i]}" "$scratch/${names[$i]}"
done

args=()
for arg in "$@"; do
    [[ "$arg" != @* ]] || fail "rustc passed a response file ($arg): its paths cannot be rewritten"
    flag=""
    if [[ "$arg" == -L/* ]]; then
        flag=-L
        arg="${arg#-L}"
    fi
    # The target dir first: it may lie inside one of the others (or they inside it).
    for i in "${!names[@]}"; do
        if [[ "$arg" == "${dirs[$i]}" || "$arg" == "${dirs[$i]}"/* ]]; then
            arg="${names[$i]}${arg#"${dirs[$i]}"}"
            break
        fi
    done
    args+=("$flag$arg")
done

cd "$scratch"
x86_64-w64-mingw32-gcc "${args[@]}"
