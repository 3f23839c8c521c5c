"""Run scores as trec_eval compares them when it ranks a run.

trec_eval reads each run line's score with ``atof`` into a C ``float``: it ranks by
the 32-bit rounding of the score, so two scores alike to about 7 significant digits
tie there (and are then ordered by passage id). Every place that orders run entries
compares these, never the float64 scores, which are still what is kept and shown.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def trec_scores(scores: NDArray[np.float64]) -> NDArray[np.float32]:
    """``scores`` rounded to nearest 32-bit floats, as C converts a double to a float:
    beyond float32's range they become infinite (numpy's warning about that is the
    conversion working as trec_eval's does, so it is silenced)."""
    with np.errstate(over="ignore"):
        return np.asarray(scores, dtype=np.float64).astype(np.float32)


def score_order(
    qidx: NDArray[np.integer], scores: NDArray[np.float32]
) -> tuple[NDArray[np.int64], bool]:
    """Rows in query index order, each query's best score first (:func:`trec_scores`
    values, finite), ties in no particular order (:func:`tied_runs`); and whether the
    rows were grouped by query with scores falling, as run files are written.

    Such a run is not sorted: its blocks of rows are only moved into query order.
    """
    order = _grouped_order(qidx, scores)
    if order is not None:
        return order, True
    return best_first(qidx, scores), False


def _grouped_order(
    qidx: NDArray[np.integer], scores: NDArray[np.float32]
) -> NDArray[np.int64] | None:
    """The order of :func:`score_order` without sorting, when each query is one block of
    rows already sorted by score; else None."""
    if qidx.size < 2:
        return np.arange(qidx.size, dtype=np.int64)
    new_query = qidx[1:] != qidx[:-1]
    starts = np.concatenate([[0], np.flatnonzero(new_query) + 1]).astype(np.int64)
    heads = qidx[starts]
    # Sorted and compared with neighbours: np.unique imports numpy.ma (20 ms of a start).
    ordered = np.sort(heads)
    if bool((ordered[1:] == ordered[:-1]).any()):
        return None
    if bool((~new_query & (scores[1:] > scores[:-1])).any()):
        return None
    lengths = np.diff(np.append(starts, qidx.size))
    by_query = np.argsort(heads, kind="stable")
    moved = lengths[by_query]
    moved_starts = np.concatenate([[0], np.cumsum(moved)[:-1]])
    # Row i of the result is source row i + (source start - result start) of its block.
    order = np.repeat(starts[by_query] - moved_starts, moved)
    order += np.arange(qidx.size, dtype=np.int64)
    return order.astype(np.int64, copy=False)


def best_first(qidx: NDArray[np.integer], scores: NDArray[np.float32]) -> NDArray[np.int64]:
    """Rows in query index order, each query's best score first (:func:`trec_scores`
    values, finite); rows that tie come in no particular order (:func:`tied_runs`).

    One sort of one 64-bit key per row: a fifth of the time of a lexsort on the two
    (numpy compares a float key slowly). The score's bits are flipped so that their
    order as unsigned integers is the scores' (a negative score: all bits; else the sign
    bit), then inverted for best first. A negative zero is made a zero first: it ties
    with zero, as C compares them.
    """
    bits = (scores + np.float32(0)).view(np.uint32)
    flip = np.where(bits >> np.uint32(31), np.uint32(0xFFFFFFFF), np.uint32(0x80000000))
    worst_first = (bits ^ flip).astype(np.uint64)
    key = (qidx.astype(np.uint64) << np.uint64(32)) | (np.uint64(0xFFFFFFFF) - worst_first)
    return np.argsort(key).astype(np.int64)


def tied_runs(
    qidx: NDArray[np.integer], scores: NDArray[np.float32]
) -> tuple[NDArray[np.int64], NDArray[np.int64]] | None:
    """For rows in query and score order, the rows that tie with a neighbour (same query,
    equal score) and the number of each one's run of ties, rising; None when none tie.
    trec_eval orders each run by passage id, descending as bytes: the callers do that
    on their own id columns."""
    tied = (qidx[1:] == qidx[:-1]) & (scores[1:] == scores[:-1])
    if not tied.any():
        return None
    member = np.zeros(qidx.size, dtype=np.bool_)
    member[:-1] |= tied
    member[1:] |= tied
    rows = np.flatnonzero(member).astype(np.int64)
    # A run starts at a tied row that is not tied to the row before it.
    group = np.cumsum(np.concatenate(([True], ~tied)))[rows].astype(np.int64)
    return rows, group
