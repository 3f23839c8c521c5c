"""The report as sections of prose, charts and tables, before any markup.

HTML and Markdown render the same sections, so the two formats cannot drift apart.
"""

from __future__ import annotations

import json
import statistics

from raglabel.formats.agreement_report import HUMANS
from raglabel.formats.judge_share import WARN_ABOVE, leaning, percent
from raglabel.report.charts import Interval, distribution, forest, heatmap, prevalence
from raglabel.report.judge_corrected import corrected_section
from raglabel.report.model import LEVEL, ReportInput
from raglabel.report.parts import Chart, Section, Table, bracket, named, slug
from raglabel.report.summary import summary, value


def sections(report: ReportInput) -> list[Section]:
    out = [Section("Summary", [" ".join(summary(report))])]
    out.append(_means(report))
    if len(report.runs) > 1:
        out.append(_differences(report))
    corrected = corrected_section(report)
    if corrected is not None:
        out.append(corrected)
    out.append(_distribution(report))
    out.append(_prevalence(report))
    out.append(_agreement(report))
    if report.data.answers:
        out.append(_answers(report))
    out.append(_conventions(report))
    return out


def _means(report: ReportInput) -> Section:
    level = f"{report.confidence:.0%}"
    section = Section(
        "Means per run",
        [
            f"Each metric's mean over the labelled queries, with its {level} bootstrap"
            " interval. One chart a metric; a run keeps its colour and marker in every chart."
        ],
    )
    index = {name: i for i, name in enumerate(report.runs)}
    rows = []
    for metric in report.metrics:
        points = []
        cells = [named(metric)]
        for name, run in report.data.runs.items():
            mean = run.mean.get(metric)
            ci = (run.ci or {}).get(metric)
            cells.append("NA" if mean is None else f"{value(mean)} {bracket(ci)}".strip())
            if mean is not None:
                low, high = (None, None) if ci is None else ci
                points.append(Interval(name, index[name], mean, low, high, strong=True))
        rows.append(cells)
        section.charts.append(
            Chart(
                f"mean-{slug(metric)}",
                named(metric),
                forest(f"{named(metric)}: mean and {level} interval per run", points),
            )
        )
    shares, words = _judge_shares(report)
    if words:
        section.paragraphs.append(words)
    rows += shares
    section.tables.append(Table(["metric", *report.runs], rows))
    return section


def _judge_shares(report: ReportInput) -> tuple[list[list[str]], str]:
    """With --fill-with-judge, a row per cutoff of each run's judge share, and the
    paragraph that says what it is; nothing without."""
    runs = report.data.runs
    first = next(iter(runs.values()), None)
    if first is None or first.judge_share is None:
        return [], ""
    rows = [
        [f"judge share@{k}", *[percent((run.judge_share or {}).get(k)) for run in runs.values()]]
        for k in first.judge_share
    ]
    leaning_runs = [name for name, run in runs.items() if leaning(run.judge_share or {})]
    words = (
        "Judge suggestions filled the pairs no person graded (--fill-with-judge). A judge"
        " share@K row says, of the entries in a run's top K over all queries that have a"
        " label, the share whose label is the judge's."
    )
    if leaning_runs:
        words += (
            f" Above {percent(WARN_ABOVE)} for {', '.join(leaning_runs)}: those metrics lean"
            " on the judge, and mixing labels can favour or penalise a run."
        )
    return rows, words


def _differences(report: ReportInput) -> Section:
    others = [name for name in report.runs if name != report.baseline]
    section = Section(
        f"Against the baseline {report.baseline}",
        [
            f"Each run minus {report.baseline}, per metric: the mean of the paired per-query"
            " differences with its interval, and the randomization test's p-value, raw and"
            f" {_adjustment(report)}. Filled markers and * are significant at the {LEVEL}"
            f" level{' after adjustment' if report.adjust != 'none' else ''}; hollow ones"
            " are not."
        ],
    )
    index = {name: i for i, name in enumerate(report.runs)}
    rows = []
    for metric in report.metrics:
        points = []
        for name in others:
            c = report.comparison(name, metric)
            if c is None or c.mean_difference is None:
                family = "" if c is None else c.family
                rows.append([named(metric), name, "NA", "", "", family, "", ""])
                continue
            p = c.p_adjusted if c.p_adjusted is not None else c.p_value
            significant = p is not None and p < LEVEL
            low, high = (None, None) if c.ci is None else c.ci
            points.append(Interval(name, index[name], c.mean_difference, low, high, significant))
            rows.append(
                [
                    named(metric),
                    name,
                    f"{c.mean_difference:+.4f} {bracket(c.ci)}".strip(),
                    "NA" if c.p_value is None else f"{c.p_value:.4f}",
                    "NA" if p is None else f"{p:.4f}{' *' if significant else ''}",
                    c.family,
                    f"{c.wins}/{c.ties}/{c.losses}",
                    str(c.queries),
                ]
            )
        section.charts.append(
            Chart(
                f"difference-{slug(metric)}",
                f"{named(metric)} minus {report.baseline}",
                forest(f"{named(metric)}: difference from {report.baseline}", points, zero=True),
            )
        )
    section.tables.append(
        Table(
            [
                "metric",
                "run",
                "difference [interval]",
                "p raw",
                "p adjusted",
                "family",
                "better/tied/worse",
                "queries",
            ],
            rows,
        )
    )
    return section


def _adjustment(report: ReportInput) -> str:
    """How the p-values were adjusted, in words: each family on its own."""
    method = {"holm": "Holm", "bh": "Benjamini-Hochberg"}.get(report.adjust)
    if method is None:
        return "not adjusted (the two columns are the same)"
    headline = report.family_size("headline")
    secondary = report.family_size("secondary")
    return (
        f"after {method} adjustment within its family: the headline family is"
        f" {_family(headline, 'test')} on {report.headline}, each run against"
        f" {report.baseline}; every other metric's test is secondary, adjusted over"
        f" {_family(secondary, 'secondary test')}"
    )


def _family(size: int, noun: str) -> str:
    """``the 5 tests``, or for one, the words that say it is left as it is."""
    if size == 1:
        return f"its one {noun} (a family of one: nothing to adjust)"
    return f"the {size} {noun}s"


def _distribution(report: ReportInput) -> Section:
    metric = report.headline
    runs = []
    rows = []
    for i, (name, run) in enumerate(report.data.runs.items()):
        values = [v[metric] for v in (run.per_query or {}).values() if v.get(metric) is not None]
        runs.append((name, i, [float(x) for x in values if x is not None]))
        ordered = sorted(x for x in values if x is not None)
        if ordered:
            rows.append(
                [
                    name,
                    str(len(ordered)),
                    value(ordered[0]),
                    value(statistics.median(ordered)),
                    value(ordered[-1]),
                ]
            )
        else:
            rows.append([name, "0", "NA", "NA", "NA"])
    section = Section(
        f"Per-query {metric}",
        [
            "Every query's value per run: the box spans the middle half, the thick line is"
            " the median, the dots are the queries. A mean hides whether a run is better"
            " everywhere or much better on a few queries; this shows which."
        ],
    )
    section.charts.append(
        Chart(
            f"per-query-{slug(metric)}",
            f"{metric} per query",
            distribution(f"{metric} per query", runs),
        )
    )
    section.tables.append(Table(["run", "queries", "min", "median", "max"], rows))
    return section


def _prevalence(report: ReportInput) -> Section:
    counts = report.grade_counts
    totals = [sum(c[g] for c in counts.values()) for g in range(5)]
    graded = sum(totals)
    section = Section(
        "Grade prevalence",
        [
            "How often each grade occurs in the labels, overall and per query. Rarity weights"
            " come from these shares: a grade that is rare in a query weighs more there."
        ],
    )
    section.charts.append(
        Chart(
            "grade-prevalence", "Grade shares", prevalence("Grade shares per query", dict(counts))
        )
    )
    section.tables.append(
        Table(
            ["grade", "passages", "share"],
            [
                [str(g + 1), str(totals[g]), "NA" if not graded else f"{totals[g] / graded:.1%}"]
                for g in range(5)
            ]
            + [["all", str(graded), f"{len([c for c in counts.values() if sum(c)])} queries"]],
        )
    )
    return section


def _agreement(report: ReportInput) -> Section:
    section = Section("Judge and people")
    agreement = report.agreement
    if agreement is None:
        section.paragraphs.append(
            "Not shown: the labels come from files, which hold no judge suggestions. A report"
            " on a project shows how the LLM judge agrees with people there."
        )
        return section
    if not agreement.models:
        section.paragraphs.append("Not shown: no judge has graded passages in this project.")
        return section
    if not agreement.shared_pairs or agreement.confusion is None:
        section.paragraphs.append(
            f"Not shown: the judge ({agreement.judge}) graded {agreement.judged_pairs} pairs"
            f" and people {agreement.human_pairs}, but none of them are the same pairs (grades"
            " that accepted a suggestion do not count), so there is nothing to compare yet."
        )
        return section
    level = f"{report.confidence:.0%}"
    # The judge's row against people: the same figure and interval as `agree` gives, a
    # bootstrap over queries (pairs of one query are not independent draws).
    row = next(p for p in agreement.pairs if (p.a, p.b) == (agreement.judge, HUMANS))
    alpha_text = (
        "Krippendorff's alpha is not defined on these pairs"
        if row.alpha is None
        else f"Krippendorff's alpha (ordinal) between the judge and people is {row.alpha:.3f}"
        + ("" if row.ci.alpha is None else f" ({level} interval {_span(row.ci.alpha)})")
    )
    section.paragraphs.append(
        f"The judge ({agreement.judge}) and people graded {agreement.shared_pairs} of the same"
        f" pairs. {alpha_text}. Rows are people's resolved grade, columns the judge's."
    )
    section.charts.append(
        Chart(
            "judge-vs-people",
            "Judge against people",
            heatmap("Judge grade against people's grade", agreement.confusion, "people", "judge"),
        )
    )
    rows = [
        [
            p.a,
            p.b,
            str(p.n),
            _fixed(p.alpha),
            _span(p.ci.alpha),
            _fixed(p.kappa),
            _span(p.ci.kappa),
            _fixed(p.exact),
            _fixed(p.within_one),
        ]
        for p in agreement.pairs
    ]
    # Each interval is a percentile bootstrap over the queries the pair's grades span.
    header = ["rater", "against", "pairs", "alpha", f"alpha {level}", "kappa", f"kappa {level}"]
    section.tables.append(Table([*header, "exact", "within one"], rows))
    return section


def _fixed(x: float | None) -> str:
    return "NA" if x is None else f"{x:.3f}"


def _span(ci: tuple[float, float] | None) -> str:
    return "NA" if ci is None else f"{ci[0]:.3f} to {ci[1]:.3f}"


def _answers(report: ReportInput) -> Section:
    answers = report.data.answers or {}
    section = Section(
        "Answer criteria",
        [
            "Per answer system and criterion, the mean grade (1-5; ctx_rank_prec 0-100) of"
            " people and of the judge, each with its bootstrap interval, and the pass rate."
        ],
    )
    systems = list(answers)
    criteria: list[str] = []
    for by_criterion in answers.values():
        for criterion in by_criterion:
            if criterion not in criteria:
                criteria.append(criterion)
    # A system that is also a run (its retrieval) keeps that run's colour.
    colours = {name: i for i, name in enumerate(report.runs)}
    rows = []
    for criterion in criteria:
        points = []
        for n, system in enumerate(systems):
            i = colours.get(system, len(colours) + n)
            item = answers[system].get(criterion)
            if item is None:
                continue
            for who, grades in (("people", item.human), ("judge", item.judge)):
                rows.append(
                    [
                        criterion,
                        system,
                        who,
                        value(grades.mean),
                        bracket(grades.ci),
                        "NA" if grades.pass_rate is None else f"{grades.pass_rate:.0%}",
                        f"{grades.valid}/{grades.samples}",
                    ]
                )
                if grades.mean is not None:
                    low, high = (None, None) if grades.ci is None else grades.ci
                    points.append(
                        Interval(
                            f"{system}, {who}", i, grades.mean, low, high, strong=who == "people"
                        )
                    )
        section.charts.append(
            Chart(
                f"answers-{slug(criterion)}",
                criterion,
                forest(f"{criterion}: people (filled) and judge (hollow)", points),
            )
        )
    section.tables.append(
        Table(
            ["criterion", "system", "graded by", "mean", "interval", "pass rate", "valid/samples"],
            rows,
        )
    )
    return section


def _conventions(report: ReportInput) -> Section:
    labels = report.data.labels
    section = Section(
        "Labels and conventions",
        [
            f"Labels: {labels.queries} queries, {labels.graded} graded pairs, fingerprint"
            f" {labels.fingerprint} ({labels.source}). Inputs: {report.source}."
        ],
    )
    rows = []
    for key, setting in report.data.config.items():
        # Where the labels are is the source line above; a path here would make the
        # same labels give different reports from different folders.
        if key in ("definitions", "answers", "labels"):
            continue
        rows.append(
            [key, setting if isinstance(setting, str) else json.dumps(setting, sort_keys=True)]
        )
    section.tables.append(Table(["convention", "value"], rows))
    definitions = report.data.config.get("definitions")
    if isinstance(definitions, list):
        section.tables.append(
            Table(
                ["metric", "what it measures"],
                [list(d.split(": ", 1)) for d in definitions if isinstance(d, str) and ": " in d],
            )
        )
    if report.data.warnings:
        section.tables.append(Table(["warning"], [[w] for w in report.data.warnings]))
    return section
