"""Live metrics for the grading app, through the same engine ``raglabel eval`` uses.

One query's panel scores every run at once: the runs' lists for that query become the
"queries" of one stacked run, each paired with the same grade counts, so one engine call
gives every run's values. Over all queries, each run is one engine call on the book's
entry grades. Holes and the labeling queue look only at runs' top-K entries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from threading import Event

import numpy as np
from numpy.typing import NDArray

from raglabel.metrics.config import MetricConfig
from raglabel.metrics.evaluate import QueryStats, evaluate_run
from raglabel.metrics.labels import LabelSet
from raglabel.metrics.names import MetricKey
from raglabel.metrics.run import RankedRun
from raglabel.session.catalog import Catalog, Query, RunLists
from raglabel.session.gradebook import SPAN, GradeBook

#: Queries scored at a time in the background: numpy holds the interpreter's lock through
#: some whole-array steps (a unique, a repeat), and over 100,000 queries x 100 entries
#: such a step kept the app's thread (its keys) waiting for tens of milliseconds.
QUERIES_A_CHUNK = 5_000

#: The panel's metrics, in the order it shows them.
PANEL_METRICS = ("ra_nwg", "proc", "pct_proc", "n_recall_4plus", "n_recall_5", "harm", "judged")


@dataclass(frozen=True)
class QueryPanel:
    """What the live metrics panel shows for one query at one cutoff."""

    k: int
    values: dict[str, dict[str, float]]  # run -> metric -> value (NaN = NA)
    counts: tuple[int, ...]  # passages per grade, index = grade (0 unused)
    weights: tuple[float, ...]  # rarity weight per grade, index = grade
    inverted: bool  # a lower grade outweighs a higher one here


@dataclass(frozen=True)
class Hole:
    """An ungraded passage in some run's top K: grading it makes metrics more exact."""

    query: int
    pid: int
    runs: int  # how many runs put it in their top K
    best_rank: int  # its best 1-based rank among them


class LiveMetrics:
    def __init__(self, catalog: Catalog, book: GradeBook, config: MetricConfig) -> None:
        self.catalog = catalog
        self.book = book
        self.config = config

    # -- one query ---------------------------------------------------------------------

    def panel(self, q: int, k: int) -> QueryPanel:
        names = self.catalog.run_names
        counts = self.book.counts[q]
        n = len(names)
        labels = LabelSet(tuple(names), np.tile(counts, (max(n, 1), 1)))
        stats = QueryStats.build(labels, self.config)
        values: dict[str, dict[str, float]] = {}
        if n:
            slices = [grades for _, grades in self.book.ranked(q)]
            lengths = np.array([s.size for s in slices], dtype=np.int64)
            stacked = RankedRun(
                name="panel",
                offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
                grades=np.concatenate(slices).astype(np.int8),
            )
            keys = [MetricKey(name, k) for name in PANEL_METRICS]
            result = evaluate_run(stats, stacked, keys)
            for i, name in enumerate(names):
                values[name] = {key.base: float(result[key][i]) for key in keys}
        return QueryPanel(
            k=k,
            values=values,
            counts=tuple(int(c) for c in counts),
            weights=tuple(float(w) for w in stats.weights[0]),
            inverted=bool(stats.inverted[0]),
        )

    def holes(self, q: int, k: int) -> list[Hole]:
        """Ungraded passages in any run's top K of query ``q``, most-retrieved first."""
        top = self._top(q, k)
        names = self.catalog.passage_ext
        names.name([pid for pid in top if pid >= 0])
        # Ties go by passage id: a pid is a row of the file (or a negative number for a
        # passage outside it), an order that says nothing to the annotator.
        ordered = sorted(top.items(), key=lambda it: (-len(it[1]), min(it[1]), names[it[0]]))
        return [Hole(q, pid, len(ranks), min(ranks)) for pid, ranks in ordered]

    def _top(self, q: int, k: int) -> dict[int, list[int]]:
        """Each ungraded passage (pid) in some run's top K of query ``q``, with its ranks
        there."""
        seen: dict[int, list[int]] = {}
        for pids, grades in self.book.ranked(q):
            entries = zip(pids[:k].tolist(), grades[:k].tolist(), strict=True)
            for rank, (pid, grade) in enumerate(entries, 1):
                if not grade:
                    seen.setdefault(pid, []).append(rank)
        return seen

    # -- every query -------------------------------------------------------------------

    def ra_nwg_all(self, k: int) -> NDArray[np.float64]:
        """RA-nWG@k of every run (rows) for every query (columns); NaN where undefined."""
        runs = self.catalog.runs
        out = np.full((len(runs), len(self.catalog.queries)), np.nan)
        if not runs or not self.catalog.queries:
            return out
        labels = LabelSet(tuple(q.ext_id for q in self.catalog.queries), self.book.counts)
        stats = QueryStats.build(labels, self.config)
        key = MetricKey("ra_nwg", k)
        for i, (run, grades) in enumerate(zip(runs, self.book.run_grades, strict=True)):
            ranked = RankedRun(name=run.name, offsets=run.offsets, grades=grades)
            out[i] = evaluate_run(stats, ranked, [key])[key]
        return out

    def hole_counts(self, k: int) -> NDArray[np.int64]:
        """Per query, the number of distinct ungraded passages in any run's top K."""
        cat = self.catalog
        n = len(cat.queries)
        if not cat.runs:
            return np.zeros(n, dtype=np.int64)
        tops = [_top_k(run.offsets, k) for run in cat.runs]
        # An unnamed entry in a top K (K beyond a run's pool depth) is named first: only
        # its id tells whether another run lists the same passage.
        unnamed = np.unique(
            np.concatenate(
                [
                    at_query[run.pids[at] == 0]
                    for run, (at, at_query) in zip(cat.runs, tops, strict=True)
                ]
            )
        )
        for q in sorted(cat.resolve_all(unnamed.tolist())):
            self.book.regrade(q)
        keys = []
        for run, grades, (at, at_query) in zip(cat.runs, self.book.run_grades, tops, strict=True):
            hole = grades[at] == 0
            keys.append(at_query[hole] * SPAN + run.pids[at[hole]].astype(np.int64) + SPAN // 2)
        distinct = np.unique(np.concatenate(keys))
        return np.bincount(distinct // SPAN, minlength=n).astype(np.int64)


def ra_nwg_of(
    queries: Sequence[Query],
    counts: NDArray[np.int64],
    runs: Sequence[RunLists],
    run_grades: Sequence[NDArray[np.int8]],
    *,
    k: int,
    config: MetricConfig,
    which: NDArray[np.int64],
) -> NDArray[np.float64]:
    """RA-nWG@k of every run (rows) for the queries ``which`` (columns, in that order),
    from grade counts and entry grades given: what :meth:`LiveMetrics.ra_nwg_all` gives
    for them, each query's figure being its own. Only reads its arguments, so the thread
    that reads the runs can score them on its own snapshot."""
    out = np.full((len(runs), which.size), np.nan)
    if not runs or not which.size:
        return out
    labels = LabelSet(tuple(queries[q].ext_id for q in which.tolist()), counts[which])
    stats = QueryStats.build(labels, config)
    key = MetricKey("ra_nwg", k)
    for i, (run, grades) in enumerate(zip(runs, run_grades, strict=True)):
        at, lengths = _spans(run.offsets, which, None)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        ranked = RankedRun(name=run.name, offsets=offsets, grades=grades[at])
        out[i] = evaluate_run(stats, ranked, [key])[key]
    return out


def hole_counts_of(
    runs: Sequence[RunLists],
    run_grades: Sequence[NDArray[np.int8]],
    k: int,
    which: NDArray[np.int64],
) -> NDArray[np.int64] | None:
    """Per query of ``which`` (in that order), the number of distinct ungraded passages
    in any run's top K, as :meth:`LiveMetrics.hole_counts` counts them; None when some
    top K holds an unnamed entry (only the catalog can name it, on the app's thread)."""
    if not runs:
        return np.zeros(which.size, dtype=np.int64)
    keys = []
    for run, grades in zip(runs, run_grades, strict=True):
        at, lengths = _spans(run.offsets, which, k)
        if not run.pids[at].all():
            return None
        at_query = np.repeat(np.arange(which.size, dtype=np.int64), lengths)
        hole = grades[at] == 0
        keys.append(at_query[hole] * SPAN + run.pids[at[hole]].astype(np.int64) + SPAN // 2)
    distinct = np.unique(np.concatenate(keys))
    return np.bincount(distinct // SPAN, minlength=which.size).astype(np.int64)


def score_in_chunks(
    queries: Sequence[Query],
    counts: NDArray[np.int64],
    runs: Sequence[RunLists],
    run_grades: Sequence[NDArray[np.int8]],
    *,
    k: int,
    config: MetricConfig,
    stop: Event | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.int64] | None] | None:
    """RA-nWG@k and hole counts of every query (holes None as in :func:`hole_counts_of`),
    a chunk of queries at a time: for the thread reading the runs, which must let the
    app's thread in between. None if ``stop`` is set before the last chunk."""
    n = len(queries)
    ra = np.full((len(runs), n), np.nan)
    holes: NDArray[np.int64] | None = np.zeros(n, dtype=np.int64)
    for start in range(0, n, QUERIES_A_CHUNK):
        if stop is not None and stop.is_set():
            return None
        which = np.arange(start, min(start + QUERIES_A_CHUNK, n), dtype=np.int64)
        ra[:, start : start + which.size] = ra_nwg_of(
            queries, counts, runs, run_grades, k=k, config=config, which=which
        )
        if holes is not None:
            found = hole_counts_of(runs, run_grades, k, which)
            if found is None:
                holes = None
            else:
                holes[start : start + which.size] = found
    return ra, holes


def _spans(
    offsets: NDArray[np.int64], which: NDArray[np.int64], k: int | None
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The positions of the entries of queries ``which`` (their first ``k`` only, unless
    None), query after query, and how many each has."""
    starts = offsets[which]
    lengths = offsets[which + 1] - starts
    if k is not None:
        lengths = np.minimum(lengths, k)
    first = np.cumsum(lengths) - lengths
    at = np.arange(int(lengths.sum()), dtype=np.int64) + np.repeat(starts - first, lengths)
    return at, lengths


def _top_k(offsets: NDArray[np.int64], k: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The positions of every query's first ``k`` entries, and each one's query."""
    lengths = np.minimum(np.diff(offsets), k)
    at_query = np.repeat(np.arange(lengths.size, dtype=np.int64), lengths)
    first = np.cumsum(lengths) - lengths
    at = offsets[:-1][at_query] + np.arange(at_query.size, dtype=np.int64) - first[at_query]
    return at, at_query
