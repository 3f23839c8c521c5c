"""raglabel's own reading of a large run, and nothing after it: the file cut into blocks
of whole queries and each block parsed and checked as `raglabel eval` does
(raglabel.formats.trec.frames.read_run_blocks), the next block read while this one is
parsed. No labels, no ranking, no grading.

    python benchmarks/tools/blocks_read.py RUN

Beside tools/polars_read.py (the reading floor) it says how much of an evaluation's
time the reading alone takes, checks included: the part of the gap to the floor that
grading cannot close. It prints the rows read; a block the quick reader refuses (the
exact reader's case) is an error here.
"""

from __future__ import annotations

import sys
from pathlib import Path

from raglabel.formats.trec.blocks import share_malloc_arenas
from raglabel.formats.trec.frames import read_run_blocks


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    # As eval does in its own process (before any thread starts).
    share_malloc_arenas()
    rows = 0
    for number, frame in enumerate(read_run_blocks(Path(argv[0]))):
        if frame is None:
            print(f"block {number} needs the exact reader", file=sys.stderr)
            return 1
        rows += frame.height
    print(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
