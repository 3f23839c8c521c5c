"""The report's first paragraph: which run is best on the headline metric, in words."""

from __future__ import annotations

import math

from raglabel.formats.judge_share import WARN_ABOVE, leaning, percent
from raglabel.metrics.names import lower_is_better
from raglabel.report.model import LEVEL, ReportInput

#: Below this share of graded top passages (Judged), the summary calls the labels thin.
THIN = 0.9

ADJUSTMENTS = {"holm": "Holm's adjustment", "bh": "the Benjamini-Hochberg adjustment"}


def value(x: float | None, scale: float | None = None) -> str:
    """``x`` with 3 decimals, or 1 from 10 on (``scale``, when given, decides instead:
    the two bounds of an interval are written alike)."""
    if x is None:
        return "NA"
    return f"{x:.1f}" if abs(x if scale is None else scale) >= 10 else f"{x:.3f}"


def bounds(ci: tuple[float, float]) -> tuple[str, str]:
    scale = max(abs(ci[0]), abs(ci[1]))
    return value(ci[0], scale), value(ci[1], scale)


def span(ci: tuple[float, float] | None) -> str:
    if ci is None:
        return ""
    low, high = bounds(ci)
    return f" (95% interval {low} to {high})"


def _queries(n: int, kind: str = "") -> str:
    """``n`` queries in words (``kind``, such as "paired ", before the noun)."""
    return f"{n} {kind}{'query' if n == 1 else 'queries'}"


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _p(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def summary(report: ReportInput) -> list[str]:
    """Sentences, in order; joined they make the paragraph."""
    metric = report.headline
    runs = report.data.runs
    means = {name: run.mean.get(metric) for name, run in runs.items()}
    scored = {name: m for name, m in means.items() if m is not None}
    if not scored:
        return [f"No run has a value for {metric}: the labels leave it undefined everywhere."]
    lower = lower_is_better(metric)
    best_mean = min(scored.values()) if lower else max(scored.values())
    best = [name for name, m in scored.items() if m == best_mean]
    first = best[0]
    queries = runs[first].valid.get(metric, 0)
    over = f"over {_queries(queries)}"
    ci = (runs[first].ci or {}).get(metric)
    said = f"{metric} (lower is better)" if lower else metric
    sentences = []
    if len(scored) == 1:
        sentences.append(f"On {said}, {first} scores {value(best_mean)}{span(ci)} {over}.")
    elif len(best) == len(scored):
        sentences.append(f"On {said}, every run scores the same, {value(best_mean)}, {over}.")
    elif len(best) > 1:
        sentences.append(
            f"On {said}, {_and(best)} tie for the best score, {value(best_mean)}, {over}."
        )
    else:
        sentences.append(f"On {said}, {first} is best: {value(best_mean)}{span(ci)} {over}.")
    if len(scored) > 1 and len(best) < len(scored):
        sentences.append(_against(report, first, scored, lower))
    sentences.extend(_cautions(report, metric))
    return [s for s in sentences if s]


def _against(report: ReportInput, best: str, scored: dict[str, float], lower: bool) -> str:
    """The best run against the baseline, or, when it is the baseline, the runner-up
    (the next lowest where ``lower`` is better)."""
    metric = report.headline
    if best != report.baseline:
        other, comparison, sign = report.baseline, report.comparison(best, metric), 1.0
        lead = f"Against the baseline {other}, {best}"
    else:
        others = sorted(
            ((m, name) for name, m in scored.items() if name != best), reverse=not lower
        )
        other = others[0][1]
        comparison, sign = report.comparison(other, metric), -1.0
        lead = f"{best} is the baseline; against the runner-up {other}, it"
    if comparison is None or comparison.mean_difference is None:
        return f"{lead}, no paired test could be made (no query has both values)."
    difference = sign * comparison.mean_difference
    ci = comparison.ci
    better, worse = comparison.wins, comparison.losses
    if sign < 0:  # the test ran runner-up minus baseline: said from the baseline's side
        ci = None if ci is None else (-ci[1], -ci[0])
        better, worse = worse, better
    text = (
        f"{lead} differs by {difference:+.3f}{span(ci)}"
        f" on {_queries(comparison.queries, 'paired ')}"
        f" ({better} better, {comparison.ties} tied, {worse} worse)"
    )
    raw = comparison.p_value
    if raw is None:
        return text + "."
    adjusted = ADJUSTMENTS.get(report.adjust)
    p = comparison.p_adjusted if comparison.p_adjusted is not None else raw
    tests, kind = report.family_size(comparison.family), comparison.family
    if adjusted is None:
        after, shown = "", f"{_p(raw)}, not adjusted"
    elif tests == 1:  # a family of one: adjusting leaves p as it is
        after, shown = "", f"{_p(p)}, the only {kind} test"
    else:
        family = f"the {tests} {kind} tests"
        after, shown = f" after {adjusted} over {family}", f"{_p(p)}; raw {_p(raw)}"
    if p < LEVEL:
        return f"{text}: significant at the 0.05 level{after} ({shown})."
    verdict = f"{text}: not significant at the 0.05 level{after} ({shown})"
    if ci is not None and (ci[0] > 0 or ci[1] < 0):
        # The bootstrap interval and the randomization test are two procedures, and the
        # interval is not adjusted: when they disagree the honest word is "borderline".
        return (
            f"{verdict}. The evidence is borderline: the 95% interval of the difference"
            " excludes 0, but the paired test, which this report decides by, does not"
            " reach the 0.05 level."
        )
    return f"{verdict}; on these queries the paired test cannot tell the two apart."


def _cautions(report: ReportInput, metric: str) -> list[str]:
    out = []
    runs = report.data.runs
    total = report.data.labels.queries
    short = {name: total - run.valid.get(metric, 0) for name, run in runs.items()}
    worst = max(short.values(), default=0)
    if worst > 0:
        out.append(
            f"Up to {worst} of the {total} labelled"
            + (" query has" if total == 1 else " queries have")
            + f" no {metric} value (NA) and"
            + (" is" if total == 1 else " are")
            + " left out of its means."
        )
    judged = [
        (mean, name)
        for name, run in runs.items()
        for key, mean in run.mean.items()
        if key.startswith("judged@") and mean is not None and mean < 1.0
    ]
    if judged:
        mean, name = min(judged)
        graded = f"{math.floor(mean * 1000 + 1e-9) / 10:g}%"  # never rounded up to 100%
        if mean < THIN:
            out.append(
                f"Labels are thin: only {graded} of {name}'s top passages are graded, so"
                " grading its unjudged passages may change these numbers."
            )
        else:
            out.append(
                f"{graded} of {name}'s top passages are graded (the least of any run);"
                " grading the rest may still move these numbers a little."
            )
    leaning_runs = [name for name, run in runs.items() if leaning(run.judge_share or {})]
    if leaning_runs:
        out.append(
            f"More than {percent(WARN_ABOVE)} of {_and(leaning_runs)}'s top labels at some"
            " cutoff are the judge's (--fill-with-judge), so those numbers lean on the judge."
        )
    return out
