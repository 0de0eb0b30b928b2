#!/usr/bin/env bash
# ab-cached.sh BASE NEW [FILE]: two pora binaries mining the same shard held in the page cache,
# side by side: PAIRS pairs (default 6) per argument set, the order alternating per pair, each run
# one full slot of 1,048,576 nonces (the slot ends when every nonce is tried). Argument sets:
# `--method mmap` and no method at all (the smart default). Prints nonces/s and process CPU
# (user + system) per nonce for every run, then the median NEW/BASE ratio per argument set.
# FILE defaults to /tmp/pora-bench/shard0-1g.dat; it is read once first so it is cached.
# NONCES=N makes each run mine nonces 0..N in one 30 s slot instead (N = 20000000 is about 4 s of
# mining here): start-up then weighs less, and the pairs vary less than the 0.2 s slots do.
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 BASE NEW [FILE]   (env: PAIRS, NONCES)" >&2; exit 2; }
BASE=$1 NEW=$2 FILE=${3:-/tmp/pora-bench/shard0-1g.dat} PAIRS=${PAIRS:-6}
span=(--slot 12); [[ -n ${NONCES:-} ]] && span=(--nonces "0..$NONCES" --slot 30)
cat "$FILE" >/dev/null
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
run() { # label binary args...
  local label=$1 bin=$2; shift 2
  /usr/bin/time -f "%U %S" -o "$tmp/t" "$bin" mine --file "$FILE" "$@" --random-randao "${span[@]}" --json >"$tmp/j" 2>/dev/null
  python3 - "$tmp/j" "$tmp/t" "$label" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); user, sys_ = map(float, open(sys.argv[2]).read().split())
rate = d["noncesTried"] / d["elapsedSec"]
print("%s %.0f nonces/s  %.0f CPU ns/nonce  (%s %dx%d)" % (sys.argv[3], rate, (user + sys_) * 1e9 / d["noncesTried"], d["method"], d["threads"], d["depth"]))
PY
}
for set in "--method mmap" ""; do
  for pair in $(seq 1 "$PAIRS"); do
    order="base new"; [[ $((pair % 2)) == 0 ]] && order="new base"
    for who in $order; do
      bin=$BASE; [[ $who == new ]] && bin=$NEW
      # shellcheck disable=SC2086
      echo "[${set:-no method}] pair $pair $(run "$who" "$bin" $set)"
    done
  done
done | tee "$tmp/log"
# The log's rounds (bench/runlog.py) are "[SET] pair N": the new/base ratio of each, by SET.
PYTHONPATH="$BENCH${PYTHONPATH:+:$PYTHONPATH}" python3 -B - "$tmp/log" <<'PY'
import re, statistics, sys
from runlog import rounds
by_set = {}
for where, r in rounds(sys.argv[1]).items():
    s = re.match(r"\[(.*)\] pair ", where)[1]
    by_set.setdefault(s, []).append(r["new"] / r["base"])
for s, ratios in by_set.items():
    print("[%s] new/base per pair: %s  median %.3f" % (s, " ".join("%.2f" % x for x in ratios), statistics.median(ratios)))
PY
