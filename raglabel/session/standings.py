"""The Runs screen's figures: each run's means with bootstrap intervals at K, and the
paired comparison of two runs with the queries where they differ most.

Computed with the engine and statistics ``raglabel eval --ci --compare`` uses, on the
grades in view, so the app and the command line agree on the same labels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from raglabel.analysis.evaluation import Options, evaluate
from raglabel.formats.report_data import LabelsInfo
from raglabel.metrics.evaluate import QueryStats, evaluate_run
from raglabel.metrics.labels import LabelSet
from raglabel.metrics.names import SET_METRICS, MetricKey
from raglabel.metrics.run import RankedRun
from raglabel.metrics.stats import PairedComparison, paired_randomization
from raglabel.session.grading import GradingSession

#: What the Runs screen tabulates, in column order.
STANDING_METRICS = (*SET_METRICS, "ndcg")
SEED = 42


@dataclass(frozen=True)
class Standing:
    run: str
    mean: dict[str, float | None]
    ci: dict[str, tuple[float, float] | None]
    valid: dict[str, int]


@dataclass(frozen=True)
class Divergence:
    query: int
    ext_id: str
    a: float
    b: float

    @property
    def difference(self) -> float:
        return self.b - self.a


@dataclass(frozen=True)
class Duel:
    a: str
    b: str
    metric: str
    k: int
    test: PairedComparison
    divergent: list[Divergence]


@dataclass(frozen=True)
class Snapshot:
    """The grades in view at one moment, copied so a worker thread can score them while
    the annotator goes on grading.

    Like ``raglabel eval DB`` it covers the queries that have grades, in id order, so
    the bootstrap draws the same resamples and the intervals agree with the CLI's.
    ``rows`` maps each of its queries back to the session's query index.
    """

    stats: QueryStats
    runs: list[RankedRun]
    query_ids: tuple[str, ...]
    rows: tuple[int, ...]
    k: int


def snapshot(session: GradingSession) -> Snapshot:
    session.ensure_runs()
    queries = session.catalog.queries
    counts = session.book.counts
    rows = sorted(
        (q.index for q in queries if counts[q.index].sum() > 0), key=lambda i: queries[i].ext_id
    )
    pick = np.array(rows, dtype=np.int64)
    query_ids = tuple(queries[i].ext_id for i in rows)
    labels = LabelSet(query_ids, counts[pick].copy() if rows else np.zeros((0, 6), np.int64))
    runs = []
    for run, grades in zip(session.catalog.runs, session.book.run_grades, strict=True):
        pieces = [grades[run.offsets[i] : run.offsets[i + 1]] for i in rows]
        lengths = np.array([piece.size for piece in pieces], dtype=np.int64)
        runs.append(
            RankedRun(
                name=run.name,
                offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
                grades=np.concatenate(pieces) if pieces else np.zeros(0, np.int8),
            )
        )
    return Snapshot(
        QueryStats.build(labels, session.options.config), runs, query_ids, tuple(rows), session.k
    )


def standings(shot: Snapshot, resamples: int = 1000) -> list[Standing]:
    stats, runs = shot.stats, shot.runs
    metrics = [MetricKey(name, shot.k) for name in STANDING_METRICS]
    report = evaluate(
        stats,
        runs,
        Options(metrics=metrics, ci=True, resamples=resamples, seed=SEED),
        labels_info=LabelsInfo(
            queries=stats.labels.n_queries, graded=stats.labels.n_graded, fingerprint=""
        ),
        config={},
        warnings=[],
    )
    out = []
    for run in runs:
        result = report.runs[run.name]
        out.append(
            Standing(
                run=run.name,
                mean={key.base: result.mean[key.name] for key in metrics},
                ci={key.base: (result.ci or {}).get(key.name) for key in metrics},
                valid={key.base: result.valid[key.name] for key in metrics},
            )
        )
    return out


def duel(shot: Snapshot, a: str, b: str, metric: str = "ra_nwg", shown: int = 20) -> Duel:
    """Run ``b`` against run ``a`` on ``metric`` at K, and the queries they differ on most."""
    stats = shot.stats
    by_name = {run.name: run for run in shot.runs}
    key = MetricKey(metric, shot.k)
    va: NDArray[np.float64] = evaluate_run(stats, by_name[a], [key])[key]
    vb: NDArray[np.float64] = evaluate_run(stats, by_name[b], [key])[key]
    test = paired_randomization(va, vb, permutations=10_000, resamples=1000, seed=SEED)
    both = np.flatnonzero(~np.isnan(va) & ~np.isnan(vb))
    gap = np.abs(vb[both] - va[both])
    order = both[np.argsort(-gap, kind="stable")]
    divergent = [
        Divergence(shot.rows[q], shot.query_ids[q], float(va[q]), float(vb[q]))
        for q in order[:shown]
        if vb[q] != va[q]
    ]
    return Duel(a, b, metric, shot.k, test, divergent)
