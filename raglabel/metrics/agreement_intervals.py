"""Bootstrap intervals over queries of agreement figures: the kappas and alpha of two
raters, and Kendall's tau between two orders of runs (over all runs and over the best).

Queries are the unit drawn: a query's pairs were graded together, and a run's metric is
a mean over queries, so drawing pairs or run scores one by one would treat dependent
values as independent. Everything a figure needs is summed per query once (a count
table of the two raters' grades; a run's metric value), so a resample is a matrix
product of how often it draws each query with those sums, and a thousand resamples cost
a few matrix products.

The interval is the percentile one (:func:`raglabel.metrics.stats.percentile_interval`).
A resample on which the figure is undefined (kappa with both raters in one category,
tau with every run tied) is left out of the interval and counted, never averaged in;
with no defined resample there is no interval.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from raglabel.metrics.agreement import binary_tables, table_kappas, tau_b_rows
from raglabel.metrics.answer_stats import pattern_alphas
from raglabel.metrics.stats import percentile_interval

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]

LEVEL = 0.95
#: Fewer queries than this give no interval: resampling one query only repeats it.
MIN_QUERIES = 2
#: Resamples drawn and reduced at a time, which bounds memory for many runs.
_CHUNK = 512
#: The figures of two raters, as the report names them.
PAIR_FIGURES = ("kappa", "kappa_unweighted", "kappa_binary", "alpha")


@dataclass(frozen=True)
class Interval:
    """A figure's percentile interval over the resamples where it was defined (None
    when it was defined on none), and how many resamples were left out as undefined."""

    ci: tuple[float, float] | None
    undefined: int


def interval(draws: FloatArray, level: float = LEVEL) -> Interval:
    """The interval of a figure's values over resamples, NaN where it was undefined."""
    return Interval(percentile_interval(draws, level), int(np.isnan(draws).sum()))


def query_draws(n_queries: int, resamples: int, seed: int | Sequence[int]) -> Iterator[FloatArray]:
    """How often each query is drawn, for ``resamples`` resamples of ``n_queries``
    queries with replacement, in chunks of shape (chunk, n_queries)."""
    rng = np.random.default_rng(seed)
    for start in range(0, resamples, _CHUNK):
        size = min(_CHUNK, resamples - start)
        picks = rng.integers(0, n_queries, size=(size, n_queries))
        # One bincount over all rows at once (row r's picks offset by r * n_queries):
        # several times faster than a multinomial draw per row, and the same law.
        offset = picks + n_queries * np.arange(size)[:, None]
        counts = np.bincount(offset.ravel(), minlength=size * n_queries)
        yield counts.reshape(size, n_queries).astype(np.float64)


def table_alphas(tables: FloatArray) -> FloatArray:
    """Krippendorff's ordinal alpha of two raters from each (K, K) count table of a
    stack (rows one rater's category, columns the other's; every item rated by both),
    NaN where undefined.

    Each cell (i, j) holds items whose two ratings make the category-count pattern
    e_i + e_j, so the table's cells are the weights of those patterns in
    :func:`raglabel.metrics.answer_stats.pattern_alphas`.
    """
    k = tables.shape[-1]
    eye = np.eye(k)
    patterns = (eye[:, None, :] + eye[None, :, :]).reshape(k * k, k)
    alphas: FloatArray = pattern_alphas(tables.reshape(-1, k * k), patterns)
    return alphas.reshape(tables.shape[:-2])


def table_figures(tables: FloatArray, relevant: BoolArray) -> dict[str, FloatArray]:
    """The four figures of two raters from each count table of a stack (..., K, K):
    quadratic, unweighted and binary kappa (``relevant`` flags the categories counted
    relevant) and ordinal alpha; NaN where undefined."""
    return {
        "kappa": table_kappas(tables, "quadratic"),
        "kappa_unweighted": table_kappas(tables, "none"),
        "kappa_binary": table_kappas(binary_tables(tables, relevant), "none"),
        "alpha": table_alphas(tables),
    }


def pair_intervals(
    query_tables: FloatArray,
    relevant: BoolArray,
    *,
    resamples: int,
    seed: int | Sequence[int],
    level: float = LEVEL,
) -> dict[str, Interval]:
    """Bootstrap intervals of :func:`table_figures` over queries, from each query's
    count table (shape (queries, K, K)); empty with fewer than ``MIN_QUERIES`` queries."""
    n, k = query_tables.shape[0], query_tables.shape[-1]
    if n < MIN_QUERIES:
        return {}
    flat = query_tables.reshape(n, k * k)
    chunks = [
        table_figures((counts @ flat).reshape(-1, k, k), relevant)
        for counts in query_draws(n, resamples, seed)
    ]
    return {
        name: interval(np.concatenate([chunk[name] for chunk in chunks]), level)
        for name in PAIR_FIGURES
    }


def top_tau_rows(
    human: FloatArray, judge: FloatArray, top: int, *, lower_is_better: bool = False
) -> FloatArray:
    """Kendall's tau-b between two orders of the ``top`` runs best on ``human``, per row
    of two (R, runs) matrices of run scores (NaN: no score; such a run cannot be among
    the best). Ties at the cut go to the run in the earlier column. NaN where fewer
    than 3 runs have both scores, or tau is undefined."""
    if human.shape != judge.shape or human.ndim != 2:
        raise ValueError(f"human and judge must be matrices of one shape, got {human.shape}")
    defined = ~(np.isnan(human) | np.isnan(judge))
    best_first = -human if not lower_is_better else human
    key = np.where(defined, best_first, np.inf)
    chosen = np.argsort(key, axis=1, kind="stable")[:, :top]
    kept = np.take_along_axis(defined, chosen, axis=1)
    h = np.where(kept, np.take_along_axis(human, chosen, axis=1), np.nan)
    j = np.where(kept, np.take_along_axis(judge, chosen, axis=1), np.nan)
    taus = tau_b_rows(h, j)
    taus[kept.sum(axis=1) < 3] = np.nan
    return taus


def _means(counts: FloatArray, filled: FloatArray, valid: FloatArray) -> FloatArray:
    """Each run's mean over the drawn queries, NaN where none of them has a value."""
    with np.errstate(invalid="ignore", divide="ignore"):
        means: FloatArray = (counts @ filled) / (counts @ valid)
    return means


def run_order_intervals(
    human: FloatArray,
    judge: FloatArray,
    top: int,
    *,
    lower_is_better: bool,
    resamples: int,
    seed: int | Sequence[int],
    level: float = LEVEL,
) -> tuple[Interval, Interval] | None:
    """Bootstrap intervals over queries of tau (all runs) and of tau over the ``top``
    runs best on human labels, chosen afresh in each resample, from each query's metric
    value per run (shape (queries, runs), NaN: no value) on human and on judge labels.
    None with fewer than ``MIN_QUERIES`` queries."""
    n = human.shape[0]
    if n < MIN_QUERIES:
        return None
    sides = []
    for values in (human, judge):
        valid = (~np.isnan(values)).astype(np.float64)
        sides.append((np.nan_to_num(values, nan=0.0), valid))
    taus, tops = [], []
    for counts in query_draws(n, resamples, seed):
        h = _means(counts, *sides[0])
        j = _means(counts, *sides[1])
        taus.append(tau_b_rows(h, j))
        tops.append(top_tau_rows(h, j, top, lower_is_better=lower_is_better))
    return interval(np.concatenate(taus), level), interval(np.concatenate(tops), level)
