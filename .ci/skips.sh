#!/usr/bin/env bash
# .ci/skips.sh LOG...: the table of every skipped test in CI's logs, by reason, and a failure when
# one skipped for a reason CI's machine is set up to satisfy.
#
# A skip is a line with a `SKIP:` or `SKIP <what>:` token (Rust tests' SKIP lines, written
# straight to stderr since libtest captures `eprintln!`; Go's `t.Skip("SKIP: ...")`, never a
# `t.Log` and return, which go test counts as PASS: .ci/run refuses both; the Windows leg's, the
# release archives' and the es-node leg's), or Go's `--- SKIP: TestName` whose message (the line
# before) has no SKIP token. Each is classified by the first pattern of
# .ci/skip-reasons-allowed.txt it matches; a skip that matches none is NOT ALLOWED and the script
# exits 1 after the table.
set -euo pipefail
allowed="$(dirname "$0")/skip-reasons-allowed.txt"
[ "$#" -gt 0 ] || { echo "usage: $0 LOG..." >&2; exit 2; }
awk -v allowed="$allowed" '
BEGIN {
    n = 0
    while ((getline line < allowed) > 0) {
        if (line ~ /^[ \t]*(#|$)/) continue
        label = line; sub(/[ \t].*/, "", label)
        re = line; sub(/^[^ \t]+[ \t]+/, "", re)
        n++; labels[n] = label; res[n] = re
    }
    close(allowed)
    if (n == 0) { print "skips.sh: no patterns in " allowed > "/dev/stderr"; exit 2 }
}
function record(text,    i, key) {
    gsub(/\r/, "", text)
    sub(/^[ \t]+/, "", text)
    key = "NOT ALLOWED"
    for (i = 1; i <= n; i++) if (text ~ res[i]) { key = labels[i]; break }
    count[key]++
    if (!(key in example)) example[key] = text
    if (key == "NOT ALLOWED") bad[++nbad] = text
    total++
}
FNR == 1 { delete said; gocur = "" }
FNR == 1 || /^=== RUN/ { gomsg = "" }
# The Go test whose output follows (the `--- SKIP` lines of subtests come later, under the
# result of the parent, so each skip message is remembered by the name of its test).
/^=== (RUN|CONT|NAME) / { gocur = $3 }
/^[ \t]*--- SKIP: / {
    # The Go message was recorded already when it carries the token (the test of this line
    # said SKIP, or the line just before it did); else record it here.
    if (!($3 in said) && gomsg !~ /(^|[^A-Za-z0-9_])SKIP[: ]/) record($0 " " gomsg)
    next
}
/^[ \t]+[A-Za-z0-9_]+_test\.go:[0-9]+: / {
    gomsg = $0
    if (gocur != "" && $0 ~ /(^|[^A-Za-z0-9_])SKIP[: ]/) said[gocur] = 1
}
/(^|[^A-Za-z0-9_-])SKIP(:| [^:]*:)/ && !/FILE_SKIP_|grep .*SKIP/ { record($0) }
END {
    printf "\nskipped tests by reason (%d in all; allowed reasons: %s)\n", total, allowed
    printf "%6s  %-24s  %s\n", "count", "reason", "example"
    for (k in count) if (k != "NOT ALLOWED") printf "%6d  %-24s  %.150s\n", count[k], k, example[k]
    if (nbad > 0) {
        printf "%6d  %-24s  (each below)\n", nbad, "NOT ALLOWED"
        for (i = 1; i <= nbad; i++) printf "        %.200s\n", bad[i]
        printf "FAIL: %d test(s) skipped for a reason CI is set up to satisfy (.ci/skip-reasons-allowed.txt lists the reasons that may skip)\n", nbad
        exit 1
    }
}' "$@"
