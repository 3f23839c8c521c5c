"""A run frame put in trec_eval's order as a whole, for a project to store.

trec_eval orders each query's entries by score descending (compared as 32-bit floats,
:func:`~raglabel.formats.trec.order.trec_scores`), then by passage id descending as
bytes, and a passage met twice in a query counts once, at its best place. Queries go
in id order. This module decides that order; ``storage`` only encodes what it returns.

Two strategies give the same order. A run written as runs nearly always are (each
query's lines together, scores falling, no pair repeated) is described as it stands
in the file (:class:`GroupedRun`): its blocks' order and its ties are all that move,
and no row is gathered. Any other run is sorted (:class:`SortedRun`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
from numpy.typing import NDArray

from raglabel.formats.trec.frames import read_run
from raglabel.formats.trec.order import score_order, tied_runs, trec_scores
from raglabel.formats.trec.ranking import ties_by_passage

#: The share of a grouped run's rows that may tie and still be described in file order
#: (their ids rewritten in place where they are stored); above it, the sort, which
#: orders mostly tied rows (integer-like scores) in less memory.
TIES_REWRITTEN = 0.5


@dataclass(frozen=True)
class GroupedRun:
    """A grouped run in file order, and where each of its entries goes.

    ``frame`` is the run as read (``qid`` categorical); query ``i``'s lines are rows
    ``starts[i]`` to ``ends[i]`` (exclusive) and its id is ``queries[i]``; ``by_name``
    lists the blocks in query id order; ``order`` is the file row of every entry in
    trec_eval's order. Rows in a run of tied scores are ``tied`` (None: no tie), and
    ``tie_source`` holds, for each of them in file order, the file row whose entry
    takes its place once ties go by passage id.
    """

    frame: pl.DataFrame
    starts: NDArray[np.int64]
    ends: NDArray[np.int64]
    queries: list[str]
    by_name: NDArray[np.int64]
    order: NDArray[np.int64]
    tied: NDArray[np.bool_] | None
    tie_source: NDArray[np.int64] | None


@dataclass(frozen=True)
class SortedRun:
    """A run's rows in trec_eval's order, each passage once per query, and the repeats
    dropped on the way (``"docid in qid"``, each once, in file order)."""

    frame: pl.DataFrame
    repeats: list[str]


def read_ranked(path: Path) -> GroupedRun | SortedRun:
    """A run file read (:func:`~raglabel.formats.trec.frames.read_run`, which names a bad
    line) and put in trec_eval's order: described in file order when it is written as
    runs nearly always are (:func:`grouped_run`), else sorted (:func:`sorted_run`)."""
    frame = read_run(path)
    grouped = grouped_run(frame)
    return sorted_run(frame) if grouped is None else grouped


def grouped_run(frame: pl.DataFrame) -> GroupedRun | None:
    """``frame`` (``qid``, ``docid``, ``score`` in file order) as a :class:`GroupedRun`;
    None for a run that must be sorted (:func:`sorted_run`).

    Such a run is in trec_eval order but for its query blocks' order and its ties
    (equal scores, as :func:`trec_scores` compares them), which go in passage id order,
    descending: rows that only move within their block.
    """
    scores = frame["score"].to_numpy()
    ranks = trec_scores(scores)
    if not _ordered_by_numbers(scores, ranks):
        return None
    qids = frame["qid"]
    if qids.dtype != pl.Categorical:  # the blocks are found by the categories' codes
        qids = qids.cast(pl.Categorical)
        frame = frame.with_columns(qid=qids)
    codes = qids.to_physical().to_numpy()
    same = codes[1:] == codes[:-1]
    starts = np.flatnonzero(np.concatenate(([True], ~same)))
    if len(np.unique(codes[starts])) != len(starts) or bool(
        (same & (ranks[1:] > ranks[:-1])).any()
    ):
        return None
    if _may_repeat_a_pair(frame):
        return None  # the sort drops the repeats and names them
    n = frame.height
    ends = np.append(starts[1:], n)
    names: list[str] = qids.gather(starts).cast(pl.String).to_list()
    by_name = np.array(sorted(range(len(names)), key=names.__getitem__), dtype=np.int64)
    order = _block_order(starts, ends, by_name)
    ties = tied_runs(codes, ranks)
    if ties is None:
        return GroupedRun(frame, starts, ends, names, by_name, order, None, None)
    # Each run of equal scores in a query: its rows in passage id order, descending.
    places, group = ties
    if places.size > TIES_REWRITTEN * n:
        return None
    member = np.zeros(n, dtype=np.bool_)
    member[places] = True
    source = ties_by_passage(group, places, frame["docid"].gather(places))
    # Where the tied rows stand once their blocks are moved: their rows go there.
    block = np.searchsorted(starts, places, side="right") - 1
    moved_to = np.empty(len(starts), dtype=np.int64)
    moved_to[by_name] = np.cumsum((ends - starts)[by_name]) - (ends - starts)[by_name]
    order[places - starts[block] + moved_to[block]] = source
    return GroupedRun(frame, starts, ends, names, by_name, order, member, source)


def sorted_run(frame: pl.DataFrame) -> SortedRun:
    """``frame`` (``qid``, ``docid``, ``score``) sorted (:func:`trec_order`), without the
    later rows of a repeated (query, passage) pair, which are named."""
    ranked = trec_order(frame)
    before = ranked.height
    ranked = _first_of_each_pair(ranked)
    repeats: list[str] = []
    if ranked.height != before:
        doubled = frame.filter(pl.struct("qid", "docid").is_duplicated()).unique(
            subset=["qid", "docid"], maintain_order=True
        )
        repeats = [f"{d} in {q}" for q, d in doubled.select("qid", "docid").iter_rows()]
    return SortedRun(ranked, repeats)


def trec_order(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` (``qid``, ``docid``, ``score``) sorted as trec_eval orders a run: query
    id, then score descending, then passage id descending as bytes.

    A sort on all three keys compares ten million strings; here the rows are put in
    order by numbers (each query id's place among the distinct ones, the score), and
    only rows whose query and score tie are ordered by their passage ids. A run written
    grouped by query with scores falling needs no sort by score: its query blocks are
    moved into place, and only its ties are sorted. A negative zero (or a score that is
    not finite, which the reader refuses) takes the plain sort, whose notion of a tie
    the shortcut could not promise to share; so does a run in no order whose scores
    mostly tie, where sorting the ties by passage id is most of the plain sort's work.
    Scores are compared as trec_eval keeps them (:func:`trec_scores`); the frame keeps
    its float64 scores.
    """
    if frame["qid"].dtype != pl.Categorical:  # the keys are the categories' codes
        frame = frame.with_columns(pl.col("qid").cast(pl.Categorical))
    scores = frame["score"].to_numpy()
    ranks = trec_scores(scores)
    if not _ordered_by_numbers(scores, ranks):
        return _plain_order(frame)
    keys = _query_keys(frame["qid"])
    order, grouped = score_order(keys, ranks)
    ties = tied_runs(keys[order], ranks[order])
    if ties is not None:
        # Rows in a run of equal (query, score): each run's rows go in passage id order.
        places, group = ties
        if not grouped and 2 * places.size > len(order):
            return _plain_order(frame)
        # A passage repeated with scores that tie only as 32-bit floats: the higher
        # float64 score first, the one kept and stored (equal rows are alike).
        tie = pl.DataFrame(
            {
                "group": group,
                "row": order[places],
                "docid": frame["docid"].gather(order[places]),
                "score": frame["score"].gather(order[places]),
            }
        ).sort(["group", "docid", "score"], descending=[False, True, True])
        order[places] = tie["row"].to_numpy()
    return frame[order]


def _ordered_by_numbers(scores: NDArray[np.float64], ranks: NDArray[np.float32]) -> bool:
    """Whether rows with these scores (and their 32-bit ``ranks``) may be put in order by
    numbers: not when there are none, nor when a score is not finite (the reader
    refuses those) or is a negative zero, where the plain sort's notion of a tie is the
    one to keep. A tiny score rounds to zero as a 32-bit float: the negative zero is
    looked for there."""
    return bool(
        scores.size and np.isfinite(scores).all() and not (np.signbit(ranks) & (ranks == 0)).any()
    )


def _plain_order(frame: pl.DataFrame) -> pl.DataFrame:
    # The score as trec_eval compares it (a 32-bit float, as trec_scores rounds it); the
    # float64 score last, for the repeat of a passage kept, as in trec_order.
    rank = pl.col("score").cast(pl.Float32)
    keys = [pl.col("qid"), rank, pl.col("docid"), pl.col("score")]
    return frame.sort(keys, descending=[False, True, True, True])


def _query_keys(qids: pl.Series) -> NDArray[np.int64]:
    """Each row's query id as its place among the distinct query ids in string order."""
    distinct = qids.unique()
    names = distinct.cast(pl.String).to_list()
    codes = distinct.to_physical().to_numpy().astype(np.int64)
    place = np.zeros(int(codes.max()) + 1 if len(codes) else 0, dtype=np.int64)
    place[codes[sorted(range(len(names)), key=names.__getitem__)]] = np.arange(len(names))
    keys: NDArray[np.int64] = place[qids.to_physical().to_numpy()]
    return keys


def _first_of_each_pair(ranked: pl.DataFrame) -> pl.DataFrame:
    """``ranked`` without the later rows of a (query, passage) pair. Finding the pairs
    by hash costs a fraction of polars' unique over ten million string pairs; only a
    run where two hashes meet (a pair repeated, or a collision) takes the unique, and
    then pays for both (about a quarter more than the unique alone)."""
    if not _may_repeat_a_pair(ranked):
        return ranked
    return ranked.unique(subset=["qid", "docid"], keep="first", maintain_order=True)


def _may_repeat_a_pair(frame: pl.DataFrame) -> bool:
    """Whether two rows of ``frame`` may hold one (query, passage) pair: False only when
    no two rows' hashes of the pair meet."""
    hashes = frame.select(
        pl.col("docid").hash(0) ^ (pl.col("qid").to_physical().cast(pl.UInt64) * 0x9E3779B97F4A7C15)
    ).to_series()
    ordered = np.sort(hashes.to_numpy())
    return bool((ordered[1:] == ordered[:-1]).any())


def _block_order(
    starts: NDArray[np.int64], ends: NDArray[np.int64], blocks: NDArray[np.int64]
) -> NDArray[np.int64]:
    """The rows of the blocks ``[starts, ends)`` one block after the other, in the order
    ``blocks`` lists them."""
    lengths = (ends - starts)[blocks]
    # Steps of one, but for a jump at each block's first row: one array, summed in place.
    rows: NDArray[np.int64] = np.ones(int(lengths.sum()), dtype=np.int64)
    firsts = np.cumsum(lengths) - lengths
    kept = lengths > 0
    rows[firsts[kept]] = starts[blocks][kept] - np.concatenate(([0], (ends[blocks][kept] - 1)[:-1]))
    return np.cumsum(rows, out=rows)
