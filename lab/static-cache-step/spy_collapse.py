"""Fold a py-spy raw file (`py-spy record -f raw`: one `frame;frame;... COUNT` line per stack) into frames of
function and file name (no directories, no line numbers), merged and gzipped: small enough to come back from the
device (a raw file of 60 decoder steps was 26 MB), still what a flame graph or a share per function needs.

    python3 lab/static-cache-step/spy_collapse.py RAW.txt OUT.txt.gz
"""

from __future__ import annotations

import collections
import gzip
import sys


def frame(raw: str) -> str:
    """`name (path/to/file.py:LINE)` as `name (file.py)`."""
    name, _, where = raw.partition(" (")
    return f"{name} ({where.split(':')[0].split('/')[-1]})"


def main() -> None:
    source, target = sys.argv[1:3]
    counts: collections.Counter[str] = collections.Counter()
    with open(source) as lines:
        for line in lines:
            stack, _, count = line.rstrip().rpartition(" ")
            counts[";".join(frame(raw) for raw in stack.split(";"))] += int(count)
    with gzip.open(target, "wt") as out:
        for stack, count in counts.most_common():
            out.write(f"{stack} {count}\n")


if __name__ == "__main__":
    main()
