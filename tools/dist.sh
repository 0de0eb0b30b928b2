#!/usr/bin/env bash
# tools/dist.sh: builds pora's release archives, reproducibly, into dist/:
#   dist/pora-<version>-x86_64-unknown-linux-musl.tar.gz  static pora, libpora_ffi.a (musl), pora.h, pora.pc
#   dist/pora-<version>-x86_64-pc-windows-gnu.zip         pora.exe, libpora_ffi.a (windows-gnu), pora.h, pora.pc
#   (each with TARGETS.txt: "target go-directory bytes sha256" of its libpora_ffi.a)
#   dist/pora-<version>-go.tar.gz                         the Go module (bindings/go, module path in its
#                                                         go.mod) with lib/<goos>_<goarch>/libpora_ffi.a for
#                                                         every target below that built, include/pora.h,
#                                                         pkgconfig/pora-<goos>_<goarch>.pc, TARGETS.txt
#   dist/pora-<version>-goproxy.tar.gz                    the same module in the Go module proxy's layout
#                                                         (tools/go-proxy.py: <module>/@v/list, .info, .mod,
#                                                         .zip with the libraries, GOSUM.txt): a GOPROXY
#   dist/TARGETS.txt                                      each target: its library's size and SHA-256, or SKIP
#   dist/SHA256SUMS                                       `sha256sum -c SHA256SUMS` inside dist/
# Library targets (pora-ffi only): x86_64-unknown-linux-gnu, aarch64-unknown-linux-gnu,
# x86_64-apple-darwin, aarch64-apple-darwin, besides the musl and windows-gnu builds above. The
# two macOS libraries build here with no Apple SDK (clang cross-assembles sha3-asm, llvm-ar) and
# are checked as far as Linux can (tools/check-darwin-lib.sh: Mach-O of the right architecture,
# every pora.h function defined, undefined symbols only tools/darwin-undefined-symbols.txt's). A
# library target missing anything its build needs (its Rust standard library; aarch64: the C
# cross compiler aarch64-linux-gnu-gcc; darwin: clang, llvm-ar) is a "SKIP: <target>: missing <what>" line (stderr and
# TARGETS.txt) and needs none of its tools, never a silent pass; a target with everything it
# needs that fails to build fails the run. The musl and windows-gnu archives are not optional:
# what they need (their Rust targets, musl-gcc, MinGW) missing fails the run, naming it.
#
# Profile: every binary and every library, of every target, is the workspace's [profile.release]
# (Cargo.toml: thin LTO, 4 codegen units; the build that docs/BENCHMARKS.md measures), libraries
# then stripped. TARGETS.txt's last column and BUILDINFO.txt name each library's profile.
# `--quick` (CI's or a developer's check only, never a release) builds the four library-only
# targets with LTO off, 16 codegen units and no debug info instead (faster to build; docs/release.md
# measured 0.74-0.85x the cached mining rate); its Go archive is
# pora-<version>-QUICK-go.tar.gz, and its TARGETS.txt and BUILDINFO.txt say QUICK.
# Every libpora_ffi.a is stripped of debug info and embedded LLVM bitcode (llvm-objcopy, rustup
# component llvm-tools): a consumer links it and needs none; the tar.gz/zip also carry pora.pc (pkg-config).
# Each archive also holds README.md, LICENSE-MIT, LICENSE-APACHE, THIRD-PARTY-LICENSES.txt
# (tools/third_party_licenses.py), COPYRIGHT-rust-std.html (the Rust toolchain's notices for the
# standard library) and BUILDINFO.txt (commit, rustc, how to rebuild). docs/release.md says more.
#
# <version> is the workspace version (Cargo.toml [workspace.package], read through cargo
# metadata). The build is the workspace's [profile.release] with production features only (no
# `sim`), from Cargo.lock (--locked). Same commit, same toolchain => byte-identical archives:
# SOURCE_DATE_EPOCH is the commit's time, the source tree, $CARGO_HOME, the toolchain and the
# target dir are remapped out of the binaries (checked with `strings`), entries are sorted with
# fixed owner, mode and mtime, gzip stores no name or time, zip entries carry a fixed date and no
# extra fields, the PE header's link timestamp is left out, and pora.exe is linked through
# tools/dist-link-windows.sh (fixed relative input names: GNU ld orders PE import tables by them)
# and loses the path-named symbols of rustc's raw-dylib import libraries (objcopy).
#
# Usage:
#   tools/dist.sh                        build into ${CARGO_TARGET_DIR:-target}, write dist/
#   tools/dist.sh --check-reproducible   build twice in two fresh target dirs (different absolute
#                                        paths), compare the archives byte for byte, print both
#                                        SHA-256s; on success dist/ holds the first build's files
#   tools/dist.sh --quick [--check-reproducible]   the quick variant above (not a release)
#
# Needs: cargo/rustc with the two targets (rustup target add), musl-gcc (musl-tools),
# x86_64-w64-mingw32-gcc and -objcopy (gcc-mingw-w64-x86-64), python3, GNU tar, gzip, sha256sum,
# strings (binutils), git, the llvm-tools component; for linux_arm64 also the aarch64 Rust target
# and aarch64-linux-gnu-gcc (gcc-aarch64-linux-gnu), else that target is a SKIP line.
# Fails loudly ("dist.sh: FAIL: ...", non-zero) when any step fails.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export LC_ALL=C TZ=UTC
LINUX_TARGET=x86_64-unknown-linux-musl
WIN_TARGET=x86_64-pc-windows-gnu
# Targets built for the Go module only (the library, no CLI); their Go directory names are
# tools/go-lib.sh's.
LIB_TARGETS=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-apple-darwin aarch64-apple-darwin)
PACKAGES=(pora pora-ffi)
PKG_ARGS=(-p pora -p pora-ffi)
START_S=$(date +%s)

step() { echo "== dist.sh: $* ($(($(date +%s) - START_S)) s)" >&2; }
fail() {
    echo "dist.sh: FAIL: $*" >&2
    exit 1
}

USAGE="usage: tools/dist.sh [--quick] [--check-reproducible]"
mode=build
quick=0
for arg in "$@"; do
    case "$arg" in
        --check-reproducible) mode=check ;;
        --quick) quick=1 ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
            exit 0
            ;;
        *) fail "unknown argument '$arg' ($USAGE)" ;;
    esac
done

# --- tools every build needs ---
for tool in cargo rustc git python3 tar gzip sha256sum strings; do
    command -v "$tool" >/dev/null || fail "'$tool' not found (strings: apt-get install binutils)"
done
grep -q 'GNU tar' <<<"$(tar --version 2>/dev/null)" || fail "tar is not GNU tar (needs --sort=name)"
SYSROOT="$(rustc --print sysroot)" || fail "rustc --print sysroot failed"
LLVM_BIN="$SYSROOT/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin"
OBJCOPY="$LLVM_BIN/llvm-objcopy"
[ -x "$OBJCOPY" ] || fail "no $OBJCOPY (rustup component add llvm-tools): it strips the libraries' debug info"

# target_missing TARGET: what TARGET's build needs and this machine lacks, "; "-separated (empty:
# nothing). Only a target that is built is asked about: a skipped one needs none of its tools.
target_missing() {
    local t="$1" tool miss=()
    [ -d "$SYSROOT/lib/rustlib/$t/lib" ] || miss+=("its Rust standard library (rustup target add $t)")
    case "$t" in
        x86_64-unknown-linux-musl)
            command -v musl-gcc >/dev/null || miss+=("musl-gcc (apt-get install musl-tools)") ;;
        x86_64-pc-windows-gnu)
            for tool in x86_64-w64-mingw32-gcc x86_64-w64-mingw32-objcopy; do
                command -v "$tool" >/dev/null || miss+=("$tool (apt-get install gcc-mingw-w64-x86-64)")
            done ;;
        aarch64-unknown-linux-gnu)
            command -v aarch64-linux-gnu-gcc >/dev/null || miss+=("aarch64-linux-gnu-gcc (apt-get install gcc-aarch64-linux-gnu)") ;;
        x86_64-apple-darwin | aarch64-apple-darwin)
            # No Apple SDK: clang cross-assembles the dependencies' C/assembly, llvm-ar archives
            # it (tools/go-lib.sh says why that is enough for a static library).
            command -v clang >/dev/null || miss+=("clang (apt-get install clang)")
            [ -x "$LLVM_BIN/llvm-ar" ] || miss+=("llvm-ar (rustup component add llvm-tools)") ;;
    esac
    local IFS=';'
    echo "${miss[*]}" | sed 's/;/; /g'
}
for t in "$LINUX_TARGET" "$WIN_TARGET"; do
    missing="$(target_missing "$t")"
    [ -z "$missing" ] || fail "$t (an archive of its own, never skipped) needs: $missing"
done
BUILT_LIB_TARGETS=()
declare -A SKIPPED=()
for t in "${LIB_TARGETS[@]}"; do
    missing="$(target_missing "$t")"
    if [ -z "$missing" ]; then
        BUILT_LIB_TARGETS+=("$t")
    else
        SKIPPED[$t]="missing $missing"
        echo "SKIP: $t: ${SKIPPED[$t]}" >&2
    fi
done

# --- the profile of each build (stated in TARGETS.txt and BUILDINFO.txt) ---
# release_profile: the workspace's [profile.release] as Cargo.toml sets it, one word.
RELEASE_PROFILE="$(python3 - <<'PY'
import tomllib
p = tomllib.load(open("Cargo.toml", "rb")).get("profile", {}).get("release", {})
keys = ["opt-level", "lto", "codegen-units", "debug", "panic"]
print("release(" + ",".join(f"{k}={str(p[k]).lower()}" for k in keys if k in p) + ")")
PY
)" || fail "reading [profile.release] from Cargo.toml failed"
QUICK_PROFILE="QUICK(release,lto=off,codegen-units=16,debug=0)"
if ((quick)); then
    LIB_PROFILE="$QUICK_PROFILE"
    GO_NAME_SUFFIX="-QUICK"
    echo "dist.sh: --quick: the Go archive's ${LIB_TARGETS[*]} libraries are $QUICK_PROFILE, not a release" >&2
else
    LIB_PROFILE="$RELEASE_PROFILE"
    GO_NAME_SUFFIX=""
fi
# profile_of TARGET: the profile its library is built with.
profile_of() {
    case "$1" in
        "$LINUX_TARGET" | "$WIN_TARGET") echo "$RELEASE_PROFILE" ;;
        *) echo "$LIB_PROFILE" ;;
    esac
}
RUST_STD_NOTICES="$SYSROOT/share/doc/rust/COPYRIGHT-library.html"
[ -f "$RUST_STD_NOTICES" ] || fail "the toolchain has no $RUST_STD_NOTICES (the standard library's licence notices the archives carry)"

# --- what is built: version, commit, time ---
VERSION="$(cargo metadata --no-deps --format-version 1 --locked | python3 -c '
import json, sys
meta = json.load(sys.stdin)
print(next(p["version"] for p in meta["packages"] if p["name"] == "pora"))')" \
    || fail "reading the workspace version with cargo metadata failed"
[[ "$VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+ ]] || fail "cargo metadata gave version '$VERSION'"
COMMIT="$(git rev-parse --short=12 HEAD)" || fail "git rev-parse HEAD failed (not a git checkout?)"
EPOCH="$(git log -1 --format=%ct HEAD)" || fail "git log: no commit time for HEAD"
RUSTC_VERSION="$(rustc -V)"
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
    echo "dist.sh: warning: the working tree has uncommitted changes: the archives are not commit $COMMIT's" >&2
fi
export SOURCE_DATE_EPOCH="$EPOCH" PORA_BUILD_COMMIT="$COMMIT"
MODULE_PATH="$(sed -n 's/^module //p' bindings/go/go.mod)"
[ -n "$MODULE_PATH" ] || fail "bindings/go/go.mod names no module"

# Only the workspace's own [profile.release] and these flags: drop anything from the caller's
# environment that would change the code (profile overrides, extra rustflags, incremental).
while IFS= read -r var; do unset "$var"; done < <(env | sed -n 's/^\(CARGO_PROFILE_[A-Z0-9_]*\)=.*/\1/p; s/^\(CARGO_TARGET_[A-Z0-9_]*_RUSTFLAGS\)=.*/\1/p')
unset RUSTFLAGS CARGO_ENCODED_RUSTFLAGS CARGO_BUILD_RUSTFLAGS CARGO_INCREMENTAL RUSTDOCFLAGS

CARGO_HOME_DIR="${CARGO_HOME:-$HOME/.cargo}"
CARGO_HOME_DIR="$(cd "$CARGO_HOME_DIR" && pwd)" || fail "CARGO_HOME $CARGO_HOME_DIR does not exist"

# go_dir TARGET: the Go module's library directory of a Rust target (tools/go-lib.sh's names).
go_dir() {
    case "$1" in
        x86_64-unknown-linux-gnu) echo linux_amd64 ;;
        x86_64-unknown-linux-musl) echo linux_amd64_musl ;;
        aarch64-unknown-linux-gnu) echo linux_arm64 ;;
        x86_64-pc-windows-gnu) echo windows_amd64 ;;
        x86_64-apple-darwin) echo darwin_amd64 ;;
        aarch64-apple-darwin) echo darwin_arm64 ;;
        *) fail "no Go directory for target $1" ;;
    esac
}

# strip_lib IN OUT: the static library without debug info and without the LLVM bitcode rustc
# embeds in each object for LTO (ELF/COFF .llvmbc, Mach-O __LLVM,__bitcode): a C or Go linker
# reads neither, and they are most of the bytes (docs/release.md has the sizes).
strip_lib() {
    [ -f "$1" ] || fail "the build left no $1"
    mkdir -p "$(dirname "$2")"
    "$OBJCOPY" --strip-debug --remove-section=.llvmbc --remove-section=.llvmcmd \
        --remove-section=__LLVM,__bitcode --remove-section=__LLVM,__cmdline "$1" "$2" \
        || fail "llvm-objcopy --strip-debug $1 failed"
    # The windows library's .bss without file contents again (tools/go-lib.sh says why).
    case "$2" in
        */windows_amd64/*) python3 tools/coff-bss.py "$2" >&2 || fail "tools/coff-bss.py $2 failed" ;;
    esac
}

# write_pc FILE TARGET PREFIX [LIBDIR INCLUDEDIR]: a pkg-config file for TARGET's static library;
# Libs has the system libraries it needs (the same as bindings/go/link.go and bindings/c).
write_pc() {
    local libs
    case "$2" in
        *-linux-*) libs="-ldl -lm -lpthread" ;;
        *-windows-*) libs="-lws2_32 -luserenv -lntdll -lbcrypt -ladvapi32 -lkernel32" ;;
        *-apple-*) libs="-lm -lpthread" ;;
        *) fail "no system libraries known for $2" ;;
    esac
    cat >"$1" <<EOF
prefix=$3
includedir=${5:-\${prefix\}}
libdir=${4:-\${prefix\}}

Name: pora
Description: libpora, the EthStorage storage-proof mining engine (static library for $2)
URL: https://$MODULE_PATH
Version: $VERSION
Cflags: -I\${includedir}
Libs: \${libdir}/libpora_ffi.a $libs
EOF
}

# stage_go_module WORK TARGET_DIR: WORK/pora-<version>[-QUICK]-go, the Go module of bindings/go (its
# committed non-test files) with every built target's stripped library in lib/<goos>_<goarch>,
# pkg-config files, licences and TARGETS.txt (what each library is, its size, or why it is not).
stage_go_module() {
    local work="$1" target_dir="$2" stage="$1/pora-$VERSION$GO_NAME_SUFFIX-go" f target dir size sum
    step "staging pora-$VERSION$GO_NAME_SUFFIX-go (the Go module with its libraries)"
    mkdir -p "$stage"
    while IFS= read -r f; do
        mkdir -p "$stage/$(dirname "$f")"
        cp "$ROOT/bindings/go/$f" "$stage/$f"
    done < <(cd "$ROOT/bindings/go" && git ls-files | grep -v '_test\.go$')
    [ -f "$stage/go.mod" ] && [ -f "$stage/include/pora.h" ] || fail "bindings/go has no committed go.mod or include/pora.h"
    # bindings/go/include/pora.h is a link to the one header; cp wrote the header itself.
    [ ! -L "$stage/include/pora.h" ] && cmp -s "$stage/include/pora.h" crates/pora-ffi/include/pora.h \
        || fail "the staged include/pora.h is not a copy of crates/pora-ffi/include/pora.h"
    {
        echo "pora $VERSION Go module $MODULE_PATH, commit $COMMIT"
        ((quick == 0)) || echo "# QUICK BUILD (tools/dist.sh --quick), not a release: the libraries marked QUICK are slower (docs/release.md)"
        echo "# target  go-directory  bytes  sha256  profile (libpora_ffi.a, stripped of debug info and LLVM bitcode)"
    } >"$stage/TARGETS.txt"
    mkdir -p "$stage/pkgconfig"
    for target in "$LINUX_TARGET" "$WIN_TARGET" "${BUILT_LIB_TARGETS[@]}"; do
        dir="$(go_dir "$target")"
        strip_lib "$target_dir/$target/release/libpora_ffi.a" "$stage/lib/$dir/libpora_ffi.a"
        case "$target" in
            *-apple-darwin)
                # Built here, never run here: Mach-O of the right architecture, every pora.h
                # function defined, only the system library's symbols left undefined.
                step "tools/check-darwin-lib.sh lib/$dir/libpora_ffi.a $target"
                bash tools/check-darwin-lib.sh "$stage/lib/$dir/libpora_ffi.a" "$target" >&2 \
                    || fail "the $target library fails its checks (tools/check-darwin-lib.sh)"
                ;;
        esac
        write_pc "$stage/pkgconfig/pora-$dir.pc" "$target" '${pcfiledir}/..' "\${prefix}/lib/$dir" '${prefix}/include'
        python3 tools/third_party_licenses.py --target "$target" "${PACKAGES[@]/#/--package=}" \
            --out "$stage/lib/$dir/THIRD-PARTY-LICENSES.txt" || fail "writing THIRD-PARTY-LICENSES.txt for $target failed"
        size="$(stat -c %s "$stage/lib/$dir/libpora_ffi.a")"
        sum="$(sha256sum <"$stage/lib/$dir/libpora_ffi.a" | cut -d' ' -f1)"
        echo "$target  $dir  $size  $sum  $(profile_of "$target")" >>"$stage/TARGETS.txt"
    done
    for target in "${LIB_TARGETS[@]}"; do
        [ -z "${SKIPPED[$target]:-}" ] || echo "SKIP: $target: ${SKIPPED[$target]}" >>"$stage/TARGETS.txt"
    done
    cp LICENSE-MIT LICENSE-APACHE "$stage/"
    cp "$RUST_STD_NOTICES" "$stage/COPYRIGHT-rust-std.html"
    local quick_note="" lib_profiles
    ((quick == 0)) || quick_note="QUICK BUILD (tools/dist.sh --quick), NOT A RELEASE: the library-only targets are
       $QUICK_PROFILE, slower than the release build (docs/release.md)
"
    lib_profiles="$(for target in "$LINUX_TARGET" "$WIN_TARGET" "${BUILT_LIB_TARGETS[@]}"; do
        printf '  %-28s %s\n' "$target" "$(profile_of "$target")"; done)"
    cat >"$stage/BUILDINFO.txt" <<EOF
pora $VERSION Go module ($MODULE_PATH)
${quick_note}commit: $COMMIT
rustc: $RUSTC_VERSION
SOURCE_DATE_EPOCH: $EPOCH
libraries: cargo build (musl, windows-gnu) or cargo rustc --crate-type staticlib (the others)
           --release --locked --target TARGET -p pora-ffi, then llvm-objcopy --strip-debug
           --remove-section=.llvmbc (default features: no sim); each library's profile
           (release: the workspace's [profile.release] in Cargo.toml, as the benchmarks):
$lib_profiles
use: require $MODULE_PATH v$VERSION in go.mod, fetched from the release's module proxy tree
     (pora-$VERSION$GO_NAME_SUFFIX-goproxy.tar.gz: GOPROXY=file://<its folder> or served over HTTPS;
     docs/release.md), or replace $MODULE_PATH => <this folder> (bindings/go/README.md)
EOF
    find "$stage" -type d -exec chmod 0755 {} +
    find "$stage" -type f -exec chmod 0644 {} +
    find "$stage" -exec touch -h -d "@$EPOCH" {} +
    cat "$stage/TARGETS.txt" >&2
}

# build_dist TARGET_DIR OUT_DIR: builds both targets in TARGET_DIR and writes the two archives
# and SHA256SUMS into OUT_DIR (replaced).
build_dist() {
    local target_dir out_dir work
    mkdir -p "$1" || fail "cannot create target dir $1"
    target_dir="$(cd "$1" && pwd)"
    out_dir="$2"
    for p in "$ROOT" "$CARGO_HOME_DIR" "$SYSROOT" "$target_dir"; do
        [[ "$p" != *[[:space:]]* ]] || fail "path '$p' contains white space (the C compiler's flags cannot carry it)"
    done

    # Linux objects are assembled with -Wa,--noexecstack: an object without a .note.GNU-stack
    # section (keccak-asm's keccak1600-x86_64) would give every program linking the library an
    # executable stack, and bindings/go/link.go no longer forces it off (tools/go-lib.sh does
    # the same).
    # Last matching rule wins: the target dir (often inside the source tree) comes last.
    local prefixes=("$ROOT=/pora" "$CARGO_HOME_DIR=/cargo" "$SYSROOT=/rustc-sysroot" "$target_dir=/target")
    local rustflags=() cflags=() rule
    for rule in "${prefixes[@]}"; do
        rustflags+=("--remap-path-prefix=$rule")
        cflags+=("-ffile-prefix-map=$rule")
    done

    local target bin flags
    for target in "$LINUX_TARGET" "$WIN_TARGET"; do
        flags=("${rustflags[@]}")
        # GNU ld stamps PE files with the link time unless told not to.
        [ "$target" != "$WIN_TARGET" ] || flags+=("-Clink-arg=-Wl,--no-insert-timestamp")
        step "cargo build --release --locked --target $target -p ${PACKAGES[*]} (target dir $target_dir)"
        CARGO_TARGET_DIR="$target_dir" \
            CARGO_ENCODED_RUSTFLAGS="$(IFS=$'\x1f'; echo "${flags[*]}")" \
            CC_x86_64_unknown_linux_musl=musl-gcc \
            CFLAGS_x86_64_unknown_linux_musl="${cflags[*]} -Wa,--noexecstack" \
            CC_x86_64_pc_windows_gnu=x86_64-w64-mingw32-gcc \
            CFLAGS_x86_64_pc_windows_gnu="${cflags[*]}" \
            CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER="$ROOT/tools/dist-link-windows.sh" \
            PORA_DIST_TARGET_DIR="$target_dir" PORA_DIST_CARGO_HOME="$CARGO_HOME_DIR" PORA_DIST_SYSROOT="$SYSROOT" \
            cargo build --release --locked --target "$target" "${PKG_ARGS[@]}" \
            || fail "cargo build --release --target $target failed"
    done
    # Only the static library (`cargo rustc --crate-type staticlib`): the crate's cdylib would
    # need each target's linker (none here for macOS). The workspace's [profile.release], as the
    # musl and windows-gnu builds and the benchmarks; --quick only: LTO off, 16 codegen units, no
    # debug info (faster to build, slower to run: never a release).
    local quick_env=()
    ((quick == 0)) || quick_env=(CARGO_PROFILE_RELEASE_LTO=off CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16)
    for target in "${BUILT_LIB_TARGETS[@]}"; do
        step "cargo rustc --release --locked --target $target -p pora-ffi --crate-type staticlib ($(profile_of "$target"); target dir $target_dir)"
        env "${quick_env[@]}" \
            CARGO_TARGET_DIR="$target_dir" \
            CARGO_ENCODED_RUSTFLAGS="$(IFS=$'\x1f'; echo "${rustflags[*]}")" \
            CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc \
            CFLAGS_aarch64_unknown_linux_gnu="${cflags[*]} -Wa,--noexecstack" \
            CFLAGS_x86_64_unknown_linux_gnu="${cflags[*]} -Wa,--noexecstack" \
            CC_x86_64_apple_darwin=clang AR_x86_64_apple_darwin="$LLVM_BIN/llvm-ar" \
            CFLAGS_x86_64_apple_darwin="${cflags[*]} --target=x86_64-apple-macos10.12" \
            CC_aarch64_apple_darwin=clang AR_aarch64_apple_darwin="$LLVM_BIN/llvm-ar" \
            CFLAGS_aarch64_apple_darwin="${cflags[*]} --target=arm64-apple-macos11" \
            SDKROOT=/var/empty/no-apple-sdk \
            cargo rustc --release --locked --target "$target" -p pora-ffi --lib --crate-type staticlib \
            || fail "cargo rustc --release --target $target -p pora-ffi --crate-type staticlib failed"
    done

    work="$(mktemp -d "${TMPDIR:-/tmp}/pora-dist.XXXXXX")"
    local name stage
    for target in "$LINUX_TARGET" "$WIN_TARGET"; do
        bin=pora
        [ "$target" != "$WIN_TARGET" ] || bin=pora.exe
        name="pora-$VERSION-$target"
        stage="$work/$name"
        step "staging $name"
        mkdir -p "$stage"
        local built="$target_dir/$target/release"
        [ -f "$built/$bin" ] || fail "the build left no $built/$bin"
        cp "$built/$bin" "$stage/"
        strip_lib "$built/libpora_ffi.a" "$stage/libpora_ffi.a"
        write_pc "$stage/pora.pc" "$target" '${pcfiledir}'
        echo "$target  $(go_dir "$target")  $(stat -c %s "$stage/libpora_ffi.a")  $(sha256sum <"$stage/libpora_ffi.a" | cut -d' ' -f1)  $(profile_of "$target")" \
            >"$stage/TARGETS.txt"
        if [ "$target" = "$WIN_TARGET" ]; then
            # rustc names the import libraries it makes for raw-dylib imports after their path
            # (target/.../deps/rustcXXXXXX/, a random temp dir), and ld copies those names into
            # the executable's COFF symbol table (_head_<path>..., __<path>..._iname): drop
            # them. The loaded sections stay as linked; SOURCE_DATE_EPOCH=0 keeps the PE
            # header's time 0, as the linker left it.
            SOURCE_DATE_EPOCH=0 x86_64-w64-mingw32-objcopy --wildcard \
                --strip-symbol='_head_*_imports_lib' --strip-symbol='*_imports_lib_iname' "$stage/$bin" \
                || fail "objcopy could not drop the import libraries' path symbols from $stage/$bin"
        fi
        for f in "$stage/$bin" "$stage/libpora_ffi.a"; do
            # No absolute build path may be embedded, as is or with / . - turned into _ (symbol
            # names made from paths); remap-path-prefix missed one otherwise.
            local leaks patterns=()
            for p in "$ROOT" "$CARGO_HOME_DIR" "$SYSROOT" "$target_dir"; do
                patterns+=(-e "$p" -e "$(sed 's/[^A-Za-z0-9]/_/g' <<<"$p")")
            done
            leaks="$(strings -a "$f" | grep -F "${patterns[@]}" | sort -u | head -5 || true)"
            [ -z "$leaks" ] || fail "$f embeds build paths, e.g.:"$'\n'"$leaks"
        done
        cp crates/pora-ffi/include/pora.h README.md LICENSE-MIT LICENSE-APACHE "$stage/" \
            || fail "copying pora.h, README.md and the licences into $stage failed"
        cp "$RUST_STD_NOTICES" "$stage/COPYRIGHT-rust-std.html"
        python3 tools/third_party_licenses.py --target "$target" "${PACKAGES[@]/#/--package=}" \
            --out "$stage/THIRD-PARTY-LICENSES.txt" || fail "writing THIRD-PARTY-LICENSES.txt for $target failed"
        cat >"$stage/BUILDINFO.txt" <<EOF
pora $VERSION for $target
commit: $COMMIT
rustc: $RUSTC_VERSION
SOURCE_DATE_EPOCH: $EPOCH
build: cargo build --release --locked --target $target -p pora -p pora-ffi
       (the workspace's [profile.release], default features: no sim)
profile: pora and libpora_ffi.a: $(profile_of "$target") (the library stripped of debug info)
rebuild: git checkout $COMMIT && tools/dist.sh (same rustc and C toolchains; docs/release.md)
EOF
        find "$stage" -type d -exec chmod 0755 {} +
        find "$stage" -type f -exec chmod 0644 {} +
        chmod 0755 "$stage/$bin"
        find "$stage" -exec touch -h -d "@$EPOCH" {} +
    done

    stage_go_module "$work" "$target_dir"

    rm -rf "$out_dir"
    mkdir -p "$out_dir"
    out_dir="$(cd "$out_dir" && pwd)"
    local tgz="pora-$VERSION-$LINUX_TARGET.tar.gz" zip="pora-$VERSION-$WIN_TARGET.zip"
    step "writing $out_dir/$tgz"
    (cd "$work" && tar --create --format=ustar --sort=name --owner=0 --group=0 --numeric-owner \
        --mtime="@$EPOCH" --file=- "pora-$VERSION-$LINUX_TARGET") | gzip -9 -n >"$out_dir/$tgz" \
        || fail "writing $tgz failed"
    step "writing $out_dir/$zip"
    python3 - "$work" "pora-$VERSION-$WIN_TARGET" "$EPOCH" "$out_dir/$zip" <<'EOF' || fail "writing $zip failed"
# Deterministic zip: sorted entries, one fixed date (the commit's, UTC), Unix modes, no extra fields.
import os, sys, time, zipfile
base, top, epoch, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
date = max(time.gmtime(epoch)[:6], (1980, 1, 1, 0, 0, 0))
paths = []
for d, dirs, files in os.walk(os.path.join(base, top)):
    rel = os.path.relpath(d, base).replace(os.sep, "/")
    paths.append(rel + "/")
    paths += [rel + "/" + f for f in files]
with zipfile.ZipFile(out, "w") as z:
    for p in sorted(paths):
        info = zipfile.ZipInfo(p, date_time=date)
        info.create_system = 3  # Unix: the mode below is meaningful
        full = os.path.join(base, p)
        mode = os.stat(full).st_mode & 0o777
        if p.endswith("/"):
            info.external_attr = (0o040000 | mode) << 16 | 0x10
            z.writestr(info, b"")
        else:
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            with open(full, "rb") as f:
                z.writestr(info, f.read(), compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
EOF
    local gotgz="pora-$VERSION$GO_NAME_SUFFIX-go.tar.gz"
    step "writing $out_dir/$gotgz"
    (cd "$work" && tar --create --format=ustar --sort=name --owner=0 --group=0 --numeric-owner \
        --mtime="@$EPOCH" --file=- "pora-$VERSION$GO_NAME_SUFFIX-go") | gzip -9 -n >"$out_dir/$gotgz" \
        || fail "writing $gotgz failed"
    # The same module in the module proxy's layout (<module>/@v/list, .info, .mod, .zip with the
    # libraries inside, GOSUM.txt): served as a GOPROXY, or given as GOPROXY=file://..., it lets
    # a consumer (es-node) build from a plain `require` with no replace (docs/release.md).
    local proxytgz="pora-$VERSION$GO_NAME_SUFFIX-goproxy.tar.gz" proxydir="pora-$VERSION$GO_NAME_SUFFIX-goproxy"
    step "writing $out_dir/$proxytgz (tools/go-proxy.py: $MODULE_PATH v$VERSION)"
    python3 tools/go-proxy.py "$work/pora-$VERSION$GO_NAME_SUFFIX-go" "$MODULE_PATH" "v$VERSION" "$work/$proxydir" \
        || fail "writing the module proxy tree failed"
    find "$work/$proxydir" -type d -exec chmod 0755 {} +
    find "$work/$proxydir" -type f -exec chmod 0644 {} +
    find "$work/$proxydir" -exec touch -h -d "@$EPOCH" {} +
    (cd "$work" && tar --create --format=ustar --sort=name --owner=0 --group=0 --numeric-owner \
        --mtime="@$EPOCH" --file=- "$proxydir") | gzip -9 -n >"$out_dir/$proxytgz" \
        || fail "writing $proxytgz failed"
    cp "$work/pora-$VERSION$GO_NAME_SUFFIX-go/TARGETS.txt" "$out_dir/TARGETS.txt"
    (cd "$out_dir" && sha256sum "$tgz" "$zip" "$gotgz" "$proxytgz" >SHA256SUMS) || fail "writing SHA256SUMS failed"
    rm -rf "$work"
    step "wrote $out_dir: $(cd "$out_dir" && ls | tr '\n' ' ')"
}

if [ "$mode" = build ]; then
    build_dist "${CARGO_TARGET_DIR:-$ROOT/target}" "$ROOT/dist"
    (cd "$ROOT/dist" && sha256sum -c --quiet SHA256SUMS) || fail "sha256sum -c SHA256SUMS fails in dist/"
    cat "$ROOT/dist/SHA256SUMS"
    step "done: pora $VERSION, commit $COMMIT"
    exit 0
fi

# --- --check-reproducible: two fresh target dirs at different absolute paths ---
base="$(mktemp -d "${TMPDIR:-/tmp}/pora-repro.XXXXXX")"
step "reproducibility check in $base (two full builds)"
t0=$(date +%s)
build_dist "$base/one/target" "$base/one/dist"
t1=$(date +%s)
build_dist "$base/two/another-target" "$base/two/dist"
t2=$(date +%s)
echo "dist.sh: build one $((t1 - t0)) s, build two $((t2 - t1)) s" >&2
same=1
for f in $(cd "$base/one/dist" && ls); do
    a="$(sha256sum <"$base/one/dist/$f" | cut -d' ' -f1)"
    b="$(sha256sum <"$base/two/dist/$f" 2>/dev/null | cut -d' ' -f1 || true)"
    echo "$f"
    echo "  build one ($base/one/target):         $a"
    echo "  build two ($base/two/another-target): $b"
    if ! cmp -s "$base/one/dist/$f" "$base/two/dist/$f"; then
        same=0
        echo "  DIFFERENT"
    fi
done
if [ "$same" -ne 1 ]; then
    fail "the two builds differ; both kept under $base for comparison (e.g. diffoscope $base/one/dist $base/two/dist)"
fi
rm -rf "$ROOT/dist"
cp -r "$base/one/dist" "$ROOT/dist"
rm -rf "$base"
echo "dist.sh: reproducible: both builds of commit $COMMIT gave byte-identical archives (dist/ holds them)"
