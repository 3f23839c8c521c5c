"""The reading floor: a TREC run file read by polars' fastest reader into the columns an
evaluation needs (qid, docid, score), and nothing else.

python benchmarks/tools/polars_read.py RUN
"""

from __future__ import annotations

import sys

import polars as pl


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    frame = pl.read_csv(
        argv[0],
        separator=" ",
        has_header=False,
        columns=[0, 2, 4],
        schema_overrides={"column_1": pl.String, "column_3": pl.String, "column_5": pl.Float64},
    )
    print(frame.height)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
