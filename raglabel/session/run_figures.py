"""The Runs screen's figures: each run's means with bootstrap intervals at K, and the
comparison of two runs with the queries where they differ most.

Computed with the engine and statistics ``raglabel eval --ci --compare`` uses, on the
grades in view, so the app and the command line agree on the same labels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from raglabel.analysis.evaluation import Options, evaluate
from raglabel.formats.report import Comparison, LabelsInfo, RunReport
from raglabel.metrics.evaluate import QueryStats, evaluate_run
from raglabel.metrics.labels import LabelSet
from raglabel.metrics.names import SET_METRICS, MetricKey
from raglabel.metrics.run import RankedRun
from raglabel.metrics.stats import paired_test
from raglabel.session.grading import GradingSession

#: What the Runs screen tabulates, in column order.
FIGURE_METRICS = (*SET_METRICS, "ndcg")
#: ``raglabel eval``'s statistics (resamples, permutations, seed, level): the app's
#: intervals and comparisons are the command line's by construction, not by copied numbers.
EVAL_DEFAULTS = Options(metrics=())


@dataclass(frozen=True)
class ViewInputs:
    """The grades in view at one moment and the runs they grade, copied so a worker
    thread can evaluate them while the annotator goes on grading.

    Like ``raglabel eval DB`` it covers the queries that have grades, in id order, so
    the bootstrap draws the same resamples and the intervals agree with the CLI's.
    ``rows`` maps each of its queries back to the session's query index.
    """

    stats: QueryStats
    runs: list[RankedRun]
    query_ids: tuple[str, ...]
    rows: tuple[int, ...]
    k: int


@dataclass(frozen=True)
class QueryDifference:
    """One query's value of the compared metric for the baseline run and the other run."""

    query: int  # the session's query index
    ext_id: str
    baseline_value: float
    run_value: float

    @property
    def difference(self) -> float:
        return self.run_value - self.baseline_value


@dataclass(frozen=True)
class ComparisonDetail:
    """A comparison of two runs at K, and the queries where they differ most (largest
    difference first)."""

    comparison: Comparison
    k: int
    queries: list[QueryDifference]
    graded: int = 0
    """Queries with grades in view, over which the two runs were compared."""
    defined: tuple[int, int] = (0, 0)
    """Of those, how many have a value of the metric for the baseline and for the run:
    with no query in both, the comparison has no values, and these say why."""


def view_inputs(session: GradingSession) -> ViewInputs:
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
    return ViewInputs(
        QueryStats.build(labels, session.options.config), runs, query_ids, tuple(rows), session.k
    )


def run_reports(
    inputs: ViewInputs, resamples: int = EVAL_DEFAULTS.resamples
) -> dict[str, RunReport]:
    """Each run's report (means, intervals, valid queries) at the inputs' K, in run
    order. Its metrics are named without the cutoff (``ra_nwg``, not ``ra_nwg@10``), so
    the screen reads them without knowing which K they were computed at."""
    stats, runs = inputs.stats, inputs.runs
    metrics = [MetricKey(name, inputs.k) for name in FIGURE_METRICS]
    report = evaluate(
        stats,
        runs,
        Options(metrics=metrics, ci=True, resamples=resamples),
        labels_info=LabelsInfo(
            queries=stats.labels.n_queries, graded=stats.labels.n_graded, fingerprint=""
        ),
        config={},
        warnings=[],
    )
    out = {}
    for run in runs:
        result = report.runs[run.name]
        out[run.name] = RunReport(
            mean={key.base: result.mean[key.name] for key in metrics},
            valid={key.base: result.valid[key.name] for key in metrics},
            ci={key.base: (result.ci or {}).get(key.name) for key in metrics},
        )
    return out


def compare_runs(
    inputs: ViewInputs, baseline: str, run: str, metric: str = "ra_nwg", shown: int = 20
) -> ComparisonDetail:
    """Run ``run`` against run ``baseline`` on ``metric`` at K, and the queries they
    differ on most."""
    stats = inputs.stats
    by_name = {r.name: r for r in inputs.runs}
    key = MetricKey(metric, inputs.k)
    va: NDArray[np.float64] = evaluate_run(stats, by_name[baseline], [key])[key]
    vb: NDArray[np.float64] = evaluate_run(stats, by_name[run], [key])[key]
    comparison = paired_test(va, vb, EVAL_DEFAULTS, baseline=baseline, run=run, metric=key.name)
    both = np.flatnonzero(~np.isnan(va) & ~np.isnan(vb))
    gap = np.abs(vb[both] - va[both])
    order = both[np.argsort(-gap, kind="stable")]
    queries = [
        QueryDifference(inputs.rows[q], inputs.query_ids[q], float(va[q]), float(vb[q]))
        for q in order[:shown]
        if vb[q] != va[q]
    ]
    defined = (int(np.count_nonzero(~np.isnan(va))), int(np.count_nonzero(~np.isnan(vb))))
    return ComparisonDetail(comparison, inputs.k, queries, len(inputs.rows), defined)
