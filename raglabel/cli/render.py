"""Render a :class:`Report` as a rich table, JSON, CSV or Markdown."""

from __future__ import annotations

import io

from raglabel.formats.report import Report


def render(report: Report, fmt: str, *, per_query: bool = False) -> str:
    if fmt == "json":
        return report.to_json()
    if fmt == "csv":
        return _csv(report, per_query=per_query)
    if fmt == "markdown":
        return _markdown(report, per_query=per_query)
    return _table(report)


def _number(value: float | None, digits: int = 4) -> str:
    return "NA" if value is None else f"{value:.{digits}f}"


def _metric_names(report: Report) -> list[str]:
    first = next(iter(report.runs.values()), None)
    return list(first.mean) if first is not None else []


def _cell(report: Report, run: str, metric: str) -> str:
    result = report.runs[run]
    text = _number(result.mean[metric])
    if result.ci and result.ci.get(metric):
        lo, hi = result.ci[metric] or (0.0, 0.0)
        text += f" [{lo:.3f}, {hi:.3f}]"
    if result.valid[metric] < report.labels.queries:
        text += f" (n={result.valid[metric]})"
    return text


def _csv(report: Report, *, per_query: bool) -> str:
    import csv

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    if per_query:
        writer.writerow(["run", "query", "metric", "value"])
        for run, result in report.runs.items():
            for qid, values in (result.per_query or {}).items():
                for metric, value in values.items():
                    writer.writerow([run, qid, metric, "" if value is None else repr(value)])
        return buffer.getvalue()
    writer.writerow(["run", "metric", "mean", "valid", "ci_low", "ci_high"])
    for run, result in report.runs.items():
        for metric, mean in result.mean.items():
            ci = (result.ci or {}).get(metric)
            writer.writerow(
                [
                    run,
                    metric,
                    "" if mean is None else repr(mean),
                    result.valid[metric],
                    "" if ci is None else repr(ci[0]),
                    "" if ci is None else repr(ci[1]),
                ]
            )
    return buffer.getvalue()


def _markdown(report: Report, *, per_query: bool) -> str:
    runs = list(report.runs)
    lines = [
        f"Labels: {report.labels.queries} queries, {report.labels.graded} graded pairs "
        f"({report.labels.fingerprint}, {report.labels.source} grades)",
        "",
        "| metric | " + " | ".join(runs) + " |",
        "| --- | " + " | ".join("---:" for _ in runs) + " |",
    ]
    for metric in _metric_names(report):
        cells = [_cell(report, run, metric) for run in runs]
        lines.append(f"| {metric} | " + " | ".join(cells) + " |")
    lines.extend(_compare_markdown(report))
    if per_query:
        for run, result in report.runs.items():
            metrics = _metric_names(report)
            lines += ["", f"### {run}", "", "| query | " + " | ".join(metrics) + " |"]
            lines.append("| --- | " + " | ".join("---:" for _ in metrics) + " |")
            for qid, values in (result.per_query or {}).items():
                cells = [_number(values[m]) for m in metrics]
                lines.append(f"| {qid} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _compare_markdown(report: Report) -> list[str]:
    if not report.compare:
        return []
    lines = [
        "",
        "| metric | baseline | run | diff | CI | p | W/T/L |",
        "| --- | --- | --- | ---: | --- | ---: | --- |",
    ]
    for c in report.compare:
        ci = "" if c.ci is None else f"[{c.ci[0]:.4f}, {c.ci[1]:.4f}]"
        lines.append(
            f"| {c.metric} | {c.baseline} | {c.run} | {_number(c.mean_difference)} | {ci} | "
            f"{_number(c.p_value)} | {c.wins}/{c.ties}/{c.losses} |"
        )
    return lines


def _table(report: Report) -> str:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    has_ci = any(result.ci for result in report.runs.values())
    # Wide enough that a cell with its interval and count never wraps.
    column = 36 if has_ci else 20
    console = Console(file=io.StringIO(), width=max(80, 24 + column * len(report.runs)))
    labels = report.labels
    title = (
        f"{labels.queries} queries, {labels.graded} graded pairs, "
        f"labels {labels.fingerprint} ({labels.source})"
    )
    table = Table(title=title, box=box.SIMPLE_HEAVY)
    table.add_column("metric", style="bold")
    for run in report.runs:
        table.add_column(run, justify="right")
    for metric in _metric_names(report):
        table.add_row(metric, *[_cell(report, run, metric) for run in report.runs])
    console.print(table)
    if report.compare:
        comp = Table(title="paired randomization tests (run - baseline)", box=box.SIMPLE_HEAVY)
        for header in ("metric", "baseline", "run", "diff", "CI", "p", "W/T/L"):
            comp.add_column(header, justify="right" if header in {"diff", "p"} else "left")
        for c in report.compare:
            ci = "" if c.ci is None else f"[{c.ci[0]:.4f}, {c.ci[1]:.4f}]"
            comp.add_row(
                c.metric,
                c.baseline,
                c.run,
                _number(c.mean_difference),
                ci,
                _number(c.p_value),
                f"{c.wins}/{c.ties}/{c.losses}",
            )
        console.print(comp)
    if labels.grade_inversions:
        shown = ", ".join(labels.grade_inversions[:5])
        more = "" if len(labels.grade_inversions) <= 5 else ", ..."
        console.print(
            f"grade inversion (a lower grade outweighs a higher one) in "
            f"{len(labels.grade_inversions)} queries: {shown}{more}"
        )
    output = console.file
    assert isinstance(output, io.StringIO)
    return output.getvalue()
