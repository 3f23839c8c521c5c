"""The report's "Judge-corrected" section: each run's three estimates (people's grades
on the drawn queries, the judge's labels on every query, and judge-corrected) as forest
plots, and in words what the corrected comparison of each run with the baseline says.

The numbers are ``raglabel eval --estimate corrected --compare``'s, handed in on
:class:`~raglabel.report.model.ReportInput`; nothing here estimates anything.
"""

from __future__ import annotations

from raglabel.formats.report import CorrectedComparison, EstimateInfo, Figure, Report
from raglabel.metrics.names import lower_is_better
from raglabel.report.charts import Interval, forest
from raglabel.report.model import ReportInput
from raglabel.report.parts import Chart, Section, Table, bracket, named, slug
from raglabel.report.summary import bounds, value

TITLE = "Judge-corrected"


def corrected_section(report: ReportInput) -> Section | None:
    """The section, or None when the project has no audit draw (nothing to say)."""
    if report.corrected_missing is not None:
        return Section(
            TITLE,
            [
                "Not computed: the project has an audit draw, but the judge-corrected"
                f" estimate needs more: {report.corrected_missing}."
            ],
        )
    corrected = report.corrected
    if corrected is None or corrected.estimate is None:
        return None
    info = corrected.estimate
    level = f"{report.confidence:.0%}"
    section = Section(TITLE, [_what(info, level)])
    pairs = [c for run in report.runs if (c := report.corrected_comparison(run, report.headline))]
    if pairs:
        section.paragraphs.append(" ".join(lead_sentence(report, c) for c in pairs))
    if info.incomplete:
        shown = ", ".join(info.incomplete[:5]) + (", …" if len(info.incomplete) > 5 else "")
        section.paragraphs.append(
            f"{len(info.incomplete)} of the {info.drawn} drawn queries are not complete"
            f" ({shown}) and are left out: the estimate is valid only if whatever kept them"
            " incomplete has nothing to do with their labels."
        )
    section.charts.append(_means_chart(report, corrected, level))
    if pairs:
        section.charts.append(_differences_chart(report, pairs, level))
    section.tables.append(_means_table(report, corrected))
    if corrected.compare:
        section.tables.append(_comparisons_table(corrected))
    if corrected.warnings:
        # What the estimate's own evaluation said: eval --estimate corrected prints it.
        section.tables.append(Table(["estimate warning"], [[w] for w in corrected.warnings]))
    return section


def _what(info: EstimateInfo, level: str) -> str:
    return (
        f"The judge's labels on all {info.population} queries the runs cover, corrected by"
        f" people's grades on the {info.complete} complete queries of a uniformly random"
        f" draw of {info.drawn} (complete: a person graded every passage a run ranks within"
        f" its top {info.depth}), as raglabel eval --estimate corrected computes it. Valid"
        " when the draw was random (raglabel audit) and the judge was fixed before it,"
        " never tuned on the drawn queries' grades. In the charts the filled markers are"
        " the corrected estimates, the hollow ones the judge's labels alone (every query)"
        f" and people's grades alone (the complete drawn queries), each with its {level}"
        " normal interval."
    )


def lead_sentence(report: ReportInput, c: CorrectedComparison) -> str:
    """What the corrected comparison of ``c.run`` with the baseline says, in the words
    a lead needs: who beats whom by how much, or that the two cannot be told apart and
    how many more graded queries would likely settle it."""
    assert report.corrected is not None and report.corrected.estimate is not None
    info = report.corrected.estimate
    metric = named(c.metric)
    level = f"{report.confidence:.0%}"
    graded = f"With {info.complete} graded queries and the judge on all {info.population}"
    if c.mean_difference is None or c.ci is None:
        return (
            f"{graded}, {c.run} and {c.baseline} have no corrected difference on {metric}:"
            " too few complete drawn queries where it is defined."
        )
    difference, (low, high) = c.mean_difference, c.ci
    if low > 0 or high < 0:
        run_better = (difference > 0) != lower_is_better(c.metric)
        winner, loser = (c.run, c.baseline) if run_better else (c.baseline, c.run)
        if not run_better:  # said from the winner's side
            difference, low, high = -difference, -high, -low
        return (
            f"{graded}, {winner} beats {loser} on {metric} by {difference:+.3f}, {level}"
            f" interval {low:+.3f} to {high:+.3f}."
        )
    settle = c.queries_to_settle
    if settle:
        after = f" About {settle} more graded drawn queries would likely settle it."
    elif difference:
        left = info.population - (info.complete or 0)
        after = (
            f" Even grading all {left} remaining queries would likely not settle it at"
            " this effect size."
            if left
            else " Every query is graded in full already, so no more grading can settle it."
        )
    else:
        after = ""
    return (
        f"{graded}, {metric} cannot tell {c.run} and {c.baseline} apart: {c.run} minus"
        f" {c.baseline} is {difference:+.3f}, {level} interval {low:+.3f} to {high:+.3f},"
        f" which includes 0.{after}"
    )


def _means_chart(report: ReportInput, corrected: Report, level: str) -> Chart:
    metric = report.headline
    index = {name: i for i, name in enumerate(report.runs)}
    rows: list[Interval] = []
    for name, run in corrected.runs.items():
        sides = [("corrected", run.mean.get(metric), (run.ci or {}).get(metric), True)]
        for label, figures in (("judge", run.judge_only), ("people", run.human_only)):
            if figures is not None:
                sides.append((label, figures.mean.get(metric), figures.ci.get(metric), False))
        for label, mean, ci, strong in sides:
            if mean is None:
                continue
            low, high = (None, None) if ci is None else ci
            rows.append(Interval(f"{name} {label}", index[name], mean, low, high, strong))
    return Chart(
        f"corrected-{slug(metric)}",
        f"{named(metric)}: three estimates per run",
        forest(f"{named(metric)}: corrected, judge-only and people-only, {level}", rows),
    )


def _differences_chart(report: ReportInput, pairs: list[CorrectedComparison], level: str) -> Chart:
    metric = report.headline
    index = {name: i for i, name in enumerate(report.runs)}
    rows: list[Interval] = []
    for c in pairs:
        sides: list[tuple[str, Figure]] = [("corrected", Figure(c.mean_difference, c.ci, 0))]
        sides += [(label, f) for label, f in (("judge", c.judge_only), ("people", c.human_only))
                  if f is not None]  # fmt: skip
        for label, figure in sides:
            if figure.mean_difference is None:
                continue
            low, high = (None, None) if figure.ci is None else figure.ci
            rows.append(
                Interval(
                    f"{c.run} {label}",
                    index[c.run],
                    figure.mean_difference,
                    low,
                    high,
                    label == "corrected",
                )
            )
    return Chart(
        f"corrected-difference-{slug(metric)}",
        f"{named(metric)} minus {report.baseline}: three estimates per run",
        forest(
            f"{named(metric)} minus {report.baseline}: corrected, judge-only and"
            f" people-only, {level}",
            rows,
            zero=True,
        ),
    )


def _interval(mean: float | None, ci: tuple[float, float] | None, n: int | None) -> str:
    if mean is None:
        return "NA"
    text = value(mean)
    if ci is not None:
        low, high = bounds(ci)
        text += f" [{low}, {high}]"
    return text if n is None else f"{text} (n={n})"


def _means_table(report: ReportInput, corrected: Report) -> Table:
    rows = []
    for metric in report.metrics:
        for name, run in corrected.runs.items():
            if metric not in run.mean:
                continue  # a ratio of means (%PROC) has no corrected estimate
            lam = (run.lam or {}).get(metric)
            cells = [named(metric), name]
            cells.append(_interval(run.mean[metric], (run.ci or {}).get(metric), None))
            cells.append("NA" if lam is None else f"{lam:.2f}")
            for figures in (run.judge_only, run.human_only):
                if figures is None:
                    cells.append("NA")
                    continue
                cells.append(
                    _interval(
                        figures.mean.get(metric),
                        figures.ci.get(metric),
                        figures.valid.get(metric),
                    )
                )
            rows.append(cells)
    return Table(["metric", "run", "corrected", "lambda", "judge only", "people only"], rows)


def _comparisons_table(corrected: Report) -> Table:
    rows = []
    for c in corrected.compare or ():
        if not isinstance(c, CorrectedComparison):
            continue
        p = c.p_adjusted if c.p_adjusted is not None else c.p_value
        sides = [
            "NA" if f is None else _interval(f.mean_difference, f.ci, f.queries)
            for f in (c.judge_only, c.human_only)
        ]
        rows.append(
            [
                f"{c.run} - {c.baseline}",
                named(c.metric),
                "NA"
                if c.mean_difference is None
                else f"{c.mean_difference:+.4f} {bracket(c.ci)}".strip(),
                "NA" if p is None else f"{p:.4f}",
                *sides,
                c.settling,
            ]
        )
    return Table(
        [
            # First: the folded table's summary line is "difference table".
            "difference",
            "metric",
            "corrected [interval]",
            "p adjusted",
            "judge only",
            "people only",
            "to settle",
        ],
        rows,
    )
