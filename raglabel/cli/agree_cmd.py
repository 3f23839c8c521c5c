"""``raglabel agree``: agreement between annotators, and between the judge and them."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import TYPE_CHECKING, Any

from raglabel.cli.arguments import int_in
from raglabel.cli.options import add_convention_options, cutoffs_option, metric_config
from raglabel.cli.probe_options import add_probe_options, probe_requested, run_probe
from raglabel.errors import UsageError

if TYPE_CHECKING:
    from raglabel.cli.plain_table import Table
    from raglabel.formats.agreement_report import AgreementReport, CriterionAgreement
    from raglabel.metrics.answer_stats import AlphaInterval

DEFAULT_METRICS = "ra_nwg,ndcg@k,precision_4plus"


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "agree",
        help="agreement between annotators, and between the judge and people",
        description=(
            "Krippendorff's alpha (ordinal) and Cohen's kappa (quadratic, unweighted, and "
            "binary at --relevance-threshold) between annotators and between each judge "
            "model and the resolved human grades; the judge's bias, its confusion matrix, "
            "how often annotators accepted suggestions, the queries with most disagreement, "
            "and whether judge grades rank the runs as human grades do (Kendall tau-b over "
            "all runs and over the best runs). Each kappa, alpha and tau comes with a 95% "
            "percentile bootstrap interval over queries. Judge the graded pairs too "
            "(raglabel judge --include-graded) to have pairs to compare."
        ),
    )
    parser.add_argument("db", metavar="DB", help="the project file")
    parser.add_argument(
        "-k", metavar="LIST", default="10", help="cutoffs for run metrics (default: 10)"
    )
    parser.add_argument(
        "--metrics",
        default=DEFAULT_METRICS,
        metavar="LIST",
        help=f"run metrics to compare, or 'none' (default: {DEFAULT_METRICS})",
    )
    parser.add_argument(
        "--top",
        type=int_in(0, 100_000),
        default=10,
        metavar="N",
        help="queries with most disagreement to list (default: 10)",
    )
    parser.add_argument(
        "--top-runs",
        type=int_in(3, 100_000),
        default=5,
        metavar="N",
        help="also compare the orders of the N runs best on human grades, or all runs "
        "when there are fewer; N is at least 3, the fewest runs tau can order "
        "(default: 5)",
    )
    parser.add_argument(
        "--resamples",
        type=int_in(1, 100_000),
        default=1000,
        metavar="N",
        help="bootstrap resamples of each 95%% interval: of queries for passage figures, "
        "of items for answer criteria (default: 1000)",
    )
    parser.add_argument(
        "--seed", type=int_in(0, 2**63 - 2), default=42, help="seed of the bootstrap (default: 42)"
    )
    parser.add_argument(
        "--format",
        choices=("table", "json", "markdown"),
        default="table",
        help="output (default: table)",
    )
    answers = parser.add_argument_group("answer criteria")
    answers.add_argument(
        "--answers",
        action="store_true",
        help="add per answer criterion: alpha judge vs humans, among humans, among a "
        "model's repeats and among models, with intervals; the confusion matrix and the "
        "largest judge-human gaps (default: off)",
    )
    add_convention_options(parser.add_argument_group("metric conventions"))
    # Last: the probe's options read the defaults of agree's own, to refuse them with it.
    add_probe_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if probe_requested(args):
        return run_probe(args)
    from raglabel.analysis.agreement import agreement
    from raglabel.cli.plain_table import console_width
    from raglabel.cli.reading import open_to_read
    from raglabel.metrics.names import MetricNameError, parse_metric_list

    ks = cutoffs_option(args.k)
    metrics = []
    if args.metrics.strip().lower() != "none":
        try:
            metrics = parse_metric_list(args.metrics, ks)
        except MetricNameError as exc:
            raise UsageError(f"--metrics: {exc}") from None
        metrics = [key for key in metrics if key.base not in ("containment", "pct_proc")]
    config = metric_config(args)
    with open_to_read(args.db, "agree") as project:
        report = agreement(
            project.conn,
            metrics,
            config,
            args.top,
            top_runs=args.top_runs,
            resamples=args.resamples,
            seed=args.seed,
        )
        if args.answers:
            from raglabel.analysis.agreement import answer_agreement

            report.answers = answer_agreement(
                project.conn, top=args.top, resamples=args.resamples, seed=args.seed
            )
    if args.format == "json":
        sys.stdout.write(json.dumps(as_json(report), indent=2) + "\n")
    elif args.format == "markdown":
        sys.stdout.write(as_markdown(report))
    else:
        width = console_width()
        sys.stdout.write(as_text(report, width) + answers_text(report, width=width))
    return 0


def as_json(report: AgreementReport) -> dict[str, Any]:
    return dataclasses.asdict(report)


def _num(value: float | None, digits: int = 3) -> str:
    return "NA" if value is None else f"{value:.{digits}f}"


def _share(value: float | None) -> str:
    return "NA" if value is None else f"{value:.0%}"


def as_text(report: AgreementReport, width: int | None = None) -> str:
    """The report as text, its tables laid out for a console ``width`` wide (None: no
    console, each table whole)."""
    from raglabel.cli.plain_table import wrapped
    from raglabel.formats.agreement_report import HUMANS
    from raglabel.metrics.names import lower_is_better

    out: list[str] = []

    def say(text: str) -> None:
        # Prose wraps at spaces to the console, never mid-word as a terminal would.
        out.extend(wrapped(text, width))

    models = ", ".join(report.models) or "none"
    say(
        f"human-graded pairs: {report.human_pairs} by {len(report.annotators)} annotator(s);"
        f" judge-graded pairs: {report.judged_pairs} (models: {models});"
        f" graded by both: {report.shared_pairs}"
    )
    say(
        f"Krippendorff's alpha (ordinal): annotators {_num(report.alpha_annotators)},"
        f" annotators plus judge {_num(report.alpha_with_judge)}"
    )
    out.append("")
    # Names are never cut: two raters (a judge's long model names) cut alike would
    # read as one. The two raters name a row and lead each block of a split table.
    out += text_table(
        ("rater a", "rater b", "pairs", "kappa(q)", "alpha", "bias a-b", "exact", "within 1"),
        [
            [
                p.a,
                p.b,
                str(p.n),
                _num(p.kappa),
                _num(p.alpha),
                _num(p.bias, 2),
                _share(p.exact),
                _share(p.within_one),
            ]
            for p in report.pairs
        ],
        width,
        keys=2,
    )
    out += _interval_lines(report, width)
    if report.accepted_left_out:
        say(
            f"({report.accepted_left_out} pairs whose human grade accepted a suggestion are"
            " left out of the judge's figures, the runs' means on human and on judge grades"
            " included)"
        )
    if not report.shared_pairs and report.models:
        say(
            "(no pair has both a human grade and a suggestion: run raglabel judge with"
            " --include-graded to compare the judge with people)"
        )
    # Each model's confusion matrix, and the ensemble's after them: rows the humans'
    # grades, as the humans lead every figure of the judge.
    for pair in report.pairs:
        if pair.b != HUMANS or pair.confusion is None:
            continue
        out.append("")
        say(f"confusion: humans (rows) vs {pair.a} (columns)")
        out.append("      " + "".join(f"{g:>6}" for g in range(1, 6)))
        for grade, row in enumerate(zip(*pair.confusion, strict=True), 1):
            out.append(f"{grade:>6}" + "".join(f"{n:>6}" for n in row))
    out.append("")
    say(
        f"suggestions accepted as they were: {report.accepted} of {report.offered}"
        f" grades given in the app while a judge's suggestion was there to take"
        f" ({_share(report.accepted_share)})"
    )
    if report.queries:
        out.append("")
        out.append("queries with most disagreement (judge vs humans):")
        out += text_table(
            ("query", "pairs", "mean |gap|", "bias"),
            [[q.qid, str(q.pairs), f"{q.mean_gap:.2f}", f"{q.bias:.2f}"] for q in report.queries],
            width,
            indent=2,
        )
    for agreement in report.runs:
        out.append("")
        say(
            f"{agreement.metric} on human vs judge grades ({agreement.queries} queries);"
            f" Kendall tau of the runs' order: {_num(agreement.tau)}{_ci(agreement.tau_ci)}"
        )
        order = sorted(agreement.human, key=lambda r: -(agreement.human[r] or -1.0))
        # Headed: two bare columns of numbers do not say which grades each is on.
        out += text_table(
            ("run", "humans", "judge"),
            [[name, _num(agreement.human[name]), _num(agreement.judge[name])] for name in order],
            width,
            indent=2,
        )
        if agreement.tau_top is not None:
            top = f"{agreement.tau_top:.3f}{_ci(agreement.tau_top_ci)}"
        elif agreement.top_runs < 3:
            top = "NA (fewer than 3 runs with both means)"
        else:
            top = "NA (they all tie, on human or on judge grades)"
        say(f"  Kendall tau over the {agreement.top_runs} best runs on human grades: {top}")
        lower = lower_is_better(agreement.metric)
        say(f"  order on human grades: {_order(agreement.human, lower)}")
        say(f"  order on judge grades: {_order(agreement.judge, lower)}")
        for figure, count in agreement.ci_undefined.items():
            if count:
                say(f"  ({_undefined(figure, count, report.resamples)})")
        for figure, value, ci in (
            ("tau", agreement.tau, agreement.tau_ci),
            ("tau_top", agreement.tau_top, agreement.tau_top_ci),
        ):
            if value is not None and ci is not None and not ci[0] <= value <= ci[1]:
                # Runs this close flip places from one set of queries to the next,
                # and the flips of both orders go together: tau is noise, not a reading.
                say(
                    f"  ({_FIGURES[figure]} lies outside its interval, as it can when runs are"
                    " close beside the spread over queries: which queries are drawn then"
                    " sets the order, and the interval does not bound tau)"
                )
    return "\n".join(out) + "\n"


#: The figures' names in the text, with their keys in the JSON.
_FIGURES = {
    "kappa": "kappa(q)",
    "kappa_unweighted": "kappa(u)",
    "kappa_binary": "kappa(b)",
    "alpha": "alpha",
    "tau": "tau",
    "tau_top": "tau over the best runs",
}


def _ci(ci: tuple[float, float] | None) -> str:
    return "" if ci is None else f" [{ci[0]:.3f}, {ci[1]:.3f}]"


def _undefined(figure: str, count: int, resamples: int) -> str:
    return (
        f"{_FIGURES[figure]} was undefined in {count} of {resamples} resamples, left out"
        " of its interval"
    )


def _order(means: dict[str, float | None], lower_is_better: bool) -> str:
    """Runs best first, ``>`` between a run and the next worse, ``=`` between ties;
    runs without a mean after them."""
    scored = sorted(
        ((value, name) for name, value in means.items() if value is not None),
        key=lambda item: (item[0] if lower_is_better else -item[0], item[1]),
    )
    text = ""
    for i, (value, name) in enumerate(scored):
        if i:
            text += " = " if value == scored[i - 1][0] else " > "
        text += name
    missing = [name for name, value in means.items() if value is None]
    if missing:
        text += " (no mean: " + ", ".join(missing) + ")"
    return text or "NA"


def _interval_lines(report: AgreementReport, width: int | None) -> list[str]:
    """The kappas the pairs table has no room for, and every pair figure's interval."""
    from raglabel.cli.plain_table import wrapped

    if not report.pairs:
        return []
    out = [""]
    out += wrapped(
        f"kappa(u): Cohen's kappa unweighted; kappa(b): binary, relevant at grade >="
        f" {report.relevance_threshold}; 95% intervals: percentile bootstrap over queries"
        f" ({report.resamples} resamples, seed {report.seed})",
        width,
    )
    figures = ("kappa_unweighted", "kappa_binary", "kappa", "alpha")
    out += text_table(
        (
            "rater a",
            "rater b",
            "queries",
            "kappa(u)",
            "kappa(b)",
            *(f"{_FIGURES[f]} CI" for f in figures),
        ),
        [
            [
                p.a,
                p.b,
                str(p.queries),
                _num(p.kappa_unweighted),
                _num(p.kappa_binary),
                *(_ci(getattr(p.ci, f)).strip() or "NA" for f in figures),
            ]
            for p in report.pairs
        ],
        width,
        keys=2,
    )
    for p in report.pairs:
        for figure, count in p.ci_undefined.items():
            if count:
                note = _undefined(figure, count, report.resamples)
                out += wrapped(f"({p.a} vs {p.b}: {note})", width)
    return out


def text_table(
    headers: tuple[str, ...],
    rows: list[list[str]],
    width: int | None,
    *,
    keys: int = 1,
    indent: int = 0,
) -> list[str]:
    """A headed table as lines: the first ``keys`` columns (names) to the left and as
    wide as their longest name, never cut; the others right-aligned, as wide as their
    header or widest value; one space between. Wider than a console ``width``, it is
    printed in blocks of columns that each fit, each led by the name columns, after a
    line that says so (:func:`raglabel.cli.plain_table.layout`); where the names alone
    leave no room for a value (a judge named for its models), a row at a time
    (:func:`_records`)."""
    from raglabel.cli.plain_table import Column, Table, layout

    columns = [Column(header, right=i >= keys) for i, header in enumerate(headers)]
    table = Table(columns, rows, keys=keys)
    if width is None:
        return _aligned(table, indent)
    blocks, note = layout(table, width, spacing=(1, indent - 1), cut=False)
    lines = [] if note is None else note.splitlines()
    for block in blocks:
        if len(blocks) > 1:
            lines.append(" " * indent + f"({block.title})")
        lines += _aligned(block, indent)
    if max(map(len, lines)) > width:
        return _records(headers, rows, width, keys=keys, indent=indent)
    return lines


def _aligned(table: Table, indent: int) -> list[str]:
    cells = [[c.header for c in table.columns], *table.rows]
    sizes = [max(len(row[i]) for row in cells) for i in range(len(table.columns))]
    lines = []
    for row in cells:
        parts = [
            cell.rjust(size) if column.right else cell.ljust(size)
            for cell, column, size in zip(row, table.columns, sizes, strict=True)
        ]
        lines.append((" " * indent + " ".join(parts)).rstrip())
    return lines


def _records(
    headers: tuple[str, ...], rows: list[list[str]], width: int, *, keys: int, indent: int
) -> list[str]:
    """Each row as its names, a line each (``rater a: ...``, wrapped at spaces), then
    its values as ``header value`` pairs, as many to a line as fit: for names too long
    to stand beside even one value on the console."""
    from raglabel.cli.plain_table import wrapped

    pad = " " * indent
    lines = [
        *wrapped(
            f"{pad}(too wide for {width} columns as a table: each row as its names, then"
            " its values)",
            width,
        )
    ]
    for row in rows:
        for header, name in zip(headers[:keys], row[:keys], strict=True):
            lines += wrapped(f"{pad}{header}: {name}", width)
        line = pad + "  "
        for header, value in zip(headers[keys:], row[keys:], strict=True):
            item = f"{header} {value}"
            if line.strip() and len(line) + 3 + len(item) > width:
                lines.append(line.rstrip())
                line = pad + "  "
            line += ("   " if line.strip() else "") + item
        lines.append(line.rstrip())
    return lines


_ALPHAS = (
    ("judge_vs_human", "judge vs humans"),
    ("humans", "among humans (ceiling)"),
    ("repeats", "a model's repeats"),
    ("models", "among models"),
)


def _alpha_cell(stats: AlphaInterval) -> str:
    if stats.alpha is None:
        return f"NA ({stats.items} items)"
    ci = "" if stats.ci is None else f" [{stats.ci[0]:.3f}, {stats.ci[1]:.3f}]"
    return f"{stats.alpha:.3f}{ci} ({stats.items} items)"


def _answer_lines(
    criterion: str, a: CriterionAgreement, *, markdown: bool, width: int | None = None
) -> list[str]:
    lines: list[str] = []
    if markdown:
        lines += ["", f"### {criterion}", "", "| alpha (ordinal) | value [95% CI] (items) |"]
        lines.append("| --- | --- |")
        lines += [f"| {label} | {_alpha_cell(getattr(a, key))} |" for key, label in _ALPHAS]
    else:
        lines += ["", f"{criterion}: Krippendorff's alpha (ordinal) [95% CI] (items)"]
        lines += [f"  {label:<24} {_alpha_cell(getattr(a, key))}" for key, label in _ALPHAS]
    if markdown:
        lines.append("")  # else the line reads as one more row of the table above
    lines.append(
        f"{'' if markdown else '  '}judge vs humans: exact {_share(a.exact)}, within one"
        f" {_share(a.within_one)}, bias (judge - humans) {_num(a.bias, 2)}"
    )
    if a.confusion is not None:
        if markdown:
            lines += ["", "| humans \\ judge | 1 | 2 | 3 | 4 | 5 |", "| --- |" + " ---: |" * 5]
            for grade, row in enumerate(a.confusion, 1):
                lines.append(f"| {grade} | " + " | ".join(str(n) for n in row) + " |")
        else:
            lines.append("  confusion: humans (rows) vs judge (columns)")
            lines.append("        " + "".join(f"{g:>6}" for g in range(1, 6)))
            for grade, row in enumerate(a.confusion, 1):
                lines.append(f"  {grade:>6}" + "".join(f"{n:>6}" for n in row))
    if a.gaps:
        if markdown:
            lines += ["", "| system | sample | query | humans | judge | gap |"]
            lines.append("| --- | --- | --- | ---: | ---: | ---: |")
            lines += [
                f"| {g.system} | {g.sample_id} | {g.query} | {g.human} | {g.judge} | {g.gap:+d} |"
                for g in a.gaps
            ]
        else:
            lines.append("  largest judge-human gaps:")
            # A system and a sample name a row: whole, as the Markdown has them.
            lines += text_table(
                ("system", "sample", "humans", "judge", "gap"),
                [
                    [g.system, g.sample_id, str(g.human), str(g.judge), f"{g.gap:+d}"]
                    for g in a.gaps
                ],
                width,
                keys=2,
                indent=4,
            )
    return lines


def answers_text(
    report: AgreementReport, *, markdown: bool = False, width: int | None = None
) -> str:
    """The answers section (``--answers``), as text (its tables laid out for a console
    ``width`` wide, as :func:`as_text`) or Markdown; empty without it."""
    if report.answers is None:
        return ""
    lines = ["", "## Answers" if markdown else "answers:"]
    for criterion, agreement in report.answers.items():
        lines += _answer_lines(criterion, agreement, markdown=markdown, width=width)
    return "\n".join(lines) + "\n"


def as_markdown(report: AgreementReport) -> str:
    """The passage figures as the table text shows them, then the answers section."""
    return "```text\n" + as_text(report) + "```\n" + answers_text(report, markdown=True)
