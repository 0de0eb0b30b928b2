# Sourced by the .ci legs (not run alone), right after `set -euo pipefail`: ROOT (the repository,
# made the working directory), `step MESSAGE` and `fail MESSAGE` naming the leg and the seconds
# since it started, and `install_missing PACKAGE...` (apt-get, through sudo when not root).
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
START_S=$(date +%s)
LEG="$(basename "$0")"

step() { echo "== $LEG: $* ($(($(date +%s) - START_S)) s)" >&2; }
fail() {
    echo "$LEG: FAIL: $*" >&2
    exit 1
}

# Installs the given Debian packages (none: nothing to do); a failure fails the leg.
install_missing() {
    (($#)) || return 0
    step "installing $*"
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || fail "need root or sudo to install $*"
        sudo=(sudo)
    fi
    "${sudo[@]}" apt-get update -qq || fail "apt-get update failed; cannot install $*"
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null \
        || fail "apt-get install $* failed"
}
