"""Render a :class:`Report` as a rich table, JSON, CSV or Markdown.

Table and Markdown round numbers for reading (4 decimals, intervals 3) and print the
conventions in force and each metric's definition; JSON and CSV keep every number exact
(CSV in a tidy layout, one observation per row, see :func:`_csv`).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import TYPE_CHECKING

from raglabel.cli.plain_table import Column, Table, draw, fit, layout, own_width, wrapped
from raglabel.formats.report import CorrectedComparison

if TYPE_CHECKING:
    from raglabel.formats.report import Comparison, Figure, Figures, Report
    from raglabel.formats.report_details import CriterionAnswers, GradeSummary

CSV_COLUMNS = ("kind", "run", "metric", "query", "baseline", "value")


def render(report: Report, fmt: str, *, per_query: bool = False, width: int | None = None) -> str:
    """``report`` in ``fmt``; a table laid out for a console ``width`` wide (None: no
    console, each table whole at its own width)."""
    if fmt == "json":
        return report.to_json()
    if fmt == "csv":
        return _csv(report)
    if fmt == "markdown":
        return _markdown(report, per_query=per_query)
    return _table(report, per_query=per_query, width=width)


def _number(value: float | None, digits: int = 4) -> str:
    return "NA" if value is None else f"{value:.{digits}f}"


def _per_query_cell(values: dict[str, float | None], metric: str) -> str:
    """A query's value, or ``-`` where the column is at a cutoff other than the query's
    own k (no value there; NA is a value the labels leave undefined)."""
    return _number(values[metric]) if metric in values else "-"


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


def _share_rows(report: Report) -> list[list[str]]:
    """With --fill-with-judge, a row per cutoff: each run's share of its top-K labels
    that are the judge's."""
    from raglabel.formats.judge_share import percent

    first = next(iter(report.runs.values()), None)
    if first is None or first.judge_share is None:
        return []
    return [
        [f"judge share@{k}", *[percent((r.judge_share or {}).get(k)) for r in report.runs.values()]]
        for k in first.judge_share
    ]


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
            if result.lam is not None:
                yield "lambda", run, metric, "", "", _exact(result.lam.get(metric))
            for side, figures in (
                ("judge_only", result.judge_only),
                ("human_only", result.human_only),
            ):
                if figures is not None:
                    yield from _figures_rows(side, run, metric, figures)
        for qid, values in (result.per_query or {}).items():
            for metric, value in values.items():
                yield "per_query", run, metric, qid, "", _exact(value)
        for k, share in (result.judge_share or {}).items():
            yield "judge_share", run, k, "", "", _exact(share)
    for c in report.compare or []:
        yield from _compare_rows(c)
    for system, criteria in (report.answers or {}).items():
        for criterion, answers in criteria.items():
            yield from _answer_rows(system, criterion, answers)
    for c in report.answer_compare or []:
        yield from _compare_rows(c, "answer_")


def _answer_rows(
    system: str, criterion: str, answers: CriterionAnswers
) -> Iterator[tuple[str, str, str, str, str, str]]:
    for grader, summary in (("human", answers.human), ("judge", answers.judge)):
        metric = f"{criterion}:{grader}"
        ci = summary.ci or (None, None)
        numbers: list[tuple[str, float | int | None]] = [
            ("answer_mean", summary.mean),
            ("answer_pass_rate", summary.pass_rate),
            ("answer_valid", summary.valid),
            ("answer_samples", summary.samples),
            ("answer_ci_low", ci[0]),
            ("answer_ci_high", ci[1]),
        ]
        for kind, value in numbers:
            yield kind, system, metric, "", "", _exact(value)
        for reason, count in summary.na.items():
            yield "answer_na", system, f"{metric}:{reason}", "", "", str(count)
    corrected = answers.corrected
    if corrected is None:
        yield "answer_corrected", system, criterion, "", "", ""
    else:
        yield "answer_corrected", system, criterion, "", "", _exact(corrected.mean)
        yield "answer_corrected_ci_low", system, criterion, "", "", _exact(corrected.ci[0])
        yield "answer_corrected_ci_high", system, criterion, "", "", _exact(corrected.ci[1])
        yield "answer_corrected_n_human", system, criterion, "", "", str(corrected.n_human)
        yield "answer_corrected_n_judge", system, criterion, "", "", str(corrected.n_judge)
    for sample, grades in (answers.per_sample or {}).items():
        for grader, value in (("human", grades.human), ("judge", grades.judge)):
            yield "answer_per_sample", system, f"{criterion}:{grader}", sample, "", _exact(value)


def _figures_rows(
    side: str, run: str, metric: str, figures: Figures
) -> Iterator[tuple[str, str, str, str, str, str]]:
    ci = figures.ci.get(metric) or (None, None)
    yield f"{side}_mean", run, metric, "", "", _exact(figures.mean.get(metric))
    yield f"{side}_ci_low", run, metric, "", "", _exact(ci[0])
    yield f"{side}_ci_high", run, metric, "", "", _exact(ci[1])
    yield f"{side}_valid", run, metric, "", "", str(figures.valid.get(metric, 0))


def _compare_rows(c: Comparison, prefix: str = "") -> Iterator[tuple[str, str, str, str, str, str]]:
    ci = c.ci or (None, None)
    fields: list[tuple[str, float | int | None]] = [
        ("compare_diff", c.mean_difference),
        ("compare_ci_low", ci[0]),
        ("compare_ci_high", ci[1]),
        ("compare_p", c.p_value),
        ("compare_p_adjusted", c.p_adjusted),
        # 1: adjusted within the headline family, 0: within the secondary one.
        ("compare_headline", int(c.family == "headline")),
        ("compare_wins", c.wins),
        ("compare_ties", c.ties),
        ("compare_losses", c.losses),
        ("compare_queries", c.queries),
    ]
    if isinstance(c, CorrectedComparison):
        fields += [("compare_queries_to_settle", c.queries_to_settle), ("compare_lambda", c.lam)]
        for side, figure in (("judge_only", c.judge_only), ("human_only", c.human_only)):
            if figure is not None:
                low, high = figure.ci or (None, None)
                fields += [
                    (f"compare_{side}_diff", figure.mean_difference),
                    (f"compare_{side}_ci_low", low),
                    (f"compare_{side}_ci_high", high),
                    (f"compare_{side}_queries", figure.queries),
                ]
    for kind, value in fields:
        yield prefix + kind, c.run, c.metric, "", c.baseline, _exact(value)


def _csv(report: Report) -> str:
    """Tidy CSV: ``kind,run,metric,query,baseline,value``, one number per row, exact
    (Python's shortest round-trip repr; empty for NA). ``kind`` is ``mean``, ``valid``,
    ``ci_low``/``ci_high`` (with --ci), ``per_query`` (with --per-query, ``query`` set)
    or ``compare_*`` (with --compare: diff, ci_low, ci_high, p, p_adjusted, headline
    (1 for the headline family, 0 for secondary), wins, ties, losses, queries; ``run``
    minus ``baseline``). With --answers, ``run`` is the answer
    system and ``metric`` is ``criterion:grader``: ``answer_mean``, ``answer_pass_rate``,
    ``answer_valid``, ``answer_samples``, ``answer_ci_low``/``answer_ci_high``,
    ``answer_na`` (``metric`` is ``criterion:grader:reason``), ``answer_corrected`` and
    its ``_ci_low``, ``_ci_high``, ``_n_human``, ``_n_judge`` (``metric`` the criterion),
    ``answer_per_sample`` (``query`` is the sample id) and ``answer_compare_*``. With
    --fill-with-judge, ``judge_share`` rows give each run's share of judge labels in its
    top K (``metric`` is K). With --estimate corrected, ``mean``, ``ci_low``/``ci_high``
    and ``valid`` are the corrected figures, and each run and metric adds ``lambda`` and
    ``judge_only_*``/``human_only_*`` (mean, ci_low, ci_high, valid); each comparison adds
    ``compare_queries_to_settle``, ``compare_lambda`` and ``compare_judge_only_*``/
    ``compare_human_only_*`` (diff, ci_low, ci_high, queries)."""
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
    "headline",
)


def header_lines(report: Report) -> list[str]:
    """Label set, conventions and definitions, each a line of its own. A table wraps
    them to its console at spaces only (:func:`~raglabel.cli.plain_table.wrapped`): a
    fingerprint, a path or a ``name=value`` convention is never split."""
    labels = report.labels
    config = report.config
    lines = [
        f"labels: {labels.queries} queries, {labels.graded} graded pairs ({labels.source}),"
        f" from {config.get('labels', '?')}",
        f"fingerprint: {labels.fingerprint}",
    ]
    shown = [f"{name}={_describe(config[name])}" for name in _SHOWN if name in config]
    lines.append("conventions: " + " ".join(shown))
    estimate = report.estimate
    if estimate is not None and estimate.kind == "judge":
        lines.append("estimate: judge labels only, no human grade")
    elif estimate is not None:
        lines.append(
            f"estimate: judge-corrected (prediction-powered, PPI++): the judge's figures on"
            f" {estimate.population} queries corrected by people's on {estimate.complete}"
            f" complete drawn queries of {estimate.drawn} (depth {estimate.depth});"
            f" {_describe(config.get('confidence'))} normal intervals and p-values"
        )
    if _corrected(report):
        pass  # its intervals are said on the estimate's line
    elif any(r.ci is not None for r in report.runs.values()):
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
    if _corrected(report):
        lines += ["", "| " + " | ".join(CORRECTED_HEADERS) + " |"]
        lines.append("| --- | --- | " + " | ".join("---:" for _ in CORRECTED_HEADERS[2:]) + " |")
        lines += ["| " + " | ".join(row) + " |" for row in _corrected_rows(report)]
    else:
        lines += [
            "",
            "| metric | " + " | ".join(runs) + " |",
            "| --- | " + " | ".join("---:" for _ in runs) + " |",
        ]
        for metric in _metric_names(report):
            cells = [_cell(report, run, metric) for run in runs]
            lines.append(f"| {metric} | " + " | ".join(cells) + " |")
        lines += [f"| {' | '.join(row)} |" for row in _share_rows(report)]
    lines.extend(_compare_markdown(report))
    lines.extend(_answers_markdown(report, per_query=per_query))
    if per_query:
        for run, result in report.runs.items():
            metrics = _metric_names(report)
            lines += ["", f"### {run}", "", "| query | " + " | ".join(metrics) + " |"]
            lines.append("| --- | " + " | ".join("---:" for _ in metrics) + " |")
            for qid, values in (result.per_query or {}).items():
                cells = [_per_query_cell(values, m) for m in metrics]
                lines.append(f"| {qid} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _p_header(report: Report) -> str:
    method = report.config.get("adjust", "holm")
    return "p" if method == "none" else f"p ({method})"


def _corrected(report: Report) -> bool:
    return report.estimate is not None and report.estimate.kind == "corrected"


#: The corrected estimate's table: each run's figure with the judge's and people's beside.
CORRECTED_HEADERS = ("metric", "run", "corrected", "lambda", "judge only", "human only")


def _interval_cell(mean: float | None, ci: tuple[float, float] | None, n: int) -> str:
    if mean is None:
        return f"NA (n={n})"
    text = f"{mean:.4f}"
    if ci is not None:
        text += f" [{ci[0]:.3f}, {ci[1]:.3f}]"
    return text + f" (n={n})"


def _side_cell(figures: Figures | None, metric: str) -> str:
    if figures is None:
        return "-"
    return _interval_cell(
        figures.mean.get(metric), figures.ci.get(metric), figures.valid.get(metric, 0)
    )


def _corrected_rows(report: Report) -> list[list[str]]:
    """Per metric and run: the corrected mean and interval, the judge's weight, and the
    judge-only and human-only figures."""
    rows = []
    for metric in _metric_names(report):
        for run, result in report.runs.items():
            ci = (result.ci or {}).get(metric)
            lam = (result.lam or {}).get(metric)
            rows.append(
                [
                    metric,
                    run,
                    _interval_cell(result.mean[metric], ci, result.valid[metric]),
                    _number(lam, 2),
                    _side_cell(result.judge_only, metric),
                    _side_cell(result.human_only, metric),
                ]
            )
    return rows


def _figure_cell(figure: Figure | None) -> str:
    if figure is None:
        return "-"
    return _interval_cell(figure.mean_difference, figure.ci, figure.queries)


def _compare_cells(c: Comparison) -> list[str]:
    ci = "" if c.ci is None else f"[{c.ci[0]:.4f}, {c.ci[1]:.4f}]"
    cells = [
        c.metric,
        c.baseline,
        c.run,
        _number(c.mean_difference),
        ci,
        _number(c.p_value),
        _number(c.p_adjusted),
        c.family,
    ]
    if isinstance(c, CorrectedComparison):
        return [
            *cells,
            _number(c.lam, 2),
            _figure_cell(c.judge_only),
            _figure_cell(c.human_only),
            c.settling,
        ]
    return [*cells, f"{c.wins}/{c.ties}/{c.losses}"]


def _compare_markdown(report: Report, answers: bool = False) -> list[str]:
    tests = report.answer_compare if answers else report.compare
    if not tests:
        return []
    if not answers and _corrected(report):
        headers = _corrected_compare_headers(report)
        lines = ["", "| " + " | ".join(headers) + " |"]
        right = _RIGHT | {_p_header(report)}
        lines.append("| " + " | ".join("---:" if h in right else "---" for h in headers) + " |")
        return lines + ["| " + " | ".join(_compare_cells(c)) + " |" for c in tests]
    lines = [
        "",
        f"| metric | baseline | run | diff | CI | p | {_p_header(report)} | family | W/T/L |",
        "| --- | --- | --- | ---: | --- | ---: | ---: | --- | --- |",
    ]
    for c in tests:
        lines.append("| " + " | ".join(_compare_cells(c)) + " |")
    empty = _empty_comparisons(report, tests)
    return lines + (["", *(f"- {line}" for line in empty)] if empty else [])


def _empty_comparisons(report: Report, tests: list[Comparison]) -> list[str]:
    """Why each comparison without a paired query has no values (its row is all NA):
    how many queries each side has a value on, from the runs' own counts."""
    lines = []
    for c in tests:
        if c.queries:
            continue
        base, run = (
            report.runs[name].valid.get(c.metric) if name in report.runs else None
            for name in (c.baseline, c.run)
        )
        if base is None or run is None:  # answer systems: no run of that metric
            why = "no sample has a value for both"
        elif not base and not run:
            why = "it is NA for both on every query"
        elif not base or not run:
            empty, other = (c.baseline, c.run) if not base else (c.run, c.baseline)
            why = f"it is NA for {empty} on every query ({other} has {base or run} values)"
        else:
            why = (
                f"no query has a value for both ({c.baseline} has {base},"
                f" {c.run} has {run}, never on the same query)"
            )
        lines.append(f"{c.metric}, {c.run} vs {c.baseline}: nothing to compare: {why}")
    return lines


ANSWER_HEADERS = ("criterion", "human", "judge", "corrected", "NA human", "NA judge")


def _summary_cell(summary: GradeSummary, digits: int = 4) -> str:
    if summary.mean is None:
        return f"NA (n=0 of {summary.samples})"
    text = f"{summary.mean:.{digits}f}"
    if summary.ci is not None:
        text += f" [{summary.ci[0]:.3f}, {summary.ci[1]:.3f}]"
    rate = "NA" if summary.pass_rate is None else f"{summary.pass_rate:.0%}"
    return text + f" pass {rate} (n={summary.valid} of {summary.samples})"


def _na_cell(summary: GradeSummary) -> str:
    return ", ".join(f"{reason} {count}" for reason, count in summary.na.items()) or "-"


def answer_cells(criterion: str, answers: CriterionAnswers) -> list[str]:
    """One criterion's row of the answers table: each grader's mean with its interval,
    pass rate and counts, the corrected mean, and the NA counts by reason."""
    corrected = answers.corrected
    fixed = "NA (n<30)"
    if corrected is not None:
        lo, hi = corrected.ci
        fixed = f"{corrected.mean:.4f} [{lo:.3f}, {hi:.3f}] (n={corrected.n_human})"
    return [
        criterion,
        _summary_cell(answers.human),
        _summary_cell(answers.judge),
        fixed,
        _na_cell(answers.human),
        _na_cell(answers.judge),
    ]


def _retrieval_line(report: Report, system: str) -> str | None:
    run = report.runs.get(system)
    if run is None:
        return None
    shown = ", ".join(f"{metric} {_number(value)}" for metric, value in run.mean.items())
    return f"retrieval (run {system}): {shown}"


def _answers_header(report: Report) -> list[str]:
    settings = report.config.get("answers")
    if not isinstance(settings, dict):
        return []
    thresholds = settings.get("thresholds", {})
    return [
        "answers: human grades resolved by the lower median over annotators, judge grades"
        " by the lower median over models and repeats; pass at "
        + _describe(thresholds)
        + "; corrected mean (prediction-powered) where at least"
        f" {settings.get('corrected_min_human')} samples carry both a judge and a human grade"
    ]


def _sample_rows(criteria: dict[str, CriterionAnswers]) -> tuple[list[str], list[list[str]]]:
    """Per sample: each criterion as ``human / judge`` and ctx_rank_prec's ideal ranks."""
    names = list(criteria)
    headers = ["sample", "query", *names, "ideal ranks"]
    first = next(iter(criteria.values()))
    rows = []
    for sample, head in (first.per_sample or {}).items():
        cells = [sample, head.query]
        ranks = ""
        for name in names:
            grades = (criteria[name].per_sample or {})[sample]
            human = _number(grades.human, 2) if grades.human is not None else grades.human_na or "-"
            judge = _number(grades.judge, 2) if grades.judge is not None else grades.judge_na or "-"
            cells.append(f"{human} / {judge}")
            if grades.ideal_ranks is not None:
                ranks = ",".join(map(str, grades.ideal_ranks))
        rows.append([*cells, ranks])
    return headers, rows


def _answers_markdown(report: Report, *, per_query: bool) -> list[str]:
    if report.answers is None:
        return []
    lines = ["", "## Answers", ""] + [f"- {line}" for line in _answers_header(report)]
    for system, criteria in report.answers.items():
        lines += ["", f"### {system}", ""]
        retrieval = _retrieval_line(report, system)
        if retrieval:
            lines += [retrieval, ""]
        lines.append("| " + " | ".join(ANSWER_HEADERS) + " |")
        lines.append("| --- | ---: | ---: | ---: | --- | --- |")
        for criterion, answers in criteria.items():
            lines.append("| " + " | ".join(answer_cells(criterion, answers)) + " |")
        if per_query and criteria:
            headers, rows = _sample_rows(criteria)
            lines += ["", f"#### {system}: per sample (human / judge)", ""]
            lines.append("| " + " | ".join(headers) + " |")
            lines.append("| " + " | ".join("---" for _ in headers) + " |")
            lines += ["| " + " | ".join(row) + " |" for row in rows]
    lines.extend(_compare_markdown(report, answers=True))
    return lines


def _table(report: Report, *, per_query: bool = False, width: int | None = None) -> str:
    output = io.StringIO()
    labels = report.labels
    for line in header_lines(report):
        output.writelines(text + "\n" for text in wrapped(line, width))
    if _corrected(report):
        columns = [Column(h, right=i > 1) for i, h in enumerate(CORRECTED_HEADERS)]
        table = Table(columns, _corrected_rows(report), title="judge-corrected means", keys=2)
        output.write(_drawn(table, width))
    else:
        columns = [Column("metric"), *(Column(run, right=True) for run in report.runs)]
        rows = [
            [metric, *[_cell(report, run, metric) for run in report.runs]]
            for metric in _metric_names(report)
        ]
        rows += _share_rows(report)
        # Runs side by side, or a run a row where that fits better (six with intervals).
        output.write(_drawn(Table(columns, rows, corner="run"), width))
    if report.compare:
        output.write(
            _drawn(
                _compare_table(
                    "paired randomization tests (run - baseline)", "run", report.compare, report
                ),
                width,
            )
        )
        for line in _empty_comparisons(report, report.compare):
            output.writelines(text + "\n" for text in wrapped(line, width))
    if per_query and report.runs:
        metrics = _metric_names(report)
        for run, result in report.runs.items():
            columns = [Column("query"), *(Column(metric, right=True) for metric in metrics)]
            rows = [
                [qid, *[_per_query_cell(values, m) for m in metrics]]
                for qid, values in (result.per_query or {}).items()
            ]
            output.write(_drawn(Table(columns, rows, title=f"{run}: per query"), width))
    _answers_table(report, output, per_query=per_query, width=width)
    if labels.grade_inversions:
        shown = ", ".join(labels.grade_inversions[:5])
        more = "" if len(labels.grade_inversions) <= 5 else ", ..."
        line = (
            f"grade inversion (a lower grade outweighs a higher one) in "
            f"{len(labels.grade_inversions)} queries: {shown}{more}"
        )
        output.writelines(text + "\n" for text in wrapped(line, width))
    return output.getvalue()


#: Right-aligned columns of the corrected comparisons' table.
_RIGHT = frozenset({"diff", "p", "lambda", "judge only", "human only"})


def _corrected_compare_headers(report: Report) -> tuple[str, ...]:
    p = _p_header(report)
    return (
        "metric", "baseline", "run", "diff", "CI", "p", p, "family", "lambda",
        "judge only", "human only", "settle",
    )  # fmt: skip


def _compare_table(title: str, side: str, comparisons: list[Comparison], report: Report) -> Table:
    if side == "run" and _corrected(report):
        headers = _corrected_compare_headers(report)
        right = _RIGHT | {headers[6]}  # the adjusted p-value's column
        columns = [Column(header, right=header in right) for header in headers]
        title = "judge-corrected paired differences (run - baseline), normal tests"
        return Table(columns, [_compare_cells(c) for c in comparisons], title=title, keys=3)
    headers = ("metric", "baseline", side, "diff", "CI", "p", _p_header(report), "family", "W/T/L")
    columns = [Column(header, right=header in {"diff", "p"}) for header in headers]
    # A test is named by its metric, baseline and run: all three lead each block.
    return Table(columns, [_compare_cells(c) for c in comparisons], title=title, keys=3)


def _drawn(table: Table, width: int | None) -> str:
    """The table for a console ``width`` wide: as blocks of its columns that each fit,
    or turned rows for columns, after a line that says so, where it is wider
    (:func:`layout`); each drawn as rich
    draws it, or wider where a value alone is wider (:func:`fit`). With no console
    (None) the table is drawn whole."""
    if width is None:
        return _drawn_block(table, own_width(table))
    blocks, note = layout(table, width)
    text = "".join(_drawn_block(*fit(block, width)) for block in blocks)
    return text if note is None else note + "\n" + text


def _drawn_block(table: Table, width: int) -> str:
    """One table as rich draws it on a console ``width`` wide; rich itself is imported
    only for what the plain drawing cannot do."""
    text = draw(table, width)
    if text is not None:
        return text
    from rich import box
    from rich.console import Console
    from rich.table import Table as RichTable

    output = io.StringIO()
    drawn = RichTable(title=table.title, box=box.SIMPLE_HEAVY)
    for column in table.columns:
        drawn.add_column(column.header, justify="right" if column.right else "left")
    for row in table.rows:
        drawn.add_row(*row)
    Console(file=output, width=width).print(drawn)
    return output.getvalue()


def _answers_table(
    report: Report, output: io.StringIO, *, per_query: bool, width: int | None
) -> None:
    if report.answers is None:
        return
    for line in _answers_header(report):
        output.writelines(text + "\n" for text in wrapped(line, width))
    for system, criteria in report.answers.items():
        columns = [Column(h, right=h in ANSWER_HEADERS[1:4]) for h in ANSWER_HEADERS]
        rows = [answer_cells(criterion, answers) for criterion, answers in criteria.items()]
        output.write(_drawn(Table(columns, rows, title=f"answers of {system}"), width))
        retrieval = _retrieval_line(report, system)
        if retrieval:
            output.writelines(text + "\n" for text in wrapped(retrieval, width))
        if per_query and criteria:
            headers, sample_rows = _sample_rows(criteria)
            title = f"{system}: per sample (human / judge)"
            table = Table([Column(h) for h in headers], sample_rows, title=title)
            output.write(_drawn(table, width))
    if report.answer_compare:
        title = "paired randomization tests between answer systems (system - baseline)"
        table = _compare_table(title, "system", report.answer_compare, report)
        output.write(_drawn(table, width))
        for line in _empty_comparisons(report, report.answer_compare):
            output.writelines(text + "\n" for text in wrapped(line, width))
