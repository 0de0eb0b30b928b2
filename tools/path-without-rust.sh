# shellcheck shell=bash
# Sourced by .ci/dist.sh and bench/shipped.sh: `path_without_rust` prints $PATH without the
# directories that hold cargo or rustc, for building from the Go module archive as a miner
# without Rust would (the archive's prebuilt libraries must be all that links).
path_without_rust() {
    local kept="" d
    local -a dirs
    IFS=: read -r -a dirs <<<"$PATH"
    for d in "${dirs[@]}"; do
        [ -n "$d" ] && { [ -e "$d/cargo" ] || [ -e "$d/rustc" ]; } && continue
        kept="${kept:+$kept:}$d"
    done
    printf '%s\n' "$kept"
}
