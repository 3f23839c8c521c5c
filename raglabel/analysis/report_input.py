"""What a report page shows, from an evaluation asked for the report's way.

``raglabel report`` and the Python API's ``Report.to_html`` both ask for the same
things (intervals, per-query values, paired tests of every run against one baseline)
and assemble the page's input here, so the two give the same page for the same inputs.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from raglabel.errors import UsageError

if TYPE_CHECKING:
    from raglabel.analysis.entry import Evaluated
    from raglabel.analysis.inputs import EvalRequest
    from raglabel.formats.agreement_report import AgreementReport
    from raglabel.report.model import ReportInput


def as_report_request(request: EvalRequest, *, runs: int, baseline: str | None) -> EvalRequest:
    """``request`` asking for what a report shows: per-query values and intervals, and,
    with more than one of ``runs`` (or a project's), paired tests of every run against
    ``baseline`` (the first run when None), adjusted over those tests alone: the same
    numbers as naming the first run as the baseline."""
    request.options = replace(
        request.options,
        ci=True,
        per_query=True,
        first_is_baseline=True,
        baseline=baseline,
        compare=request.project is not None or runs > 1,
    )
    if request.answers is not None:
        # The report shows no answer comparison: tests it computed would join the runs'
        # in one adjustment and move the p-values it does show.
        request.answers = replace(request.answers, compare=False, per_query=True)
    return request


def report_input(
    done: Evaluated,
    *,
    title: str,
    source: str,
    baseline: str | None,
    headline: str | None,
    agreement: AgreementReport | None = None,
) -> ReportInput:
    """The page's input: the evaluation, each query's grade counts, the baseline (the
    first run when None) and the headline metric (the first one when None)."""
    from raglabel.report.model import ReportInput

    report = done.report
    runs = list(report.runs)
    if not runs:
        raise UsageError("no run to report on")
    metrics = list(report.runs[runs[0]].mean)
    labels = done.labels
    counts = {}
    for q, qid in enumerate(labels.query_ids):
        row = [int(n) for n in labels.counts[q]]
        counts[qid] = (row[1], row[2], row[3], row[4], row[5])
    return ReportInput(
        data=report,
        grade_counts=counts,
        title=title,
        baseline=baseline or runs[0],
        # A headline the metrics do not hold was refused before anything was computed.
        headline=headline or metrics[0],
        source=source,
        agreement=agreement,
    )
