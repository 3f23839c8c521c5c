"""``raglabel agree``: agreement between annotators, and between the judge and them."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import TYPE_CHECKING, Any

from raglabel.cli.arguments import int_in
from raglabel.cli.options import add_convention_options, cutoffs_option, metric_config
from raglabel.errors import UsageError

if TYPE_CHECKING:
    from raglabel.formats.agreement_report import AgreementReport, CriterionAgreement
    from raglabel.metrics.answer_stats import AlphaInterval

DEFAULT_METRICS = "ra_nwg,ndcg@k,precision_4plus"


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "agree",
        help="agreement between annotators, and between the judge and people",
        description=(
            "Krippendorff's alpha (ordinal) and quadratic-weighted kappa between annotators "
            "and between each judge model and the resolved human grades; the judge's bias, "
            "its confusion matrix, how often annotators accepted suggestions, the queries "
            "with most disagreement, and whether judge grades rank the runs as human "
            "grades do (Kendall tau). Judge the graded pairs too (raglabel judge "
            "--include-graded) to have pairs to compare."
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
    answers.add_argument(
        "--resamples",
        type=int_in(1, 100_000),
        default=1000,
        metavar="N",
        help="bootstrap draws of each alpha's interval, over items (default: 1000)",
    )
    answers.add_argument(
        "--seed", type=int_in(0, 2**63 - 2), default=42, help="seed of the bootstrap (default: 42)"
    )
    add_convention_options(parser.add_argument_group("metric conventions"))
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from raglabel.analysis.agreement import agreement
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
        report = agreement(project.conn, metrics, config, args.top)
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
        sys.stdout.write(as_text(report) + answers_text(report))
    return 0


def as_json(report: AgreementReport) -> dict[str, Any]:
    return dataclasses.asdict(report)


def _num(value: float | None, digits: int = 3) -> str:
    return "NA" if value is None else f"{value:.{digits}f}"


def _share(value: float | None) -> str:
    return "NA" if value is None else f"{value:.0%}"


def as_text(report: AgreementReport) -> str:
    out: list[str] = []
    models = ", ".join(report.models) or "none"
    out.append(
        f"human-graded pairs: {report.human_pairs} by {len(report.annotators)} annotator(s);"
        f" judge-graded pairs: {report.judged_pairs} (models: {models});"
        f" graded by both: {report.shared_pairs}"
    )
    out.append(
        f"Krippendorff's alpha (ordinal): annotators {_num(report.alpha_annotators)},"
        f" annotators plus judge {_num(report.alpha_with_judge)}"
    )
    out.append("")
    # Names are never cut: two raters (a judge's long model names) cut alike would
    # read as one.
    a = _name_width("rater a", [p.a for p in report.pairs], 28)
    b = _name_width("rater b", [p.b for p in report.pairs], 16)
    out.append(
        f"{'rater a':<{a}} {'rater b':<{b}} {'pairs':>6} {'kappa(q)':>8} {'alpha':>7}"
        f" {'bias a-b':>8} {'exact':>6} {'within 1':>8}"
    )
    for p in report.pairs:
        out.append(
            f"{p.a:<{a}} {p.b:<{b}} {p.n:>6} {_num(p.kappa):>8} {_num(p.alpha):>7}"
            f" {_num(p.bias, 2):>8} {_share(p.exact):>6} {_share(p.within_one):>8}"
        )
    if report.accepted_left_out:
        out.append(
            f"({report.accepted_left_out} pairs whose human grade accepted a suggestion are"
            " left out of the judge's figures)"
        )
    if not report.shared_pairs and report.models:
        out.append(
            "(no pair has both a human grade and a suggestion: run raglabel judge with"
            " --include-graded to compare the judge with people)"
        )
    if report.confusion is not None:
        out.append("")
        out.append(f"confusion: humans (rows) vs {report.judge} (columns)")
        out.append("      " + "".join(f"{g:>6}" for g in range(1, 6)))
        for grade, row in enumerate(report.confusion, 1):
            out.append(f"{grade:>6}" + "".join(f"{n:>6}" for n in row))
    out.append("")
    out.append(
        f"suggestions accepted as they were: {report.accepted} of {report.offered}"
        f" human-graded pairs that had one ({_share(report.accepted_share)})"
    )
    if report.queries:
        out.append("")
        out.append("queries with most disagreement (judge vs humans):")
        width = _name_width("query", [q.qid for q in report.queries], 20)
        out.append(f"  {'query':<{width}} {'pairs':>5} {'mean |gap|':>10} {'bias':>6}")
        for q in report.queries:
            out.append(f"  {q.qid:<{width}} {q.pairs:>5} {q.mean_gap:>10.2f} {q.bias:>6.2f}")
    for agreement in report.runs:
        out.append("")
        out.append(
            f"{agreement.metric} on human vs judge grades ({agreement.queries} queries);"
            f" Kendall tau of the runs' order: {_num(agreement.tau)}"
        )
        order = sorted(agreement.human, key=lambda r: -(agreement.human[r] or -1.0))
        width = _name_width("run", order, 24)
        # Headed: two bare columns of numbers do not say which grades each is on.
        out.append(f"  {'run':<{width}} {'humans':>7} {'judge':>7}")
        for name in order:
            h, j = agreement.human[name], agreement.judge[name]
            out.append(f"  {name:<{width}} {_num(h):>7} {_num(j):>7}")
    return "\n".join(out) + "\n"


def _name_width(header: str, names: list[str], least: int) -> int:
    """A column of names as wide as its longest name (at least ``least``), whole."""
    return max([least, len(header), *(len(name) for name in names)])


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


def _answer_lines(criterion: str, a: CriterionAgreement, *, markdown: bool) -> list[str]:
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
            lines += [
                f"    {g.system[:16]:<16} {g.sample_id[:20]:<20} humans {g.human} judge"
                f" {g.judge} ({g.gap:+d})"
                for g in a.gaps
            ]
    return lines


def answers_text(report: AgreementReport, *, markdown: bool = False) -> str:
    """The answers section (``--answers``), as text or Markdown; empty without it."""
    if report.answers is None:
        return ""
    lines = ["", "## Answers" if markdown else "answers:"]
    for criterion, agreement in report.answers.items():
        lines += _answer_lines(criterion, agreement, markdown=markdown)
    return "\n".join(lines) + "\n"


def as_markdown(report: AgreementReport) -> str:
    """The passage figures as the table text shows them, then the answers section."""
    return "```text\n" + as_text(report) + "```\n" + answers_text(report, markdown=True)
