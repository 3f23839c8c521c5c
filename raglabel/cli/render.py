"""Render a :class:`Report` as a rich table, JSON, CSV or Markdown.

Table and Markdown round numbers for reading (4 decimals, intervals 3) and print the
conventions in force and each metric's definition; JSON and CSV keep every number exact
(CSV in a tidy layout, one observation per row, see :func:`_csv`).
"""

from __future__ import annotations

import io
from collections.abc import Iterator

from raglabel.formats.report import Comparison, Report

CSV_COLUMNS = ("kind", "run", "metric", "query", "baseline", "value")


def render(report: Report, fmt: str, *, per_query: bool = False) -> str:
    if fmt == "json":
        return report.to_json()
    if fmt == "csv":
        return _csv(report)
    if fmt == "markdown":
        return _markdown(report, per_query=per_query)
    return _table(report, per_query=per_query)


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


def _exact(value: float | int | None) -> str:
    return "" if value is None else repr(value)


def _csv_rows(report: Report) -> Iterator[tuple[str, str, str, str, str, str]]:
    for run, result in report.runs.items():
        for metric, mean in result.mean.items():
            yield "mean", run, metric, "", "", _exact(mean)
            yield "valid", run, metric, "", "", str(result.valid[metric])
            ci = (result.ci or {}).get(metric)
            if result.ci is not None:
                yield "ci_low", run, metric, "", "", _exact(None if ci is None else ci[0])
                yield "ci_high", run, metric, "", "", _exact(None if ci is None else ci[1])
        for qid, values in (result.per_query or {}).items():
            for metric, value in values.items():
                yield "per_query", run, metric, qid, "", _exact(value)
    for c in report.compare or []:
        yield from _compare_rows(c)


def _compare_rows(c: Comparison) -> Iterator[tuple[str, str, str, str, str, str]]:
    ci = c.ci or (None, None)
    fields: list[tuple[str, float | int | None]] = [
        ("compare_diff", c.mean_difference),
        ("compare_ci_low", ci[0]),
        ("compare_ci_high", ci[1]),
        ("compare_p", c.p_value),
        ("compare_p_adjusted", c.p_adjusted),
        ("compare_wins", c.wins),
        ("compare_ties", c.ties),
        ("compare_losses", c.losses),
        ("compare_queries", c.queries),
    ]
    for kind, value in fields:
        yield kind, c.run, c.metric, "", c.baseline, _exact(value)


def _csv(report: Report) -> str:
    """Tidy CSV: ``kind,run,metric,query,baseline,value``, one number per row, exact
    (Python's shortest round-trip repr; empty for NA). ``kind`` is ``mean``, ``valid``,
    ``ci_low``/``ci_high`` (with --ci), ``per_query`` (with --per-query, ``query`` set)
    or ``compare_*`` (with --compare: diff, ci_low, ci_high, p, p_adjusted, wins, ties,
    losses, queries; ``run`` minus ``baseline``)."""
    import csv

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    writer.writerows(_csv_rows(report))
    return buffer.getvalue()


def _describe(value: object) -> str:
    if isinstance(value, dict):
        return ",".join(f"{k}:{_describe(v)}" for k, v in value.items()) or "none"
    if isinstance(value, list):
        return ",".join(_describe(v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


_SHOWN = (
    "k",
    "alpha",
    "cap4",
    "cap3",
    "harm_threshold",
    "relevance_threshold",
    "gain_map",
    "grade_map",
    "ctx_threshold",
    "pool",
    "na",
    "judged_only",
    "adjust",
)


def header_lines(report: Report) -> list[str]:
    """Label set, conventions and definitions, each a line of its own (a fingerprint is
    never split: these lines are printed as they are, not wrapped)."""
    labels = report.labels
    config = report.config
    lines = [
        f"labels: {labels.queries} queries, {labels.graded} graded pairs, {labels.source} "
        f"grades, from {config.get('labels', '?')}",
        f"fingerprint: {labels.fingerprint}",
    ]
    shown = [f"{name}={_describe(config[name])}" for name in _SHOWN if name in config]
    lines.append("conventions: " + " ".join(shown))
    if any(r.ci is not None for r in report.runs.values()):
        lines.append(
            f"intervals: {_describe(config.get('confidence'))} percentile bootstrap, "
            f"{config.get('resamples')} resamples, seed {config.get('seed')}"
        )
    definitions = config.get("definitions")
    if isinstance(definitions, list):
        lines += [f"  {text}" for text in definitions]
    return lines


def _markdown(report: Report, *, per_query: bool) -> str:
    runs = list(report.runs)
    head = header_lines(report)
    lines = [head[0] + "  ", head[1] + "  ", head[2], ""]
    lines += [f"- {text.strip()}" for text in head[3:]]
    lines += [
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


def _p_header(report: Report) -> str:
    method = report.config.get("adjust", "holm")
    return "p" if method == "none" else f"p ({method})"


def _compare_cells(c: Comparison) -> list[str]:
    ci = "" if c.ci is None else f"[{c.ci[0]:.4f}, {c.ci[1]:.4f}]"
    return [
        c.metric,
        c.baseline,
        c.run,
        _number(c.mean_difference),
        ci,
        _number(c.p_value),
        _number(c.p_adjusted),
        f"{c.wins}/{c.ties}/{c.losses}",
    ]


def _compare_markdown(report: Report) -> list[str]:
    if not report.compare:
        return []
    lines = [
        "",
        f"| metric | baseline | run | diff | CI | p | {_p_header(report)} | W/T/L |",
        "| --- | --- | --- | ---: | --- | ---: | ---: | --- |",
    ]
    for c in report.compare:
        lines.append("| " + " | ".join(_compare_cells(c)) + " |")
    return lines


def _table(report: Report, *, per_query: bool = False) -> str:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    has_ci = any(result.ci for result in report.runs.values())
    # Wide enough that a cell with its interval and count never wraps.
    column = 36 if has_ci else 20
    output = io.StringIO()
    console = Console(file=output, width=max(80, 24 + column * len(report.runs)))
    labels = report.labels
    for line in header_lines(report):
        output.write(line + "\n")
    table = Table(box=box.SIMPLE_HEAVY)
    table.add_column("metric", style="bold")
    for run in report.runs:
        table.add_column(run, justify="right")
    for metric in _metric_names(report):
        table.add_row(metric, *[_cell(report, run, metric) for run in report.runs])
    console.print(table)
    if report.compare:
        comp = Table(title="paired randomization tests (run - baseline)", box=box.SIMPLE_HEAVY)
        headers = ("metric", "baseline", "run", "diff", "CI", "p", _p_header(report), "W/T/L")
        for header in headers:
            comp.add_column(header, justify="right" if header in {"diff", "p"} else "left")
        for c in report.compare:
            comp.add_row(*_compare_cells(c))
        console.print(comp)
    if per_query:
        metrics = _metric_names(report)
        for run, result in report.runs.items():
            rows = Table(title=f"{run}: per query", box=box.SIMPLE_HEAVY)
            rows.add_column("query")
            for metric in metrics:
                rows.add_column(metric, justify="right")
            for qid, values in (result.per_query or {}).items():
                rows.add_row(qid, *[_number(values[m]) for m in metrics])
            wide = Console(file=output, width=max(80, 12 + 12 * (len(metrics) + 1)))
            wide.print(rows)
    if labels.grade_inversions:
        shown = ", ".join(labels.grade_inversions[:5])
        more = "" if len(labels.grade_inversions) <= 5 else ", ..."
        output.write(
            f"grade inversion (a lower grade outweighs a higher one) in "
            f"{len(labels.grade_inversions)} queries: {shown}{more}\n"
        )
    return output.getvalue()
