"""The Runs screen's other estimates: its runs scored on the judge's labels, or
judge-corrected by people's grades on the audit sample (issue 29).

Both are ``raglabel eval DB --estimate judge|corrected`` at the app's K on the metrics
the screen tabulates, through the same entry (:func:`~raglabel.analysis.corrected.
estimate_request`), so the app and the command line give the same numbers. Like the
command, they read the project file (everyone's grades, resolved as ``eval`` resolves
them, whatever the app's blind setting: the audit counts a drawn query complete on any
person's grades, and one annotator's alone would leave passages ungraded in it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from raglabel.analysis.corrected import RATIO_METRICS, EstimateRefusedError, estimate_request
from raglabel.analysis.evaluation import Options
from raglabel.analysis.inputs import EvalRequest
from raglabel.formats.report import CorrectedComparison, EstimateInfo, Figures, RunReport
from raglabel.metrics.config import MetricConfig
from raglabel.metrics.names import MetricKey
from raglabel.session.run_figures import FIGURE_METRICS

Estimate = Literal["human", "judge", "corrected"]
#: The order the Runs screen's key steps through them.
ESTIMATES: tuple[Estimate, ...] = ("human", "judge", "corrected")
#: The metric every comparison on the screen is on, as the human view's comparisons.
COMPARED = "ra_nwg"
#: The screen's columns the corrected estimate leaves out: ratios of means.
NOT_CORRECTED = tuple(name for name in FIGURE_METRICS if name in RATIO_METRICS)


def next_estimate(current: Estimate) -> Estimate:
    return ESTIMATES[(ESTIMATES.index(current) + 1) % len(ESTIMATES)]


@dataclass(frozen=True)
class EstimateAsk:
    """What a worker thread needs to compute an estimate: nothing of the live session."""

    kind: Estimate
    project: Path | None  # None: a project held in memory, which has no file to read
    k: int
    config: MetricConfig


@dataclass(frozen=True)
class EstimateFigures:
    """Each run's figures (metrics named without the cutoff, as the human view names
    them; ``None`` where the estimate has none, such as %PROC corrected), and for
    ``corrected`` every pair of runs compared on RA-nWG@K."""

    kind: Estimate
    reports: dict[str, RunReport]
    comparisons: list[CorrectedComparison]
    estimate: EstimateInfo
    warnings: list[str]


@dataclass(frozen=True)
class EstimateRefusal:
    """Why the estimate cannot be computed, and what supplies it, for one line."""

    reason: str
    fix: str

    @property
    def line(self) -> str:
        return f"{self.reason}: {self.fix}"


def estimate_figures(ask: EstimateAsk) -> EstimateFigures | EstimateRefusal:
    """``eval --estimate`` of ``ask.kind`` (``judge`` or ``corrected``) on the screen's
    metrics at K, with every pair of runs compared when corrected."""
    if ask.kind == "human":
        raise ValueError("the human estimate is the screen's own figures (run_figures)")
    if ask.project is None:
        return EstimateRefusal("no project file", "open a project with raglabel label DB")
    keys = [MetricKey(name, ask.k) for name in FIGURE_METRICS]
    corrected = ask.kind == "corrected"
    request = EvalRequest(
        # The judge's intervals are eval's bootstrap; corrected ones are normal and
        # come with the estimate. Comparisons only where they tell how far to settle.
        options=Options(metrics=keys, ci=not corrected, compare=corrected),
        cutoffs=[ask.k],
        config=ask.config,
        project=ask.project,
    )
    try:
        done = estimate_request(request, ask.kind)
    except EstimateRefusedError as refused:
        return EstimateRefusal(refused.reason, refused.fix)
    report = done.report
    runs = {name: _by_base(run, keys) for name, run in report.runs.items()}
    compared = MetricKey(COMPARED, ask.k).name
    comparisons = [
        c
        for c in report.compare or ()
        if isinstance(c, CorrectedComparison) and c.metric == compared
    ]
    assert report.estimate is not None
    return EstimateFigures(ask.kind, runs, comparisons, report.estimate, done.warnings)


def _by_base(run: RunReport, keys: list[MetricKey]) -> RunReport:
    """``run`` with its metrics named by base (``ra_nwg``), every screen column present."""

    def renamed(figures: Figures | None) -> Figures | None:
        if figures is None:
            return None
        return Figures(
            mean={k.base: figures.mean.get(k.name) for k in keys},
            ci={k.base: figures.ci.get(k.name) for k in keys},
            valid={k.base: figures.valid.get(k.name, 0) for k in keys},
        )

    ci = run.ci or {}
    lam = run.lam
    return RunReport(
        mean={k.base: run.mean.get(k.name) for k in keys},
        valid={k.base: run.valid.get(k.name, 0) for k in keys},
        ci={k.base: ci.get(k.name) for k in keys},
        lam=None if lam is None else {k.base: lam.get(k.name) for k in keys},
        judge_only=renamed(run.judge_only),
        human_only=renamed(run.human_only),
    )
