"""The warnings every run reader gives, worded once so the readers stay comparable.

The tests check that the polars, numpy and line readers warn alike; one wording
and one sampling rule keeps that a property of the code, not of care.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from numpy.typing import NDArray

#: How many examples a warning names before it says "...".
SHOWN = 3


def sample(items: Sequence[str], limit: int = SHOWN) -> str:
    shown = ", ".join(str(item) for item in items[:limit])
    return shown + (", ..." if len(items) > limit else "")


def unknown_queries(run: str, qids: Sequence[str]) -> str:
    noun = "query" if len(qids) == 1 else "queries"
    return f"run {run!r}: {len(qids)} {noun} not in the labels skipped ({sample(qids)})"


def repeated_passages(run: str, examples: Sequence[str]) -> str:
    return (
        f"run {run!r}: {len(examples)} repeated passage id(s) dropped, "
        f"keeping the best-ranked ({sample(examples)})"
    )


def keep_first(
    run: str,
    size: int,
    pairs: Iterable[tuple[int, int, str]],
    query_ids: Sequence[str],
    warnings: list[str],
) -> NDArray[np.bool_] | None:
    """A mask over ``size`` ranked rows dropping each later repeat among ``pairs`` (see
    ``later_repeats``), with its warning added; None when nothing repeats."""
    found, examples = later_repeats(pairs, query_ids)
    if not found:
        return None
    warnings.append(repeated_passages(run, examples))
    keep = np.ones(size, dtype=np.bool_)
    keep[found] = False
    return keep


def later_repeats(
    pairs: Iterable[tuple[int, int, str]], query_ids: Sequence[str]
) -> tuple[list[int], list[str]]:
    """Rows whose (query, passage) came before, given as ``(row, query index, docid)`` in
    rank order, and an example text for each: the rows to drop, best-ranked kept."""
    seen: set[tuple[int, str]] = set()
    rows: list[int] = []
    examples: list[str] = []
    for row, q, docid in pairs:
        if (q, docid) in seen:
            rows.append(row)
            examples.append(f"{docid} in {query_ids[q]}")
        seen.add((q, docid))
    return rows, examples
