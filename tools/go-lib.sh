#!/usr/bin/env bash
# tools/go-lib.sh: the one command that builds libpora for the Go package from a checkout and puts
# it where the package's cgo directives look (bindings/go/link.go):
#
#   bindings/go/lib/<goos>_<goarch>[_musl]/libpora_ffi.a   production library (no `sim` feature)
#   bindings/go/lib/sim/<goos>_<goarch>/libpora_ffi.a       with --sim: the tests' library, linked
#                                                           only with `go test -tags pora_sim`
#
# Usage: tools/go-lib.sh [--sim] [--with-cli] [TARGET...]      (no TARGET: this machine's target)
#   --with-cli also builds the `pora` binary in the same cargo run (same features), at
#   target/TARGET/release/pora[.exe]: the Go tests compare with it (PORA_BINARY).
#   TARGET is a Rust target triple or its Go name: x86_64-unknown-linux-gnu (linux_amd64),
#   x86_64-unknown-linux-musl (linux_amd64_musl), aarch64-unknown-linux-gnu (linux_arm64),
#   x86_64-pc-windows-gnu (windows_amd64), x86_64-apple-darwin (darwin_amd64),
#   aarch64-apple-darwin (darwin_arm64).
#
# Each library is `cargo rustc --release --locked -p pora-ffi --crate-type staticlib --target
# TARGET` (`cargo build` with --with-cli; always an explicit
# --target, so the library lands in target/TARGET/release and a `cargo build [--features sim]`
# of the host, which writes target/release, never changes what Go links), with no debug info
# (the consumer needs none; sizes in docs/release.md), build paths remapped out
# (--remap-path-prefix: the checkout is /pora, $CARGO_HOME /cargo, the toolchain /rustc-sysroot),
# then stripped of the debug sections the toolchain's precompiled standard library carries and
# of the LLVM bitcode rustc embeds for LTO (llvm-objcopy --strip-debug --remove-section=.llvmbc
# ..., from `rustup component add llvm-tools`: one tool for ELF, COFF and Mach-O); the windows
# library's .bss sections are then given no file contents again (tools/coff-bss.py, python3).
# The profile's LTO and codegen units are the workspace's unless CARGO_PROFILE_RELEASE_* says
# otherwise (CI's quick builds turn LTO off).
#
# Needs: cargo, rustc with the target's standard library (rustup target add TARGET), the
# llvm-tools component, and a C compiler for the target where a dependency compiles C/assembly
# (linux: cc / aarch64-linux-gnu-gcc / musl-gcc; windows: x86_64-w64-mingw32-gcc; darwin: clang,
# and llvm-ar from the llvm-tools component; no Apple SDK).
# Fails loudly ("go-lib.sh: FAIL: ...", non-zero) naming what is missing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export LC_ALL=C

fail() {
    echo "go-lib.sh: FAIL: $*" >&2
    exit 1
}

# go_dir TARGET: the Go directory name of a Rust target (empty: not a target the package knows).
go_dir() {
    case "$1" in
        x86_64-unknown-linux-gnu | linux_amd64) echo linux_amd64 ;;
        x86_64-unknown-linux-musl | linux_amd64_musl) echo linux_amd64_musl ;;
        aarch64-unknown-linux-gnu | linux_arm64) echo linux_arm64 ;;
        x86_64-pc-windows-gnu | windows_amd64) echo windows_amd64 ;;
        x86_64-apple-darwin | darwin_amd64) echo darwin_amd64 ;;
        aarch64-apple-darwin | darwin_arm64) echo darwin_arm64 ;;
        *) echo "" ;;
    esac
}
# rust_target GO_DIR_OR_TRIPLE: the Rust triple.
rust_target() {
    case "$(go_dir "$1")" in
        linux_amd64) echo x86_64-unknown-linux-gnu ;;
        linux_amd64_musl) echo x86_64-unknown-linux-musl ;;
        linux_arm64) echo aarch64-unknown-linux-gnu ;;
        windows_amd64) echo x86_64-pc-windows-gnu ;;
        darwin_amd64) echo x86_64-apple-darwin ;;
        darwin_arm64) echo aarch64-apple-darwin ;;
    esac
}

sim=0
# Only the static library: the crate's cdylib would need the target's linker (none for macOS
# on Linux). --with-cli builds the pora binary too, which links (host and MinGW targets).
build=(cargo rustc -p pora-ffi --lib --crate-type staticlib)
targets=()
for arg in "$@"; do
    case "$arg" in
        --sim) sim=1 ;;
        --with-cli) build=(cargo build -p pora-ffi -p pora) ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
            exit 0
            ;;
        -*) fail "unknown option '$arg' (usage: tools/go-lib.sh [--sim] [TARGET...])" ;;
        *)
            [ -n "$(go_dir "$arg")" ] || fail "unknown target '$arg' (known: x86_64-unknown-linux-gnu, x86_64-unknown-linux-musl, aarch64-unknown-linux-gnu, x86_64-pc-windows-gnu, x86_64-apple-darwin, aarch64-apple-darwin)"
            targets+=("$(rust_target "$arg")")
            ;;
    esac
done
if [ ${#targets[@]} -eq 0 ]; then
    host="$(rustc -vV | sed -n 's/^host: //p')" || fail "rustc -vV failed"
    [ -n "$(go_dir "$host")" ] || fail "this machine's target $host has no Go library directory; name a TARGET"
    targets=("$host")
fi

command -v cargo >/dev/null || fail "no cargo on PATH"
SYSROOT="$(rustc --print sysroot)" || fail "rustc --print sysroot failed"
HOST="$(rustc -vV | sed -n 's/^host: //p')"
# The stripping tool. rustup's llvm-objcopy (component llvm-tools) first: its LLVM is rustc's and
# it writes ELF, COFF and Mach-O. A fresh machine lacks the component, so go-lib.sh adds it (one
# download through rustup, as .ci/bindings.sh does); offline or without rustup it takes an
# llvm-objcopy on PATH, then binutils' objcopy for ELF targets (it cannot write Mach-O, and the
# MinGW archive is left to llvm-objcopy). Every fallback is said on stderr.
OBJCOPY="$SYSROOT/lib/rustlib/$HOST/bin/llvm-objcopy"
if [ ! -x "$OBJCOPY" ] && command -v rustup >/dev/null; then
    echo "go-lib.sh: no $OBJCOPY: rustup component add llvm-tools" >&2
    rustup component add llvm-tools >&2 || echo "go-lib.sh: rustup component add llvm-tools failed; looking for another objcopy" >&2
fi
GNU_OBJCOPY=0
if [ ! -x "$OBJCOPY" ]; then
    if command -v llvm-objcopy >/dev/null; then
        OBJCOPY="$(command -v llvm-objcopy)"
    elif command -v objcopy >/dev/null && grep -q '^GNU objcopy' <<<"$(objcopy --version 2>/dev/null)"; then
        OBJCOPY="$(command -v objcopy)" GNU_OBJCOPY=1
    else
        fail "nothing strips the library: run 'rustup component add llvm-tools' (or install binutils/llvm)"
    fi
    echo "go-lib.sh: stripping with $OBJCOPY (rustup's llvm-tools are not installed)" >&2
fi
# Debug info, and the LLVM bitcode rustc embeds in every object for LTO (ELF/COFF .llvmbc,
# Mach-O __LLVM,__bitcode): a C or Go linker never reads it, and it is two thirds of the bytes.
STRIP_ARGS=(--strip-debug --remove-section=.llvmbc --remove-section=.llvmcmd
    --remove-section=__LLVM,__bitcode --remove-section=__LLVM,__cmdline)
CARGO_HOME_DIR="$(cd "${CARGO_HOME:-$HOME/.cargo}" && pwd)"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
mkdir -p "$TARGET_DIR"
TARGET_DIR="$(cd "$TARGET_DIR" && pwd)"

flags=()
for rule in "$ROOT=/pora" "$CARGO_HOME_DIR=/cargo" "$SYSROOT=/rustc-sysroot" "$TARGET_DIR=/target"; do
    flags+=("--remap-path-prefix=$rule")
done
cflags="-ffile-prefix-map=$ROOT=/pora -ffile-prefix-map=$CARGO_HOME_DIR=/cargo"
features=()
[ "$sim" -eq 0 ] || features=(--features sim)

for target in "${targets[@]}"; do
    dir="$(go_dir "$target")"
    [ -d "$SYSROOT/lib/rustlib/$target/lib" ] || fail "Rust target $target is not installed (rustup target add $target)"
    out="$ROOT/bindings/go/lib/$dir"
    [ "$sim" -eq 0 ] || out="$ROOT/bindings/go/lib/sim/$dir"
    # ELF objects assembled from .S files without a .note.GNU-stack section (keccak-asm's
    # CRYPTOGAMS keccak1600-x86_64) would make the linker give the consumer's whole program an
    # executable stack; the assembler marks them non-executable instead, so the library asks no
    # link flag of the program that links it (bindings/go/link.go).
    target_cflags="$cflags"
    case "$target" in *-linux-*) target_cflags="$cflags -Wa,--noexecstack" ;; esac
    # macOS targets build here with no Apple SDK: the C and assembly of the dependencies
    # (sha3-asm) need no system header, so clang cross-assembles them (--target=...-apple-macos,
    # the Rust target's own minimum OS version) and LLVM's llvm-ar writes the archive; only a
    # cdylib or an executable would need Apple's linker. SDKROOT only keeps the cc crate from
    # asking xcrun for an SDK.
    target_env=()
    case "$target" in
        x86_64-apple-darwin | aarch64-apple-darwin)
            command -v clang >/dev/null || fail "no clang: the $target build cross-assembles its C/assembly with clang (apt-get install clang)"
            llvm_ar="$SYSROOT/lib/rustlib/$HOST/bin/llvm-ar"
            [ -x "$llvm_ar" ] || llvm_ar="$(command -v llvm-ar || true)"
            [ -n "$llvm_ar" ] || fail "no llvm-ar for the $target archive (rustup component add llvm-tools, or apt-get install llvm)"
            clang_target=x86_64-apple-macos10.12
            [ "$target" = aarch64-apple-darwin ] && clang_target=arm64-apple-macos11
            t_="${target//-/_}"
            target_env=("CC_$t_=clang" "AR_$t_=$llvm_ar" "CFLAGS_$t_=$cflags --target=$clang_target"
                "SDKROOT=${SDKROOT:-/var/empty/no-apple-sdk}")
            ;;
    esac
    echo "go-lib.sh: ${build[*]} --release --locked --target $target ${features[*]}" >&2
    env CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_TARGET_DIR="$TARGET_DIR" \
        CARGO_ENCODED_RUSTFLAGS="$(IFS=$'\x1f'; echo "${flags[*]}")" \
        CC_aarch64_unknown_linux_gnu="${CC_aarch64_unknown_linux_gnu:-aarch64-linux-gnu-gcc}" \
        CC_x86_64_unknown_linux_musl="${CC_x86_64_unknown_linux_musl:-musl-gcc}" \
        CC_x86_64_pc_windows_gnu="${CC_x86_64_pc_windows_gnu:-x86_64-w64-mingw32-gcc}" \
        CFLAGS="$target_cflags" "${target_env[@]}" \
        "${build[@]}" --release --locked --target "$target" "${features[@]}" \
        || fail "${build[*]} --target $target failed"
    built="$TARGET_DIR/$target/release/libpora_ffi.a"
    [ -f "$built" ] || fail "the build left no $built"
    mkdir -p "$out"
    case "$GNU_OBJCOPY:$target" in
        1:*-linux-*) ;;
        1:*) fail "binutils' objcopy cannot strip the $target archive: run 'rustup component add llvm-tools'" ;;
    esac
    "$OBJCOPY" "${STRIP_ARGS[@]}" "$built" "$out/libpora_ffi.a.tmp" || fail "$OBJCOPY --strip-debug $built failed"
    if [[ "$target" == *-linux-* ]] && command -v readelf >/dev/null; then
        # Every object must say its stack is not executable (see target_cflags above).
        execstack="$(readelf -SW "$out/libpora_ffi.a.tmp" | awk '/^File: /{if (f && !n) print f; f=$2; n=0} /\.note\.GNU-stack/{n=1} END{if (f && !n) print f}')"
        [ -z "$execstack" ] || fail "objects without a .note.GNU-stack section would make a program's stack executable: $execstack"
    fi
    if [[ "$target" == *-windows-* ]]; then
        # llvm-objcopy gives each non-empty .bss a file offset; GNU ld for PE then writes the
        # whole .bss of the program that links the library (es-node.exe: Go's 34 MB) into the
        # file as zeros. coff-bss.py puts the offsets back to 0 (it says why).
        command -v python3 >/dev/null || fail "no python3 for tools/coff-bss.py (the $target .bss fix)"
        python3 "$ROOT/tools/coff-bss.py" "$out/libpora_ffi.a.tmp" >&2 || fail "tools/coff-bss.py failed"
    fi
    mv "$out/libpora_ffi.a.tmp" "$out/libpora_ffi.a"
    echo "go-lib.sh: $out/libpora_ffi.a ($(stat -c %s "$out/libpora_ffi.a") bytes; unstripped $(stat -c %s "$built"))" >&2
done
