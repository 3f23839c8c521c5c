"""Row orders of a columnar run: trec_eval's ranking, then the label order of queries.

Run files are nearly always written grouped by query and sorted by score; these
helpers check that in a few vectorised passes and then only move what must move
(tied scores, whole query blocks) instead of sorting millions of rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from raglabel.formats.trec.order import best_first, tied_runs, trec_scores
from raglabel.metrics.run import RankedRun


def block_starts(qidx: NDArray[np.int32]) -> NDArray[np.int64]:
    """Rows where the query differs from the row before."""
    if qidx.size == 0:
        return np.zeros(0, dtype=np.int64)
    changed = np.flatnonzero(qidx[1:] != qidx[:-1]) + 1
    return np.concatenate([[0], changed]).astype(np.int64)


def _grouped(qidx: NDArray[np.int32], starts: NDArray[np.int64]) -> bool:
    """Every query in one contiguous block."""
    heads = np.sort(qidx[starts])
    return not bool((heads[1:] == heads[:-1]).any())


@dataclass(frozen=True)
class Reorder:
    """A new row order: row ``rows[i]`` takes the value of old row ``source[i]``.

    ``rows`` None: ``source`` lists every row. Otherwise only those rows move, all
    within one query (tied scores), and every other row stays where it is: cheaper
    than a permutation of millions of rows that leaves nearly all of them in place.
    """

    source: NDArray[np.int64]
    rows: NDArray[np.int64] | None = None

    def apply(self, values: NDArray[Any]) -> NDArray[Any]:
        if self.rows is None:
            moved: NDArray[Any] = values[self.source]
            return moved
        out = values.copy()
        out[self.rows] = values[self.source]
        return out

    def queries(self, qidx: NDArray[np.int32]) -> NDArray[np.int32]:
        """``qidx`` in the new order (unchanged when rows only move within a query)."""
        return qidx if self.rows is not None else self.apply(qidx)

    def permutation(self, n: int) -> NDArray[np.int64]:
        """Old row of every new row."""
        if self.rows is None:
            return self.source
        order = np.arange(n, dtype=np.int64)
        order[self.rows] = self.source
        return order


def ranking_order(
    qidx: NDArray[np.int32],
    starts: NDArray[np.int64],
    scores: NDArray[np.float64],
    docid: pl.Series,
) -> Reorder | None:
    """Row order grouping queries, best first, ties by passage id descending (as bytes).

    None when the rows are in that order already; when they are grouped and sorted
    by score, only groups of tied scores are re-ordered. Scores are compared as
    trec_eval keeps them (:func:`trec_scores`).
    """
    if qidx.size < 2:
        return None
    score = trec_scores(scores)
    same_query = np.ones(qidx.size - 1, dtype=np.bool_)
    same_query[starts[1:] - 1] = False
    if not _grouped(qidx, starts) or bool((same_query & (score[1:] > score[:-1])).any()):
        # Sorted by numbers, and only the rows whose query and score tie by passage id.
        order = best_first(qidx, score)
        ties = tied_runs(qidx[order], score[order])
        if ties is not None:
            rows, group = ties
            order[rows] = ties_by_passage(group, order[rows], docid.gather(order[rows]))
        return Reorder(order)
    ties = tied_runs(qidx, score)
    if ties is None:
        return None
    rows, group = ties
    reordered = ties_by_passage(group, rows, docid.gather(rows))
    moved = reordered != rows
    if not moved.any():
        return None
    return Reorder(reordered[moved].astype(np.int64), rows[moved].astype(np.int64))


def ties_by_passage(
    group: NDArray[np.int64], rows: NDArray[np.int64], docids: pl.Series
) -> NDArray[np.int64]:
    """``rows`` (each in its ``group`` of tied scores, groups in order, ``docids`` their
    passage ids) with each group's rows in passage id order, descending as bytes:
    trec_eval's rule for ties."""
    ties = pl.DataFrame({"_group": group, "_row": rows, "docid": docids})
    ordered: NDArray[np.int64] = (
        ties.sort(["_group", "docid"], descending=[False, True])["_row"]
        .to_numpy()
        .astype(np.int64, copy=False)
    )
    return ordered


def _in_query_order(
    values: NDArray[Any], qidx: NDArray[np.int32], starts: NDArray[np.int64]
) -> NDArray[Any]:
    """``values`` with their blocks of rows moved into query order.

    When every query is one block, the blocks are put together slice by slice (one
    Python step per query, not per row); a query split over several blocks takes a
    stable sort of every row.
    """
    first = qidx[starts]
    if first.size < 2 or bool((first[1:] > first[:-1]).all()):
        return values
    if not _grouped(qidx, starts):
        moved: NDArray[Any] = values[np.argsort(qidx, kind="stable")]
        return moved
    ends = np.append(starts[1:], qidx.size)
    by_query = np.argsort(first, kind="stable")
    return np.concatenate(
        [values[s:e] for s, e in zip(starts[by_query], ends[by_query], strict=True)]
    )


def assemble(
    name: str,
    n_queries: int,
    qidx: NDArray[np.int32],
    grades: NDArray[np.int8],
    *,
    contains: NDArray[np.bool_] | None,
    k_override: NDArray[np.int64] | None,
) -> RankedRun:
    """CSR arrays in label order; rows of one query are contiguous and ranked."""
    starts = block_starts(qidx)
    sizes = np.diff(np.append(starts, qidx.size))
    lengths = np.bincount(qidx[starts], weights=sizes, minlength=n_queries).astype(np.int64)
    grades = _in_query_order(grades, qidx, starts)
    contains = None if contains is None else _in_query_order(contains, qidx, starts)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return RankedRun(
        name=name,
        offsets=offsets,
        grades=grades.astype(np.int8, copy=False),
        contains=contains,
        k_override=k_override,
    )
