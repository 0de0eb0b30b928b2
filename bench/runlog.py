"""The run log of the bench scripts that compare binaries or kernels on one shard run by run
(ab-cached.sh, wine-keccak.sh): each run prints a line `<round> <who> <N> nonces/s ...` (round:
which round, and in ab-cached.sh which argument set; who: the binary or kernel that ran; N its
nonces/s), the scripts tee those lines to a log, and their summaries read it back through
rounds(). A script imports it with PYTHONPATH set to this folder (and python3 -B, so that no
__pycache__ is left in the checkout)."""
import re

RUN = re.compile(r"(.*) (\S+) (\d+) nonces/s")


def rounds(path):
    """{round: {who: nonces/s}} of the run lines in the log at path, in the order they ran;
    other lines are passed over."""
    out = {}
    with open(path) as log:
        for line in log:
            m = RUN.match(line)
            if m:
                out.setdefault(m[1], {})[m[2]] = int(m[3])
    return out
