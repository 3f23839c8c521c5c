"""From loaded labels and runs to a :class:`Report`: means, intervals, comparisons."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from raglabel.formats.report import Comparison, LabelsInfo, Report, RunReport
from raglabel.metrics.ctxrank import ideal_ranks, passes
from raglabel.metrics.cutoffs import out_of_column
from raglabel.metrics.evaluate import QueryStats, evaluate_run
from raglabel.metrics.names import MetricKey
from raglabel.metrics.run import RankedRun
from raglabel.metrics.stats import (
    adjust_families,
    bootstrap_means,
    nan_mean,
    paired_test,
    percentile_interval,
    ratio_of_means,
)

if TYPE_CHECKING:
    from raglabel.formats.report_details import CtxRankDetail

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class Options:
    """What the user asked of an evaluation, beyond the metric conventions."""

    metrics: Sequence[MetricKey]
    per_query: bool = False
    ci: bool = False
    compare: bool = False
    baseline: str | None = None
    #: With no ``baseline``: the first run is it (the report's way), not every pair.
    first_is_baseline: bool = False
    resamples: int = 1000
    permutations: int = 10_000
    seed: int = 42
    level: float = 0.95
    answers: NDArray[np.bool_] | None = None
    pools: dict[str, RankedRun] = field(default_factory=dict)
    na: str = "skip"  # "zero": a query where a metric is NA counts as 0 in its mean
    judged_only: bool = False  # ranked-list metrics on condensed runs
    adjust: str = "holm"  # multiple-comparison adjustment of --compare's p-values
    #: The metric whose tests are the headline family (None: the first of ``metrics``).
    headline: str | None = None
    #: Cutoffs asked for only by queries' own k: other queries stay out of their columns.
    own_k_only: frozenset[MetricKey] = frozenset()


def headline_metric(options: Options) -> str | None:
    """The metric whose tests form the headline family of p-values: the one named
    (the report's --headline), else the first metric asked for (None: no metric)."""
    if options.headline is not None:
        return options.headline
    return options.metrics[0].name if options.metrics else None


def _clean(value: float) -> float | None:
    return None if np.isnan(value) else float(value)


def _pct_proc_pairs(metrics: Sequence[MetricKey]) -> dict[MetricKey, tuple[MetricKey, MetricKey]]:
    return {
        key: (MetricKey("ra_nwg", key.k), MetricKey("proc", key.k))
        for key in metrics
        if key.base == "pct_proc"
    }


def evaluate(
    stats: QueryStats,
    runs: Sequence[RankedRun],
    options: Options,
    *,
    labels_info: LabelsInfo,
    config: dict[str, object],
    warnings: list[str],
) -> Report:
    """Compute every run's per-query values and assemble the report."""
    query_ids = stats.labels.query_ids
    # %PROC's run-level value is a ratio of means, so its parts are computed even
    # when the user did not ask for them.
    ratio_parts = _pct_proc_pairs(options.metrics)
    needed = list(dict.fromkeys([*options.metrics, *itertools.chain(*ratio_parts.values())]))
    values: dict[str, dict[MetricKey, FloatArray]] = {
        run.name: evaluate_run(
            stats,
            run,
            needed,
            pool=options.pools.get(run.name),
            answers=options.answers,
            judged_only=options.judged_only,
        )
        for run in runs
    }
    # A query with its own k is in the columns of that k only (metrics/cutoffs.py): out
    # of the others it is no value at all, not NA, so --na zero leaves it out too.
    outside = {run.name: _outside(run, needed, options.own_k_only) for run in runs}
    for name, masks in outside.items():
        for key, mask in masks.items():
            values[name][key] = np.where(mask, np.nan, values[name][key])
    # What the means, intervals and tests see: under --na zero an NA counts as 0.
    averaged = values
    if options.na == "zero":
        averaged = {
            name: {key: np.nan_to_num(column, nan=0.0) for key, column in per_run.items()}
            for name, per_run in values.items()
        }
        for name, masks in outside.items():
            for key, mask in masks.items():
                averaged[name][key][mask] = np.nan
    reports: dict[str, RunReport] = {}
    for run in runs:
        per_run = values[run.name]
        summed = averaged[run.name]
        mean: dict[str, float | None] = {}
        valid: dict[str, int] = {}
        for key in options.metrics:
            if key in ratio_parts:
                num, den = ratio_parts[key]
                mean[key.name], valid[key.name] = ratio_of_means(summed[num], summed[den])
            else:
                mean[key.name], valid[key.name] = nan_mean(summed[key])
        report = RunReport(mean=mean, valid=valid)
        if options.ci:
            report.ci = _intervals(summed, options, ratio_parts)
        if options.per_query:
            out = outside[run.name]
            report.per_query = _per_query(query_ids, per_run, options.metrics, out)
            report.ctx_rank = _ctx_details(run, per_run, options.metrics, stats, out)
        reports[run.name] = report
    result = Report(labels=labels_info, config=config, runs=reports, warnings=warnings)
    if options.compare and len(runs) > 1:
        result.compare = _comparisons(runs, averaged, options)
    return result


def _per_query(
    query_ids: Sequence[str],
    per_run: dict[MetricKey, FloatArray],
    metrics: Sequence[MetricKey],
    out: dict[MetricKey, NDArray[np.bool_]],
) -> dict[str, dict[str, float | None]]:
    """``{query: {metric: value}}``, NaN as None, without the columns a query is out of."""
    if out:
        return {
            qid: {
                key.name: _clean(per_run[key][q])
                for key in metrics
                if key not in out or not out[key][q]
            }
            for q, qid in enumerate(query_ids)
        }
    # Whole columns at a time (tolist, then NaN -> None): a thousand queries took a
    # fifth of an evaluation of 100,000 entries value by value.
    if not metrics:
        return {qid: {} for qid in query_ids}
    names = [key.name for key in metrics]
    isnan = math.isnan
    columns = [[None if isnan(v) else v for v in per_run[key].tolist()] for key in metrics]
    rows = zip(*columns, strict=True)
    return {
        qid: dict(zip(names, row, strict=True)) for qid, row in zip(query_ids, rows, strict=True)
    }


def _outside(
    run: RankedRun, keys: Sequence[MetricKey], own_k_only: frozenset[MetricKey]
) -> dict[MetricKey, NDArray[np.bool_]]:
    """The columns some query of ``run`` is out of, with the mask of those queries."""
    if run.k_override is None and not own_k_only:
        return {}
    masks = {key: out_of_column(run, key, own_k_only) for key in keys}
    return {key: mask for key, mask in masks.items() if mask.any()}


def _intervals(
    per_run: dict[MetricKey, FloatArray],
    options: Options,
    ratio_parts: dict[MetricKey, tuple[MetricKey, MetricKey]],
) -> dict[str, tuple[float, float] | None]:
    plain = [key for key in options.metrics if key not in ratio_parts]
    parts = list(dict.fromkeys(itertools.chain(*ratio_parts.values())))
    columns = plain + [p for p in parts if p not in plain]
    if not columns:
        return {}
    matrix = np.column_stack([per_run[key] for key in columns])
    # A ratio's numerator and denominator share their resamples because all columns
    # are drawn together; RA-nWG and PROC are NA on the same queries (G_oracle = 0),
    # so each resample's ratio is over queries where both are defined.
    boot = bootstrap_means(matrix, options.resamples, options.seed)
    result: dict[str, tuple[float, float] | None] = {}
    for key in options.metrics:
        if key in ratio_parts:
            num, den = ratio_parts[key]
            with np.errstate(invalid="ignore", divide="ignore"):
                ratio = boot[:, columns.index(num)] / boot[:, columns.index(den)]
            ratio[~np.isfinite(ratio)] = np.nan
            result[key.name] = percentile_interval(ratio, options.level)
        else:
            result[key.name] = percentile_interval(boot[:, columns.index(key)], options.level)
    return result


def _ctx_details(
    run: RankedRun,
    per_run: dict[MetricKey, FloatArray],
    metrics: Sequence[MetricKey],
    stats: QueryStats,
    outside: dict[MetricKey, NDArray[np.bool_]],
) -> dict[str, dict[str, CtxRankDetail]] | None:
    keys = [key for key in metrics if key.base == "ctx_rank_prec" and key.k is not None]
    if not keys:
        return None
    from raglabel.formats.report_details import CtxRankDetail

    details: dict[str, dict[str, CtxRankDetail]] = {}
    for key in keys:
        assert key.k is not None
        score = per_run[key]
        passed = passes(score, stats.config.ctx_threshold)
        by_query: dict[str, CtxRankDetail] = {}
        for q, qid in enumerate(stats.labels.query_ids):
            if key in outside and outside[key][q]:
                continue
            ranks, grades = ideal_ranks(run, q, key.k, stats.gains)
            ok = None if np.isnan(score[q]) else bool(passed[q])
            by_query[qid] = CtxRankDetail(
                k=int(ranks.size),
                actual_ranks=list(range(ranks.size)),
                ideal_ranks=ranks.tolist(),
                grades=[int(g) if g > 0 else None for g in grades],
                passed=ok,
            )
        details[key.name] = by_query
    return details


def comparison_pairs(names: Sequence[str], options: Options) -> list[tuple[str, str]]:
    """``(baseline, run)`` of each comparison ``--compare`` makes: every run against the
    baseline when there is one, else every pair of runs."""
    baseline = options.baseline
    if baseline is None and options.first_is_baseline and names:
        baseline = names[0]
    if baseline is not None:
        return [(baseline, name) for name in names if name != baseline]
    return list(itertools.combinations(names, 2))


def _comparisons(
    runs: Sequence[RankedRun],
    values: dict[str, dict[MetricKey, FloatArray]],
    options: Options,
) -> list[Comparison]:
    pairs = comparison_pairs([run.name for run in runs], options)
    headline = headline_metric(options)
    tests = [
        replace(
            paired_test(
                values[base][key],
                values[other][key],
                options,
                baseline=base,
                run=other,
                metric=key.name,
            ),
            family="headline" if key.name == headline else "secondary",
        )
        for base, other in pairs
        for key in options.metrics
    ]
    return adjust_families(tests, options.adjust)
