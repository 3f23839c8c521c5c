"""Live metrics for the grading app, through the same engine ``raglabel eval`` uses.

One query's panel scores every run at once: the runs' lists for that query become the
"queries" of one stacked run, each paired with the same grade counts, so one engine call
gives every run's values. Over all queries, each run is one engine call on the book's
entry grades. Holes and the labeling queue look only at runs' top-K entries.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from raglabel.metrics.config import MetricConfig
from raglabel.metrics.evaluate import QueryStats, evaluate_run
from raglabel.metrics.labels import LabelSet
from raglabel.metrics.names import MetricKey
from raglabel.metrics.run import RankedRun
from raglabel.session.catalog import Catalog
from raglabel.session.gradebook import GradeBook

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
        runs = self.catalog.runs
        counts = self.book.counts[q]
        n = len(runs)
        labels = LabelSet(tuple(r.name for r in runs), np.tile(counts, (max(n, 1), 1)))
        stats = QueryStats.build(labels, self.config)
        values: dict[str, dict[str, float]] = {}
        if n:
            slices = [
                grades[int(run.offsets[q]) : int(run.offsets[q + 1])]
                for run, grades in zip(runs, self.book.run_grades, strict=True)
            ]
            lengths = np.array([s.size for s in slices], dtype=np.int64)
            stacked = RankedRun(
                name="panel",
                offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
                grades=np.concatenate(slices).astype(np.int8),
            )
            keys = [MetricKey(name, k) for name in PANEL_METRICS]
            result = evaluate_run(stats, stacked, keys)
            for i, run in enumerate(runs):
                values[run.name] = {key.base: float(result[key][i]) for key in keys}
        return QueryPanel(
            k=k,
            values=values,
            counts=tuple(int(c) for c in counts),
            weights=tuple(float(w) for w in stats.weights[0]),
            inverted=bool(stats.inverted[0]),
        )

    def holes(self, q: int, k: int) -> list[Hole]:
        """Ungraded passages in any run's top K of query ``q``, most-retrieved first."""
        # Ties go by passage id: a pid is a row of the file (or a negative number for a
        # passage outside it), an order that says nothing to the annotator.
        top = sorted(self._top(q, k).items(), key=lambda it: (-len(it[1]), min(it[1]), it[0]))
        pid = self.catalog.pid
        return [Hole(q, pid(ext), len(ranks), min(ranks)) for ext, ranks in top]

    def _top(self, q: int, k: int) -> dict[str, list[int]]:
        """Each ungraded passage in some run's top K of query ``q``, with its ranks there."""
        seen: dict[str, list[int]] = {}
        for run, grades in zip(self.catalog.runs, self.book.run_grades, strict=True):
            start = int(run.offsets[q])
            stop = min(start + k, int(run.offsets[q + 1]))
            entries = zip(run.ext[start:stop], grades[start:stop].tolist(), strict=True)
            for rank, (ext, grade) in enumerate(entries, 1):
                if not grade:
                    seen.setdefault(ext, []).append(rank)
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
        n = len(self.catalog.queries)
        return np.fromiter((len(self._top(q, k)) for q in range(n)), dtype=np.int64, count=n)
