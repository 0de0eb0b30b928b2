#!/usr/bin/env bash
# Release CI leg (called by .ci/run after .ci/windows.sh): builds the release archives once with
# tools/dist.sh (the release command itself, every library the workspace's [profile.release]; with
# PORA_DIST_QUICK=1, `tools/dist.sh --quick` instead, whose Go archive is named and marked QUICK),
# checks dist/SHA256SUMS and that TARGETS.txt and BUILDINFO.txt name each library's profile (no
# QUICK library in a release build), then extracts each archive into an empty temp folder and
# smoke-tests what a miner downloads:
#   Linux (tar.gz): the expected files owned by 0/0; pora statically linked (file, ldd);
#     `env -i ./pora --version`; `env -i ./pora mine --demo` (the README's first command: makes
#     ./pora-demo and mines one slot); the simulated disk is left out of the build;
#     libpora_ffi.a exports pora_open (objdump); bindings/c's example compiled with
#     `musl-gcc -static` against the archive's pora.h + libpora_ffi.a (and the Rust toolchain's
#     musl libc and libunwind: see c_linux_ok), and run.
#   Windows (zip, under Wine): the expected files; pora.exe imports only system DLLs;
#     `pora.exe --version`; `pora.exe mine --demo`; libpora_ffi.a exports pora_open; the C example
#     linked with mingw against the zip's pora.h + libpora_ffi.a, run under Wine.
# Reuses the Wine prefix (with the bcryptprimitives.dll stand-in) that .ci/windows.sh makes at
# ${CARGO_TARGET_DIR:-target}/wine-prefix. Each check is counted and every program it runs has a
# timeout; the last line is "dist.sh: N passed, M failed". Any failed step or check fails the leg
# (non-zero exit, "dist.sh: FAIL: ..."); nothing passes by being skipped. Builds once (the
# reproducibility check, two builds, is `tools/dist.sh --check-reproducible`, run by hand).
set -euo pipefail

# shellcheck source=.ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export LC_ALL=C
LINUX_TARGET=x86_64-unknown-linux-musl
WIN_TARGET=x86_64-pc-windows-gnu

# --- packages: musl-gcc, file, binutils (strings, objdump); mingw and Wine come with .ci/windows.sh ---
missing=()
command -v musl-gcc >/dev/null || missing+=(musl-tools)
command -v file >/dev/null || missing+=(file)
command -v strings >/dev/null || missing+=(binutils)
command -v python3 >/dev/null || missing+=(python3)
command -v pkg-config >/dev/null || missing+=(pkg-config)
command -v aarch64-linux-gnu-gcc >/dev/null || missing+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
command -v qemu-aarch64 >/dev/null || missing+=(qemu-user)
command -v clang >/dev/null || missing+=(clang)
command -v unzip >/dev/null || missing+=(unzip)
install_missing "${missing[@]}"
for tool in musl-gcc file objdump strings python3 pkg-config aarch64-linux-gnu-gcc qemu-aarch64 go x86_64-w64-mingw32-gcc x86_64-w64-mingw32-objdump wine; do
    command -v "$tool" >/dev/null || fail "'$tool' not found (mingw and Wine are installed by .ci/windows.sh)"
done
step "rustup target add $LINUX_TARGET $WIN_TARGET; rustup component add llvm-tools"
rustup target add "$LINUX_TARGET" "$WIN_TARGET" >/dev/null 2>&1 || fail "rustup target add $LINUX_TARGET $WIN_TARGET failed"
rustup component add llvm-tools >/dev/null 2>&1 || fail "rustup component add llvm-tools failed (tools/dist.sh strips the libraries with its llvm-objcopy)"
# The Go module's other library targets: one that cannot be installed is a SKIP line naming it
# and rustup's answer (tools/dist.sh then leaves it out of the archive), never a silent pass.
for t in x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-apple-darwin aarch64-apple-darwin; do
    if ! answer="$(rustup target add "$t" 2>&1)"; then
        echo "SKIP: $t: rustup target add $t failed: $(tail -n 1 <<<"$answer")"
    fi
done

# --- the Wine prefix .ci/windows.sh made: checked before the long build ---
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
mkdir -p "$TARGET_DIR"
TARGET_DIR="$(cd "$TARGET_DIR" && pwd)"
export WINEPREFIX="$TARGET_DIR/wine-prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
unset DISPLAY WAYLAND_DISPLAY
[ -f "$WINEPREFIX/system.reg" ] \
    || fail "no Wine prefix at $WINEPREFIX: run .ci/windows.sh first (it creates the prefix and installs the bcryptprimitives.dll stand-in)"
[ -f "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll" ] \
    || fail "the Wine prefix $WINEPREFIX has no bcryptprimitives.dll stand-in (Rust programs exit with status 53 without it): run .ci/windows.sh first"

# --- build once ---
DIST_ARGS=()
GO_SUFFIX=""
if [ "${PORA_DIST_QUICK:-0}" = 1 ]; then
    DIST_ARGS=(--quick)
    GO_SUFFIX="-QUICK"
fi
step "tools/dist.sh ${DIST_ARGS[*]}"
build_s=$(date +%s)
bash tools/dist.sh "${DIST_ARGS[@]}" || fail "tools/dist.sh ${DIST_ARGS[*]} failed"
build_s=$(($(date +%s) - build_s))
VERSION="$(sed -n 's/^pora \([^ ]*\) for .*/\1/p' <(tar -xzOf dist/pora-*-"$LINUX_TARGET".tar.gz --wildcards '*/BUILDINFO.txt'))"
[ -n "$VERSION" ] || fail "cannot read the version from the Linux archive's BUILDINFO.txt"
COMMIT="$(git rev-parse --short=12 HEAD)"
TGZ="$ROOT/dist/pora-$VERSION-$LINUX_TARGET.tar.gz"
ZIP="$ROOT/dist/pora-$VERSION-$WIN_TARGET.zip"
[ -f "$TGZ" ] || fail "tools/dist.sh wrote no $TGZ"
[ -f "$ZIP" ] || fail "tools/dist.sh wrote no $ZIP"

# --- checks: each one counted, all run, any failure fails the leg at the end ---
passed=0
failed=0
failures=()
TMP="$(mktemp -d "${TMPDIR:-/tmp}/pora-dist-smoke.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
check() {
    local name="$1" log="$TMP/check.log"
    shift
    if ("$@") >"$log" 2>&1; then
        passed=$((passed + 1))
        echo "ok    $name"
        sed 's/^/      /' "$log" | tail -n 6
    else
        failed=$((failed + 1))
        failures+=("$name")
        echo "FAIL  $name"
        sed 's/^/      /' "$log" | tail -n 30
    fi
}

# The checks. Each returns non-zero on failure; check() runs it with errexit off, so every
# command that matters is chained with && or ends in `|| return 1`.
layout_ok() { # ARCHIVE_DIR TOP FILE...: ARCHIVE_DIR holds only TOP/, TOP holds exactly FILE...
    local dir="$1" top="$2"
    shift 2
    diff <(echo "$top") <(ls "$dir") || return 1
    diff <(printf '%s\n' "$@" | sort) <(cd "$dir/$top" && find . -mindepth 1 | sed 's|^\./||' | sort)
}
version_ok() { # OUTPUT: "pora <version>..."; a commit, if one is printed, is this one
    echo "$1"
    [[ "$1" == "pora $VERSION"* ]] || { echo "expected 'pora $VERSION ...'"; return 1; }
    local hex
    hex="$(grep -oE '\b[0-9a-f]{12,40}\b' <<<"$1" || true)"
    if [ -n "$hex" ] && ! grep -q "^$COMMIT" <<<"$hex"; then
        echo "prints commit $hex, built from $COMMIT"
        return 1
    fi
}
sums_ok() { (cd "$ROOT/dist" && sha256sum -c SHA256SUMS); }
owners_ok() { # every tar entry is 0/0
    local bad
    tar -tvzf "$1" | head -n 3
    bad="$(tar -tvzf "$1" | grep -v ' 0/0 ' || true)"
    [ -z "$bad" ] || { echo "not owned by 0/0: $bad"; return 1; }
}
static_file_ok() { file "$1" && grep -qE 'statically linked|static-pie linked' <<<"$(file "$1")"; }
static_ldd_ok() {
    local out
    out="$(ldd "$1" 2>&1 || true)"
    echo "$out"
    grep -qE 'statically linked|not a dynamic executable' <<<"$out"
}
linux_version_ok() { local out; out="$(cd "$1" && timeout 60 env -i ./pora --version)" || return 1; version_ok "$out"; }
demo_ok() { # DIR: the demo shard is there
    [ -f "$1/pora-demo/shard0.dat" ] || { echo "no $1/pora-demo/shard0.dat"; return 1; }
    ls -l "$1/pora-demo/shard0.dat"
}
linux_demo_ok() {
    (cd "$1" && timeout 300 env -i ./pora mine --demo) >"$TMP/demo.log" 2>&1 || { tail -n 30 "$TMP/demo.log"; return 1; }
    tail -n 8 "$TMP/demo.log"
    demo_ok "$1"
}
no_sim_ok() { # a production build refuses the simulated disk, naming the feature
    local out
    if out="$(cd "$1" && timeout 300 env -i ./pora mine --demo --method sim 2>&1)"; then
        echo "$out" | tail -n 5
        echo "pora mine --method sim ran: the build has the sim feature"
        return 1
    fi
    echo "$out" | tail -n 2
    grep -q 'sim' <<<"$out" && grep -qiE 'unavailable|feature' <<<"$out"
}
# objdump, not nm: nm loads the system's LLVM LTO plugin (bfd-plugins), which fails on rustc's
# newer bitcode sections and then reports "no symbols" for every object of the library.
linux_exports_ok() { # LIB: pora_open is a defined global function
    objdump -t "$1" 2>/dev/null | grep -E '^[0-9a-f]+ g +F \.text[^ ]*[[:space:]]+[0-9a-f]+ pora_open$'
}
windows_exports_ok() { # LIB: pora_open is defined (section >= 1) and external (storage class 2)
    x86_64-w64-mingw32-objdump -t "$1" 2>/dev/null | grep -E '\(sec +[1-9][0-9]*\).*\(scl +2\).* pora_open$'
}
# Debian's musl-gcc is musl 1.2.3 (no statx, which pora-io calls; musl has it since 1.2.5) and
# borrows the glibc build's libgcc_eh, so the example links the musl libc and libunwind of the
# Rust toolchain (the runtime the static pora carries) ahead of them: -L self-contained -lunwind.
MUSL_SELF_CONTAINED="$(rustc --print sysroot)/lib/rustlib/$LINUX_TARGET/lib/self-contained"
c_linux_ok() { # WORKDIR ARCHIVE_DIR
    cd "$1" || return 1
    musl-gcc -static -std=c99 -Wall -Wextra -Werror -O1 -I"$2" pora_example.c "$2/libpora_ffi.a" \
        -L"$MUSL_SELF_CONTAINED" -lunwind -Wl,-z,noexecstack -o pora_example || return 1
    file pora_example
    timeout 300 env -i ./pora_example
}
win_dlls_ok() {
    local dlls
    dlls="$(x86_64-w64-mingw32-objdump -p "$1" | sed -n 's/^\tDLL Name: //p')"
    echo $dlls
    [ -n "$dlls" ] || { echo "objdump found no DLL imports"; return 1; }
    ! grep -iE 'libgcc|winpthread|libstdc|pora' <<<"$dlls"
}
wine_version_ok() {
    local out
    out="$(cd "$1" && timeout 300 wine ./pora.exe --version 2>/dev/null | tr -d '\r'; exit "${PIPESTATUS[0]}")" || return 1
    version_ok "$out"
}
wine_demo_ok() {
    (cd "$1" && timeout 600 wine ./pora.exe mine --demo) >"$TMP/demo.log" 2>&1 || { tr -d '\r' <"$TMP/demo.log" | tail -n 30; return 1; }
    tr -d '\r' <"$TMP/demo.log" | tail -n 8
    demo_ok "$1"
}
c_windows_ok() { # WORKDIR ARCHIVE_DIR
    cd "$1" || return 1
    x86_64-w64-mingw32-gcc -std=c99 -Wall -Wextra -Werror -O1 -I"$2" pora_example.c "$2/libpora_ffi.a" \
        -lws2_32 -luserenv -lntdll -lbcrypt -ladvapi32 -lkernel32 -o pora_example.exe || return 1
    timeout 300 wine ./pora_example.exe
}

C_EXAMPLE="$ROOT/bindings/c/pora_example.c"
[ -f "$C_EXAMPLE" ] || fail "no $C_EXAMPLE"
COMMON=(pora.h pora.pc TARGETS.txt README.md LICENSE-MIT LICENSE-APACHE THIRD-PARTY-LICENSES.txt COPYRIGHT-rust-std.html BUILDINFO.txt libpora_ffi.a)

step "smoke checks"
check "sha256sum -c SHA256SUMS (in dist/)" sums_ok

# Linux: extracted into an empty folder
L="$TMP/linux"
mkdir -p "$L"
tar -xzf "$TGZ" -C "$L" || fail "extracting $TGZ failed"
LD="$L/pora-$VERSION-$LINUX_TARGET"
check "tar.gz: one folder $(basename "$LD") holding the expected files" layout_ok "$L" "$(basename "$LD")" pora "${COMMON[@]}"
check "tar.gz: every entry owned by 0/0" owners_ok "$TGZ"
check "pora is statically linked (file)" static_file_ok "$LD/pora"
check "pora is statically linked (ldd)" static_ldd_ok "$LD/pora"
check "env -i ./pora --version" linux_version_ok "$LD"
check "env -i ./pora mine --demo (creates ./pora-demo, mines one slot)" linux_demo_ok "$LD"
check "production build: --method sim is refused (no simulated disk)" no_sim_ok "$LD"
check "libpora_ffi.a (musl) exports pora_open (objdump -t)" linux_exports_ok "$LD/libpora_ffi.a"
mkdir -p "$TMP/c-linux"
cp "$C_EXAMPLE" "$TMP/c-linux/"
check "C example: musl-gcc -static with the archive's pora.h + libpora_ffi.a (+ the toolchain's musl, libunwind), run" c_linux_ok "$TMP/c-linux" "$LD"

# Windows: extracted into an empty folder, run under Wine
W="$TMP/windows"
mkdir -p "$W"
python3 -m zipfile -e "$ZIP" "$W" || fail "extracting $ZIP failed"
WD="$W/pora-$VERSION-$WIN_TARGET"
check "zip: one folder $(basename "$WD") holding the expected files" layout_ok "$W" "$(basename "$WD")" pora.exe "${COMMON[@]}"
check "pora.exe imports only Windows system DLLs (no MinGW runtime DLL to ship)" win_dlls_ok "$WD/pora.exe"
check "wine pora.exe --version" wine_version_ok "$WD"
check "wine pora.exe mine --demo (creates .\\pora-demo, mines one slot)" wine_demo_ok "$WD"
check "libpora_ffi.a (windows-gnu) exports pora_open (objdump -t)" windows_exports_ok "$WD/libpora_ffi.a"
mkdir -p "$TMP/c-windows"
cp "$C_EXAMPLE" "$TMP/c-windows/"
check "C example: mingw with the zip's pora.h + libpora_ffi.a, run under Wine" c_windows_ok "$TMP/c-windows" "$WD"

# --- the Go module archive and a consumer built from it alone, with no Rust toolchain on PATH ---
GO_TGZ="$ROOT/dist/pora-$VERSION$GO_SUFFIX-go.tar.gz"
[ -f "$GO_TGZ" ] || fail "tools/dist.sh ${DIST_ARGS[*]} wrote no $GO_TGZ"
G="$TMP/go-module"
mkdir -p "$G"
tar -xzf "$GO_TGZ" -C "$G" || fail "extracting $GO_TGZ failed"
GM="$G/pora-$VERSION$GO_SUFFIX-go"
MODULE="$(sed -n 's/^module //p' "$GM/go.mod")"
[ "$MODULE" = "$(sed -n 's/^module //p' "$ROOT/bindings/go/go.mod")" ] || fail "the Go archive's module path '$MODULE' is not bindings/go/go.mod's"
go_targets_ok() { # TARGETS.txt names each library the archive holds, with its true size and profile
    cat "$GM/TARGETS.txt"
    local n=0 target dir size sum profile extra
    while read -r target dir size sum profile extra; do
        [[ "$target" == \#* || "$target" == pora || "$target" == SKIP: ]] && continue
        [ "$(stat -c %s "$GM/lib/$dir/libpora_ffi.a")" = "$size" ] || { echo "$dir: size differs from TARGETS.txt"; return 1; }
        [ "$(sha256sum <"$GM/lib/$dir/libpora_ffi.a" | cut -d' ' -f1)" = "$sum" ] || { echo "$dir: sha256 differs"; return 1; }
        [ -z "$extra" ] || { echo "$dir: more than five columns"; return 1; }
        case "$profile" in
            "release("*")") ;;
            QUICK*) [ -n "$GO_SUFFIX" ] || { echo "$dir: a QUICK library in the release build"; return 1; } ;;
            *) echo "$dir: no profile column ('$profile')"; return 1 ;;
        esac
        grep -qF "$target" "$GM/BUILDINFO.txt" && grep -F "$target" "$GM/BUILDINFO.txt" | grep -F "$profile" >/dev/null \
            || { echo "BUILDINFO.txt does not name $target's profile $profile"; return 1; }
        n=$((n + 1))
    done <"$GM/TARGETS.txt"
    for dir in linux_amd64 linux_amd64_musl windows_amd64; do
        grep -q "  $dir  " "$GM/TARGETS.txt" || { echo "TARGETS.txt lists no $dir"; return 1; }
    done
    [ "$(find "$GM/lib" -name libpora_ffi.a | wc -l)" = "$n" ] || { echo "lib/ holds libraries TARGETS.txt does not list"; return 1; }
}
go_layout_ok() { # the module's sources, pora.h, a .pc per library, no test files, no sim library
    [ -f "$GM/go.mod" ] && [ -f "$GM/link.go" ] && [ -f "$GM/include/pora.h" ] || { echo "no go.mod, link.go or include/pora.h"; return 1; }
    cmp "$GM/include/pora.h" "$LD/pora.h" || return 1
    ! find "$GM" -name '*_test.go' | grep . || { echo "test files in the module archive"; return 1; }
    [ ! -e "$GM/lib/sim" ] || { echo "the archive carries the tests' sim library"; return 1; }
    local dir
    for dir in $(cd "$GM/lib" && ls); do
        PKG_CONFIG_PATH="$GM/pkgconfig" pkg-config --libs "pora-$dir" | grep "lib/$dir/libpora_ffi.a" >/dev/null || { echo "pkgconfig/pora-$dir.pc does not name lib/$dir/libpora_ffi.a"; return 1; }
    done
}
check "go.tar.gz: TARGETS.txt lists every library with its size, SHA-256 and profile (BUILDINFO.txt too)" go_targets_ok
check "go.tar.gz: module sources, pora.h, a pkg-config file per library, no tests, no sim" go_layout_ok

# The module proxy tree (pora-<version>-goproxy.tar.gz): the Go module in the proxy's own layout.
PROXY_TGZ="$ROOT/dist/pora-$VERSION$GO_SUFFIX-goproxy.tar.gz"
[ -f "$PROXY_TGZ" ] || fail "no $PROXY_TGZ"
tar -xzf "$PROXY_TGZ" -C "$G" || fail "cannot extract $PROXY_TGZ"
GP="$G/pora-$VERSION$GO_SUFFIX-goproxy"
goproxy_layout_ok() { # list, .info, .mod, .zip (the libraries inside, under module@version/), GOSUM.txt
    local v="$GP/$MODULE/@v" ver="v$VERSION" dir entries
    [ "$(cat "$v/list")" = "$ver" ] || { echo "@v/list is not $ver"; return 1; }
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["Version"]==sys.argv[2] and d["Time"].endswith("Z"), d' "$v/$ver.info" "$ver" || return 1
    cmp -s "$v/$ver.mod" "$GM/go.mod" || { echo "$ver.mod is not the module's go.mod"; return 1; }
    # The listing is read once into a variable: `unzip -Z1 | grep -q` under pipefail fails at random
    # when grep exits on its match while unzip still writes (SIGPIPE, 141), as CI met once.
    entries="$(unzip -Z1 "$v/$ver.zip")" || { echo "unzip -Z1 $ver.zip failed"; return 1; }
    for dir in $(cd "$GM" && find lib -name libpora_ffi.a); do
        grep -qx "$MODULE@$ver/$dir" <<<"$entries" || { echo "the zip has no $dir"; return 1; }
    done
    ! grep -v "^$MODULE@$ver/" <<<"$entries" || { echo "zip entries outside $MODULE@$ver/"; return 1; }
    [ "$(wc -l <"$GP/GOSUM.txt")" = 2 ] && grep -q "^$MODULE $ver h1:" "$GP/GOSUM.txt" || { echo "GOSUM.txt has not the two h1 lines"; return 1; }
    echo "$(grep -c '/libpora_ffi\.a$' <<<"$entries") libraries in $ver.zip"
}
check "goproxy.tar.gz: @v/list, .info, .mod, .zip with every library under $MODULE@v$VERSION/, GOSUM.txt" goproxy_layout_ok

# The consumer: a fresh module outside the repository with a plain `require $MODULE v$VERSION`
# (no replace), fetched through GOPROXY=file://<the release's proxy tree> as es-node would fetch
# it from a served proxy; go.sum holds the release's GOSUM.txt lines, so the downloaded zip is
# checked against them (GOSUMDB=off only because the public checksum database does not know
# this build). PATH keeps no directory holding cargo or rustc.
C="$TMP/consumer"
case "$C/" in "$ROOT"/*) fail "the consumer module $C is inside the repository" ;; esac
mkdir -p "$C"
sed "s|@MODULE@|$MODULE|" "$ROOT/.ci/go-consumer/consumer_test.go.tmpl" >"$C/consumer_test.go"
cat >"$C/go.mod" <<EOF
module example.com/pora-consumer

go 1.19

require $MODULE v$VERSION
EOF
cp "$GP/GOSUM.txt" "$C/go.sum"
! grep -q replace "$C/go.mod" || fail "the consumer's go.mod has a replace"
# shellcheck source=tools/path-without-rust.sh
source "$ROOT/tools/path-without-rust.sh"
NORUST_PATH="$(path_without_rust)"
VECTOR_FILES=("$ROOT/testdata/esnode-sample.json" "$ROOT/testdata/esnode-encode.json")
GOENV_CONSUMER=(env PATH="$NORUST_PATH" GOTOOLCHAIN=local GOPROXY="file://$GP" GOSUMDB=off GOFLAGS=-mod=mod GOCACHE="${GOCACHE:-$TARGET_DIR/go-cache}" GOPATH="$TMP/gopath")
norust_ok() { # the PATH the consumer builds with has no Rust toolchain
    "${GOENV_CONSUMER[@]}" sh -c 'command -v cargo || command -v rustc' && { echo "cargo or rustc is on the consumer's PATH"; return 1; }
    echo "PATH=$NORUST_PATH: no cargo, no rustc"
}
consumer_linux_ok() {
    cd "$C" || return 1
    "${GOENV_CONSUMER[@]}" go vet . || return 1
    mkdir -p "$TMP/consumer-tmp"
    "${GOENV_CONSUMER[@]}" PORA_VECTORS="$(IFS=:; echo "${VECTOR_FILES[*]}")" PORA_CONSUMER_TMP="$TMP/consumer-tmp" \
        timeout 900 go test -count=1 -v . | tee "$TMP/consumer-linux.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] && grep -q '^--- PASS: TestEsNodeVectorsThroughHashAndEngine' "$TMP/consumer-linux.log"
}
consumer_windows_ok() {
    cd "$C" || return 1
    "${GOENV_CONSUMER[@]}" GOOS=windows GOARCH=amd64 CGO_ENABLED=1 CC=x86_64-w64-mingw32-gcc go test -c -o consumer.exe . || return 1
    local vectors="" f
    for f in "${VECTOR_FILES[@]}"; do vectors="${vectors:+$vectors;}$(winepath -w "$f" 2>/dev/null)"; done
    mkdir -p "$TMP/consumer-tmp-win"
    PORA_VECTORS="$vectors" PORA_CONSUMER_TMP="$(winepath -w "$TMP/consumer-tmp-win" 2>/dev/null)" timeout 900 wine ./consumer.exe -test.v -test.count=1 2>/dev/null | tr -d '\r' | tee "$TMP/consumer-windows.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] && grep -q '^--- PASS: TestEsNodeVectorsThroughHashAndEngine' "$TMP/consumer-windows.log"
}
consumer_arm64_ok() {
    cd "$C" || return 1
    "${GOENV_CONSUMER[@]}" GOOS=linux GOARCH=arm64 CGO_ENABLED=1 CC=aarch64-linux-gnu-gcc go test -c -o consumer.arm64 . || return 1
    file consumer.arm64
    mkdir -p "$TMP/consumer-tmp-arm64"
    PORA_VECTORS="$(IFS=:; echo "${VECTOR_FILES[*]}")" PORA_CONSUMER_TMP="$TMP/consumer-tmp-arm64" PORA_CONSUMER_METHOD=pread QEMU_LD_PREFIX=/usr/aarch64-linux-gnu \
        timeout 1200 qemu-aarch64 ./consumer.arm64 -test.v -test.count=1 | tee "$TMP/consumer-arm64.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] && grep -q '^--- PASS: TestEsNodeVectorsThroughHashAndEngine' "$TMP/consumer-arm64.log"
}
check "the consumer's PATH has no cargo or rustc" norust_ok
check "Go consumer (linux/amd64): requires $MODULE from the archive, es-node vectors and an Engine slot" consumer_linux_ok
check "Go consumer (windows/amd64): cross-built with mingw from the archive, run under Wine" consumer_windows_ok
if [ -f "$GM/lib/linux_arm64/libpora_ffi.a" ]; then
    check "Go consumer (linux/arm64): cross-built with aarch64-linux-gnu-gcc from the archive, run under qemu-aarch64" consumer_arm64_ok
else
    echo "SKIP: Go consumer (linux/arm64): the archive has no lib/linux_arm64 ($(grep 'aarch64-unknown-linux-gnu' "$GM/TARGETS.txt" || echo 'not in TARGETS.txt'))"
fi
gosum_checked_ok() { # go.sum still holds exactly the release's lines: go checked the zip, wrote nothing else
    diff "$GP/GOSUM.txt" "$C/go.sum"
}
check "Go consumer: go.sum is the release's GOSUM.txt after the build (the zip was checked against it)" gosum_checked_ok
darwin_ok() { # built here, never run here (no macOS): tools/check-darwin-lib.sh on the archive's copy
    bash "$ROOT/tools/check-darwin-lib.sh" "$GM/lib/$2/libpora_ffi.a" "$1"
}
for t in x86_64-apple-darwin:darwin_amd64 aarch64-apple-darwin:darwin_arm64; do
    if grep -q "^${t%:*} " "$GM/TARGETS.txt"; then
        check "go.tar.gz: ${t%:*}: Mach-O of its architecture, every pora.h function, only libSystem symbols undefined" darwin_ok "${t%:*}" "${t#*:}"
    else
        echo "SKIP: ${t%:*}: $(grep "${t%:*}" "$GM/TARGETS.txt" || echo 'not built')"
    fi
done
echo "dist.sh: Go module targets: $(grep -vE '^(#|pora |SKIP)' "$GM/TARGETS.txt" | awk '{print $1 " " $3 " bytes"}' | paste -sd';' | sed 's/;/; /g')"

total_s=$(($(date +%s) - START_S))
echo "dist.sh: tools/dist.sh took ${build_s} s, the whole leg ${total_s} s"
if ((failed)); then
    echo "dist.sh: $passed passed, $failed failed"
    fail "$failed of $((passed + failed)) checks failed: $(printf '%s; ' "${failures[@]}")"
fi
echo "dist.sh: $passed passed, 0 failed"
