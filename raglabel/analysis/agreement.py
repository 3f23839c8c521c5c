"""``raglabel agree``: how far annotators agree with each other, how far the judge
agrees with them, and whether judge grades would rank the runs as human grades do.

Grades are ordinal, so the headline numbers are Krippendorff's alpha (ordinal) and
quadratic-weighted kappa; the figures the literature on LLM assessors reports come too
(unweighted kappa, binary kappa at the relevance threshold, tau over the best runs). The
judge's bias is its mean grade minus the humans' on the same pairs. Run metrics are
measured on the queries both label sets cover. Every kappa, alpha and tau has a bootstrap
interval over queries (:mod:`raglabel.metrics.agreement_intervals`).
"""

from __future__ import annotations

import itertools
import sqlite3
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from raglabel.formats.agreement_report import (
    HUMANS,
    AgreementReport,
    AnswerGap,
    CriterionAgreement,
    PairAgreement,
    PairIntervals,
    QueryAgreement,
    RunOrderAgreement,
)
from raglabel.formats.trec.arrays import ArrayAlignment
from raglabel.formats.trec.rows import QrelsRows
from raglabel.formats.trec.table import RunTable, as_text
from raglabel.metrics.agreement import (
    confusion,
    kendall_tau_b,
    krippendorff_alpha,
    mean_difference,
    weighted_kappa,
)
from raglabel.metrics.agreement_intervals import (
    LEVEL,
    Interval,
    pair_intervals,
    run_order_intervals,
    top_tau_rows,
)
from raglabel.metrics.answer_stats import AlphaInterval, alpha_interval
from raglabel.metrics.config import MetricConfig
from raglabel.metrics.criteria import CRITERIA
from raglabel.metrics.evaluate import evaluate_runs
from raglabel.metrics.names import MetricKey, lower_is_better
from raglabel.metrics.stats import nan_mean
from raglabel.storage.labels import judge_consensus, resolve
from raglabel.storage.ratings import PairKey, Ratings, load_ratings
from raglabel.storage.runs import rankings_by_run

GRADES = (1, 2, 3, 4, 5)


def agreement(
    conn: sqlite3.Connection,
    metrics: Sequence[MetricKey],
    config: MetricConfig | None = None,
    top_queries: int = 10,
    *,
    top_runs: int = 5,
    resamples: int = 1000,
    seed: int = 42,
    level: float = LEVEL,
) -> AgreementReport:
    """Agreement among annotators and of each model (and the models' ensemble) with
    people; with ``metrics``, whether judge grades order the runs as human grades do,
    over all runs and over the ``top_runs`` best on human grades. Intervals: ``resamples``
    bootstrap resamples of queries, seeded by ``seed``, percentile intervals at
    ``level``."""
    if top_runs < 3:
        raise ValueError(
            f"top_runs must be 3 or more (tau over fewer is not given), got {top_runs}"
        )
    config = config or MetricConfig()
    ratings = load_ratings(conn)
    judge_name, judge = _judge(ratings)
    raters: dict[str, Mapping[PairKey, int]] = dict(ratings.annotators)
    compared = [(a, b, raters[a], raters[b]) for a, b in itertools.combinations(raters, 2)]
    # The judge is measured against people's own grades only, in every figure (pairs,
    # confusion, queries and run orders): a grade that accepted a suggestion the judge
    # still gives would agree with it by construction. These are the accepted_left_out;
    # the run orders leave them out of the judge's labels too, so both sides score the
    # same pairs and a judge that copies people orders the runs as they do.
    left_out = ratings.accepted_pairs & judge.keys()
    human = {p: g for p, g in ratings.resolved.items() if p not in left_out}
    for model, grades in ratings.models.items():
        compared.append((model, HUMANS, grades, human))
    if judge_name is not None and len(ratings.models) > 1:
        compared.append((judge_name, HUMANS, judge, human))
    pairs = [
        _pair(
            a,
            b,
            ga,
            gb,
            threshold=config.relevance_threshold,
            draws=_Draws(resamples, (seed, 0, i), level),
        )
        for i, (a, b, ga, gb) in enumerate(compared)
    ]
    shared = sorted(set(judge) & set(human))
    table = None
    if shared:
        table = confusion([human[p] for p in shared], [judge[p] for p in shared]).tolist()
    report = AgreementReport(
        annotators=list(ratings.annotators),
        models=list(ratings.models),
        judge=judge_name,
        human_pairs=len(ratings.resolved),
        judged_pairs=len(judge),
        shared_pairs=len(shared),
        alpha_annotators=_alpha(list(ratings.annotators.values())),
        alpha_with_judge=_alpha([*ratings.annotators.values(), _without(judge, ratings)])
        if judge
        else None,
        pairs=pairs,
        confusion=table,
        accepted=ratings.accepted,
        offered=ratings.with_suggestion,
        accepted_share=ratings.accepted / ratings.with_suggestion
        if ratings.with_suggestion
        else None,
        queries=_by_query(judge, human, shared)[:top_queries],
        accepted_left_out=len(left_out),
        relevance_threshold=config.relevance_threshold,
        resamples=resamples,
        seed=seed,
    )
    if judge and metrics:
        report.runs = _runs(
            conn,
            human,
            _without(judge, ratings),
            metrics,
            config,
            top_runs=top_runs,
            draws=_Draws(resamples, (seed, 1), level),
        )
    return report


@dataclass(frozen=True)
class _Draws:
    """The bootstrap of one part of the report: ``resamples`` resamples of queries from
    a random stream of its own, seeded by ``--seed`` and the part's place (0 and i: the
    i-th rater pair; 1: the run orders, the same draws of queries for every metric)."""

    resamples: int
    seed: tuple[int, ...]
    level: float


def _judge(ratings: Ratings) -> tuple[str | None, dict[PairKey, int]]:
    """One judge grade per pair: the only model's, or the lower median of several."""
    if not ratings.models:
        return None, {}
    if len(ratings.models) == 1:
        name, grades = next(iter(ratings.models.items()))
        return name, dict(grades)
    name = "judge (median of " + ", ".join(ratings.models) + ")"
    return name, {pair: grade for pair, (grade, _) in judge_consensus(ratings.models).items()}


def _without(judge: dict[PairKey, int], ratings: Ratings) -> dict[PairKey, int]:
    return {p: g for p, g in judge.items() if p not in ratings.accepted_pairs}


def _pair(
    a: str,
    b: str,
    ga: Mapping[PairKey, int],
    gb: Mapping[PairKey, int],
    *,
    threshold: int,
    draws: _Draws,
) -> PairAgreement:
    both = sorted(set(ga) & set(gb))
    if not both:
        return PairAgreement(
            a, b, 0, None, None, None, None, None, None, None, 0, None,
            PairIntervals(None, None, None, None), {},
        )  # fmt: skip
    x = np.array([ga[p] for p in both], dtype=np.float64)
    y = np.array([gb[p] for p in both], dtype=np.float64)
    gap = np.abs(x - y)
    figures = {
        "kappa": weighted_kappa(x, y, GRADES, "quadratic"),
        "kappa_unweighted": weighted_kappa(x, y, GRADES, "none"),
        "kappa_binary": weighted_kappa(x >= threshold, y >= threshold, (0, 1), "none"),
        "alpha": krippendorff_alpha(np.vstack([x, y]), "ordinal", GRADES),
    }
    # Each query's count table of (a's grade, b's grade): all a resample needs.
    qids = sorted({q for q, _ in both})
    position = {q: i for i, q in enumerate(qids)}
    tables = np.zeros((len(qids), len(GRADES), len(GRADES)))
    at = np.array([position[q] for q, _ in both], dtype=np.int64)
    # Grades are 1-5 (the project file's CHECK), so grade g sits at place g - 1.
    np.add.at(tables, (at, x.astype(np.int64) - 1, y.astype(np.int64) - 1), 1.0)
    relevant = np.array(GRADES) >= threshold
    # No interval for a figure undefined on the data itself: its resamples would
    # describe a figure the report does not give.
    drawn = {
        name: found
        for name, found in pair_intervals(
            tables, relevant, resamples=draws.resamples, seed=draws.seed, level=draws.level
        ).items()
        if figures[name] is not None
    }
    return PairAgreement(
        a,
        b,
        len(both),
        figures["kappa"],
        figures["alpha"],
        mean_difference(x, y),
        float(np.mean(gap == 0)),
        float(np.mean(gap <= 1)),
        figures["kappa_unweighted"],
        figures["kappa_binary"],
        len(qids),
        confusion(x, y).tolist(),
        PairIntervals(**{name: _ci(drawn.get(name)) for name in figures}),
        {name: found.undefined for name, found in drawn.items()},
    )


def _ci(found: Interval | None) -> tuple[float, float] | None:
    return None if found is None else found.ci


def _alpha(raters: Sequence[Mapping[PairKey, int]]) -> float | None:
    if len(raters) < 2:
        return None
    units = sorted(set().union(*raters))
    if not units:
        return None
    data = np.full((len(raters), len(units)), np.nan)
    index = {unit: i for i, unit in enumerate(units)}
    for r, grades in enumerate(raters):
        for pair, grade in grades.items():
            data[r, index[pair]] = grade
    return krippendorff_alpha(data, "ordinal", GRADES)


def _by_query(
    judge: Mapping[PairKey, int], human: Mapping[PairKey, int], shared: Sequence[PairKey]
) -> list[QueryAgreement]:
    per_query: dict[str, list[int]] = defaultdict(list)
    for pair in shared:
        per_query[pair[0]].append(judge[pair] - human[pair])
    found = [
        QueryAgreement(qid, len(d), float(np.mean(np.abs(d))), float(np.mean(d)))
        for qid, d in per_query.items()
    ]
    return sorted(found, key=lambda g: (-g.mean_gap, -g.pairs, g.qid))


def _runs(
    conn: sqlite3.Connection,
    human: Mapping[PairKey, int],
    judge: Mapping[PairKey, int],
    metrics: Sequence[MetricKey],
    config: MetricConfig,
    *,
    top_runs: int,
    draws: _Draws,
) -> list[RunOrderAgreement]:
    """Per metric, each run's means on human grades and on judge grades, over the
    queries that both label sets cover, so neither side is scored on queries the other
    lacks; tau between the two orders over all runs and over the ``top_runs`` best on
    human grades (ties at the cut go to the run whose name sorts first)."""
    common = {q for q, _ in human} & {q for q, _ in judge}
    if not common:
        return []
    rankings = rankings_by_run(conn, common)
    if not rankings:
        return []
    names = sorted(rankings)
    # Labels in query order, so each side's label set lists its queries as
    # sorted(common) whatever order it keeps them in: row q of both sides is one query,
    # which the paired resampling of queries needs.
    columns = {
        side: _columns(dict(sorted(labels.items())), common, rankings, metrics, config)
        for side, labels in (("human", human), ("judge", judge))
    }
    out = []
    for key in metrics:
        # (queries, runs) on each side, NaN where a query has no value.
        hq = np.column_stack([columns["human"][run][key] for run in names])
        jq = np.column_stack([columns["judge"][run][key] for run in names])
        if hq.shape != jq.shape or hq.shape[0] != len(common):
            raise RuntimeError(f"{key.name}: the two label sets list different queries")
        h = {run: nan_mean(hq[:, r])[0] for r, run in enumerate(names)}
        j = {run: nan_mean(jq[:, r])[0] for r, run in enumerate(names)}
        both = [(x, y) for run in names if (x := h[run]) is not None and (y := j[run]) is not None]
        tau = kendall_tau_b([x for x, _ in both], [y for _, y in both]) if both else None
        top = min(top_runs, len(both))
        lower = lower_is_better(key.name)
        tau_top = _defined(
            top_tau_rows(_row(h, names), _row(j, names), top, lower_is_better=lower)[0]
        )
        found = run_order_intervals(
            hq,
            jq,
            top,
            lower_is_better=lower,
            resamples=draws.resamples,
            seed=draws.seed,
            level=draws.level,
        )
        # As for a pair: no interval for a figure the data itself leaves undefined.
        drawn = {
            name: interval
            for name, interval, value in zip(
                ("tau", "tau_top"), found or (None, None), (tau, tau_top), strict=True
            )
            if interval is not None and value is not None
        }
        out.append(
            RunOrderAgreement(
                key.name,
                len(common),
                h,
                j,
                tau,
                _ci(drawn.get("tau")),
                top,
                tau_top,
                _ci(drawn.get("tau_top")),
                {name: interval.undefined for name, interval in drawn.items()},
            )
        )
    return out


def _row(means: Mapping[str, float | None], names: Sequence[str]) -> NDArray[np.float64]:
    """Runs' means as a one-row matrix in ``names`` order, NaN for no mean."""
    return np.array([[np.nan if (v := means[run]) is None else v for run in names]])


def _defined(value: float) -> float | None:
    return None if np.isnan(value) else float(value)


def _columns(
    labels: Mapping[PairKey, int],
    common: set[str],
    rankings: Mapping[str, tuple[list[str], list[str]]],
    metrics: Sequence[MetricKey],
    config: MetricConfig,
) -> dict[str, dict[MetricKey, NDArray[np.float64]]]:
    qrels = QrelsRows([], [], [])
    for (qid, pid), grade in labels.items():
        if qid in common:
            qrels.qids.append(qid)
            qrels.docids.append(pid)
            qrels.grades.append(grade)
    align = ArrayAlignment.from_rows(qrels)
    runs = [
        align.run(name, RunTable(as_text(q), as_text(d), None)) for name, (q, d) in rankings.items()
    ]
    values = evaluate_runs(align.labels, runs, metrics, config=config)
    return values


def answer_agreement(
    conn: sqlite3.Connection,
    *,
    top: int = 10,
    resamples: int = 1000,
    seed: int = 42,
    level: float = 0.95,
) -> dict[str, CriterionAgreement]:
    """Per answer criterion: alpha judge vs resolved human, among annotators, among a
    model's repeats and among models, each with its interval; exact and within-one
    agreement, the judge's bias and confusion matrix, and the largest judge-human gaps.

    A sample the criterion cannot apply to (an input missing) is left out everywhere;
    the judge's grade of a sample is the lower median of its good answers over models
    and repeats, a model's the lower median over its own repeats.
    """
    from raglabel.analysis.answers import load_answers

    inputs = load_answers(conn)
    out: dict[str, CriterionAgreement] = {}
    for c, criterion in enumerate(CRITERIA):
        items = [item for item in inputs.items if item.missing(criterion) is None]
        annotators: dict[str, dict[int, int]] = defaultdict(dict)
        for i, item in enumerate(items):
            key = (item.system, item.sample_id)
            for who, grade in inputs.by_annotator.get((*key, criterion), {}).items():
                annotators[who][i] = grade
        human: dict[int, int] = {}
        judge: dict[int, int] = {}
        per_model: dict[str, dict[int, int]] = defaultdict(dict)
        repeats: dict[tuple[int, str], dict[int, int]] = {}
        for i, item in enumerate(items):
            grades = inputs.human.get((item.system, item.sample_id, criterion))
            if grades:
                human[i] = resolve(grades)
            good = [
                a
                for a in inputs.judged.get((item.system, item.sample_id, criterion), [])
                if a.ok and a.grade is not None
            ]
            if not good:
                continue
            judge[i] = resolve([a.grade for a in good if a.grade is not None])
            models: dict[str, dict[int, int]] = defaultdict(dict)
            for a in good:
                assert a.grade is not None
                models[a.model][a.repeat] = a.grade
            for model, by_repeat in models.items():
                per_model[model][i] = resolve(list(by_repeat.values()))
                repeats[i, model] = by_repeat
        both = sorted(set(human) & set(judge))
        h = np.array([human[i] for i in both], dtype=np.float64)
        j = np.array([judge[i] for i in both], dtype=np.float64)
        base = seed + 10 * c

        def interval(data: NDArray[np.float64], offset: int, base: int = base) -> AlphaInterval:
            return alpha_interval(data, resamples=resamples, seed=base + offset, level=level)

        gaps = sorted(
            (
                AnswerGap(
                    items[i].system,
                    items[i].sample_id,
                    items[i].qid,
                    human[i],
                    judge[i],
                    judge[i] - human[i],
                )
                for i in both
                if judge[i] != human[i]
            ),
            key=lambda g: (-abs(g.gap), g.system, g.sample_id),
        )
        out[criterion] = CriterionAgreement(
            judge_vs_human=interval(np.vstack([j, h]) if both else np.empty((2, 0)), 0),
            humans=interval(_matrix(list(annotators.values()), by_rater=True), 1),
            repeats=interval(_matrix(list(repeats.values())), 2),
            models=interval(_matrix(list(per_model.values()), by_rater=True), 3),
            exact=float(np.mean(h == j)) if both else None,
            within_one=float(np.mean(np.abs(h - j) <= 1)) if both else None,
            bias=mean_difference(j, h),
            confusion=confusion(h, j).tolist() if both else None,
            gaps=gaps[:top],
        )
    return out


def _matrix(groups: Sequence[Mapping[int, int]], *, by_rater: bool = False) -> NDArray[np.float64]:
    """A (raters, items) matrix with NaN for no rating.

    ``by_rater``: each group is one rater's grades by item. Otherwise each group is one
    item's grades by rater (a unit of its own, e.g. (sample, model) over repeats)."""
    if by_rater:
        units = sorted(set().union(*groups)) if groups else []
        data = np.full((len(groups), len(units)), np.nan)
        index = {unit: u for u, unit in enumerate(units)}
        for r, grades in enumerate(groups):
            for unit, grade in grades.items():
                data[r, index[unit]] = grade
        return data
    raters = sorted(set().union(*groups)) if groups else []
    data = np.full((len(raters), len(groups)), np.nan)
    slot = {rater: r for r, rater in enumerate(raters)}
    for u, grades in enumerate(groups):
        for rater, grade in grades.items():
            data[slot[rater], u] = grade
    return data
