"""Statistics of answer grades: per-column summaries with bootstrap intervals, the
judge-corrected mean (prediction-powered inference), batch ranking scores of judged
chunks, and Krippendorff's alpha with an interval over items.

Pure numpy. A column holds one value per answer sample (a 1-5 grade, or a 0-100 ranking
score) with NaN where the sample has none; a summary never averages a NaN in and never
writes one out (None instead).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from raglabel.metrics.agreement import krippendorff_alpha
from raglabel.metrics.answer_summaries import CorrectedMean, GradeSummary
from raglabel.metrics.discount import discount
from raglabel.metrics.judge_corrected import judge_corrected
from raglabel.metrics.stats import percentile_interval

FloatArray = NDArray[np.float64]

#: The judge-corrected mean is reported only with at least this many human-graded samples.
MIN_HUMAN = 30


def column_bootstrap(values: FloatArray, resamples: int, seed: int) -> FloatArray:
    """Means of one column over ``resamples`` bootstrap resamples of its rows.

    The same resampling as :func:`raglabel.metrics.stats.bootstrap_means` (rows drawn
    with replacement, NaN rows carrying no weight, NaN when a resample has no defined
    value), drawn over the column's distinct values instead of its rows: how often each
    value is picked is multinomial with the values' shares, so a column of grades costs
    six categories per resample rather than one draw per row.
    """
    n = int(values.size)
    if n == 0:
        return np.full(resamples, np.nan)
    defined = ~np.isnan(values)
    keys, counts = np.unique(values[defined], return_counts=True)
    shares = np.append(counts, n - int(defined.sum())).astype(np.float64) / n
    rng = np.random.default_rng(seed)
    picks = rng.multinomial(n, shares, size=resamples)[:, :-1].astype(np.float64)
    weight = picks.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        means: FloatArray = (picks @ keys.astype(np.float64)) / weight
    return means


def summarize(
    values: FloatArray,
    threshold: float,
    na: Mapping[str, int],
    *,
    resamples: int,
    seed: int,
    level: float = 0.95,
) -> GradeSummary:
    """Mean, pass rate (value >= threshold), valid count, NA counts and the bootstrap
    interval of the mean, of one column of per-sample values (NaN: no value)."""
    defined = values[~np.isnan(values)]
    valid = int(defined.size)
    if valid == 0:
        return GradeSummary(None, None, 0, dict(na), None, int(values.size))
    interval = percentile_interval(column_bootstrap(values, resamples, seed), level)
    return GradeSummary(
        mean=float(defined.mean()),
        pass_rate=float(np.mean(defined >= threshold - 1e-9)),
        valid=valid,
        na=dict(na),
        ci=interval,
        samples=int(values.size),
    )


def corrected_mean(
    judge: FloatArray, human: FloatArray, *, level: float = 0.95, min_human: int = MIN_HUMAN
) -> CorrectedMean | None:
    """The judge-corrected mean of per-sample grades (NaN: none), or None when fewer
    than ``min_human`` samples carry both grades.

    With f the judge's grades on the N samples it graded and h the human grades on the
    n of them people graded too: theta = mean(f) - mean(f - h), and the interval is
    theta +- z * sqrt(var(f) / N + var(f - h) / n), z the normal quantile of ``level``
    (1.959964 at 0.95). Both variances are sample variances (ddof=1): unbiased for the
    population the samples stand for, as the interval's standard error assumes.

    This is :func:`raglabel.metrics.judge_corrected.judge_corrected` with the judge's
    weight fixed at 1 (the answers spec's classic estimator, not power-tuned), the
    samples with a judge grade as the population and those with both as the draw.
    """
    has_judge = ~np.isnan(judge)
    both = has_judge & ~np.isnan(human)
    n = int(both.sum())
    if n < max(min_human, 2):
        return None
    found = judge_corrected(
        judge[:, None],
        human[both][:, None],
        judge[both][:, None],
        level=level,
        lam=1.0,
        min_drawn=2,
    ).column(0)
    figure = found.corrected
    if figure is None:  # cannot happen with n >= 2, but the type says it could
        return None
    return CorrectedMean(figure.mean, figure.ci, figure.queries, int(has_judge.sum()))


def ranking_scores(
    grades: Sequence[Sequence[int]],
    orders: Sequence[Sequence[int]],
    gains: Mapping[int, float],
) -> FloatArray:
    """``ctx_rank_prec`` (0-100) of many samples at once: 100 x DCG of each sample's
    evaluated order / DCG of its chunks sorted by gain; NaN where no chunk gains.

    ``grades[i]`` holds sample i's chunk grades by position (0-based), ``orders[i]`` the
    positions in evaluated order. The same score as
    :func:`raglabel.metrics.chunk_ranking.chunk_ranking` (a test holds them equal),
    computed per group of equal chunk counts on matrices.
    """
    if len(grades) != len(orders):
        raise ValueError(f"{len(grades)} grade lists but {len(orders)} orders")
    table = np.zeros(max([*gains, 5]) + 1)
    for grade, gain in gains.items():
        table[grade] = gain
    scores = np.full(len(grades), np.nan)
    by_size: dict[int, list[int]] = {}
    for i, row in enumerate(grades):
        if len(orders[i]) != len(row):
            raise ValueError(f"sample {i}: {len(row)} grades but an order of {len(orders[i])}")
        by_size.setdefault(len(row), []).append(i)
    for size, members in by_size.items():
        if size == 0:
            continue
        gained = table[np.array([grades[i] for i in members], dtype=np.int64)]
        order = np.array([orders[i] for i in members], dtype=np.int64)
        steps = discount(np.arange(size, dtype=np.int64))
        dcg = np.take_along_axis(gained, order, axis=1) @ steps
        best = -np.sort(-gained, axis=1) @ steps
        with np.errstate(invalid="ignore", divide="ignore"):
            scores[members] = np.where(best > 0, 100.0 * dcg / best, np.nan)
    return scores


@dataclass(frozen=True)
class AlphaInterval:
    """Krippendorff's alpha (ordinal) of a ratings matrix, its bootstrap interval over
    items, and how many items could be paired (rated at least twice)."""

    alpha: float | None
    ci: tuple[float, float] | None
    items: int


def _unit_counts(data: FloatArray, cats: FloatArray) -> FloatArray:
    """counts[u, c]: how many raters put item u in category c."""
    present = ~np.isnan(data)
    counts = np.zeros((data.shape[1], cats.size))
    index = np.searchsorted(cats, data[present])
    if np.any(index >= cats.size) or np.any(
        cats[np.minimum(index, cats.size - 1)] != data[present]
    ):
        raise ValueError("data has values outside the categories")
    np.add.at(counts, (np.nonzero(present)[1], index), 1.0)
    return counts


def pattern_alphas(weights: FloatArray, patterns: FloatArray) -> FloatArray:
    """Ordinal alpha of item sets given as weights over rating patterns.

    ``patterns[p]`` is a category-count vector (items rated alike share it) and
    ``weights[r, p]`` how many items of pattern p set r holds; one alpha per row of
    ``weights`` (NaN where undefined). With every pattern's own item count as weights
    this is Krippendorff's ordinal alpha of the items
    (:func:`raglabel.metrics.agreement.krippendorff_alpha`; a test holds them equal): a
    unit's coincidences (c c^T - diag(c)) / (m - 1) and its frequencies c simply add up.
    """
    m = patterns.sum(axis=1)
    k = patterns.shape[1]
    own = (patterns[:, :, None] * patterns[:, None, :]) - patterns[:, :, None] * np.eye(k)
    own /= (m - 1.0)[:, None, None]
    coincidence = (weights @ own.reshape(len(patterns), k * k)).reshape(-1, k, k)
    freq = weights @ patterns
    total = freq.sum(axis=1)
    # Krippendorff's rank-based ordinal distance, per row: the frequencies from one
    # category to another, less half of the two ends, squared.
    cum = np.concatenate([np.zeros((len(freq), 1)), np.cumsum(freq, axis=1)], axis=1)
    lo = np.minimum.outer(np.arange(k), np.arange(k))
    hi = np.maximum.outer(np.arange(k), np.arange(k))
    delta = (cum[:, hi + 1] - cum[:, lo] - (freq[:, :, None] + freq[:, None, :]) / 2.0) ** 2
    observed = (coincidence * delta).sum(axis=(1, 2))
    expected = np.einsum("ri,rij,rj->r", freq, delta, freq) / (total - 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        alphas: FloatArray = np.where(expected > 0, 1.0 - observed / expected, np.nan)
    return alphas


def alpha_interval(
    data: FloatArray,
    *,
    resamples: int,
    seed: int,
    level: float = 0.95,
    values: Sequence[float] = (1, 2, 3, 4, 5),
) -> AlphaInterval:
    """Krippendorff's ordinal alpha of a (raters, items) matrix with NaN for no rating,
    and a percentile bootstrap interval drawn over the items rated at least twice (the
    others cannot enter alpha). Items are resampled as
    :func:`column_bootstrap` resamples rows: multinomially over their distinct rating
    patterns, which is the same draw. Resamples whose alpha is undefined (a single
    category) are left out of the interval."""
    if data.ndim != 2:
        raise ValueError(f"data must be 2-D (raters, items), got shape {data.shape}")
    pairable = data[:, (~np.isnan(data)).sum(axis=0) >= 2]
    items = int(pairable.shape[1])
    if items == 0:
        return AlphaInterval(None, None, 0)
    alpha = krippendorff_alpha(pairable, "ordinal", values)
    if alpha is None:
        return AlphaInterval(None, None, items)
    counts = _unit_counts(pairable, np.sort(np.asarray(values, dtype=np.float64)))
    patterns, sizes = np.unique(counts, axis=0, return_counts=True)
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(items, sizes / items, size=resamples).astype(np.float64)
    draws = pattern_alphas(weights, patterns)
    return AlphaInterval(alpha, percentile_interval(draws, level), items)
