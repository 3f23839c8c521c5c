"""Means over queries, percentile bootstrap intervals and paired randomization tests.

All resampling is seeded, so one input always gives one output. Resamples are drawn
as count matrices (how often each query is picked) so that a mean over a resample
is a matrix product, and NA values simply carry zero weight.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import ClassVar, Literal, Protocol

import numpy as np
from numpy.typing import NDArray

from raglabel.metrics.names import lower_is_better

FloatArray = NDArray[np.float64]
_CHUNK = 256


def nan_mean(values: FloatArray) -> tuple[float | None, int]:
    """Mean of the defined values and how many there were (None when there are none)."""
    valid = ~np.isnan(values)
    n = int(valid.sum())
    return (float(values[valid].mean()) if n else None), n


def ratio_of_means(num: FloatArray, den: FloatArray) -> tuple[float | None, int]:
    """mean(num) / mean(den) over queries where both are defined (None if den's mean is 0)."""
    both = ~np.isnan(num) & ~np.isnan(den)
    n = int(both.sum())
    if n == 0:
        return None, 0
    d = float(den[both].mean())
    return (float(num[both].mean()) / d if d > 0 else None), n


def _resample_counts(rng: np.random.Generator, n: int, size: int) -> NDArray[np.float64]:
    counts: NDArray[np.float64] = rng.multinomial(n, np.full(n, 1.0 / n), size=size).astype(
        np.float64
    )
    return counts


def bootstrap_means(columns: FloatArray, resamples: int, seed: int) -> FloatArray:
    """Means of every column over bootstrap resamples of rows: shape (resamples, n_columns).

    NaN entries drop out of each resample's mean; a resample where a column has no
    defined value yields NaN for it.
    """
    n = columns.shape[0]
    if n == 0:  # nothing to resample: every mean is undefined, as for an all-NaN column
        return np.full((resamples, columns.shape[1]), np.nan)
    valid = (~np.isnan(columns)).astype(np.float64)
    filled = np.nan_to_num(columns, nan=0.0)
    rng = np.random.default_rng(seed)
    out = np.empty((resamples, columns.shape[1]))
    for start in range(0, resamples, _CHUNK):
        size = min(_CHUNK, resamples - start)
        counts = _resample_counts(rng, n, size)
        total = counts @ filled
        weight = counts @ valid
        with np.errstate(invalid="ignore", divide="ignore"):
            out[start : start + size] = total / weight
    return out


def percentile_interval(samples: FloatArray, level: float = 0.95) -> tuple[float, float] | None:
    """Central percentile interval of bootstrap samples (None if none is defined)."""
    defined = samples[~np.isnan(samples)]
    if defined.size == 0:
        return None
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(defined, [tail, 100.0 - tail])
    return float(lo), float(hi)


#: Which family of tests a comparison's p-value is adjusted in (see :func:`adjust_families`).
Family = Literal["headline", "secondary"]
FAMILIES: tuple[Family, ...] = ("headline", "secondary")


@dataclass(frozen=True)
class Comparison:
    """Paired randomization test of ``run`` minus ``baseline`` on one metric."""

    # The eval report's JSON Schema is generated from this class (formats/schemas.py):
    # pydantic reads this plain dict, so nothing here imports it.
    __pydantic_config__: ClassVar[dict[str, object]] = {
        "extra": "forbid",
        "use_attribute_docstrings": True,
    }

    baseline: str
    run: str
    metric: str
    mean_difference: float | None
    """Mean over the paired queries of ``run``'s value minus ``baseline``'s."""
    ci: tuple[float, float] | None
    p_value: float | None
    """The test's two-sided p-value as computed, before any adjustment (raw)."""
    wins: int
    """Queries on which ``run`` does better: a higher value, or a lower one for Harm."""
    ties: int
    losses: int
    """Queries on which ``run`` does worse: a lower value, or a higher one for Harm."""
    queries: int
    p_adjusted: float | None = None
    """``p_value`` adjusted (config ``adjust``) over the tests of its ``family`` only."""
    family: Family = "secondary"
    """``headline``: a test on the headline metric (config ``headline``), adjusted with
    the other tests on it only; ``secondary``: every other test (other metrics, answer
    systems), adjusted together."""


class Resampling(Protocol):
    """The settings of every paired test a report makes: ``eval``'s options, an answers
    report's, the app's (which take eval's defaults)."""

    @property
    def permutations(self) -> int: ...
    @property
    def resamples(self) -> int: ...
    @property
    def seed(self) -> int: ...
    @property
    def level(self) -> float: ...


def paired_test(
    a: FloatArray, b: FloatArray, settings: Resampling, *, baseline: str, run: str, metric: str
) -> Comparison:
    """:func:`paired_randomization` with a report's resampling ``settings``: one home for
    the tests the CLI, the answers section and the app's Runs screen make alike."""
    return paired_randomization(
        a,
        b,
        baseline=baseline,
        run=run,
        metric=metric,
        permutations=settings.permutations,
        resamples=settings.resamples,
        seed=settings.seed,
        level=settings.level,
    )


def paired_randomization(
    a: FloatArray,
    b: FloatArray,
    *,
    baseline: str,
    run: str,
    metric: str,
    permutations: int,
    resamples: int,
    seed: int,
    level: float = 0.95,
) -> Comparison:
    """Two-sided paired randomization (sign-flip) test of mean(b - a), where ``a`` holds
    run ``baseline``'s values of ``metric`` per query and ``b`` run ``run``'s, over the
    queries where both are defined.

    Wins and losses count the queries on which ``run`` does better and worse, in the
    metric's direction (:func:`lower_is_better`); the difference stays ``b - a``.

    The p-value counts the observed statistic itself among the permutations
    ((hits + 1) / (permutations + 1)), so it is never 0. The interval is a
    percentile bootstrap of the mean difference.
    """
    both = ~np.isnan(a) & ~np.isnan(b)
    diff = (b - a)[both]
    n = int(diff.size)
    # A win is a query on which the run does better than the baseline: lower, for Harm.
    better = -diff if lower_is_better(metric) else diff
    wins = int((better > 0).sum())
    losses = int((better < 0).sum())
    if n == 0:
        return Comparison(baseline, run, metric, None, None, None, 0, 0, 0, 0)
    observed = float(diff.mean())
    rng = np.random.default_rng(seed)
    hits = 0
    tolerance = 1e-12 * max(1.0, abs(observed))
    for start in range(0, permutations, _CHUNK):
        size = min(_CHUNK, permutations - start)
        signs = rng.integers(0, 2, size=(size, n), dtype=np.int8).astype(np.float64) * 2.0 - 1.0
        stats = signs @ diff / n
        hits += int((np.abs(stats) >= abs(observed) - tolerance).sum())
    p_value = (hits + 1) / (permutations + 1)
    boot = bootstrap_means(diff[:, None], resamples, seed + 1)[:, 0]
    return Comparison(
        baseline=baseline,
        run=run,
        metric=metric,
        mean_difference=observed,
        ci=percentile_interval(boot, level),
        p_value=p_value,
        wins=wins,
        ties=n - wins - losses,
        losses=losses,
        queries=n,
    )


ADJUSTMENTS = ("none", "holm", "bh")


def adjust_p_values(p_values: list[float | None], method: str) -> list[float | None]:
    """p-values adjusted for multiple comparisons over the whole family given.

    ``holm``: Holm's step-down (family-wise error); ``bh``: Benjamini-Hochberg (false
    discovery rate); ``none``: unchanged. None entries (no query to compare) stay None
    and are not part of the family.
    """
    if method not in ADJUSTMENTS:
        raise ValueError(f"unknown adjustment {method!r}; known: {', '.join(ADJUSTMENTS)}")
    present = [i for i, p in enumerate(p_values) if p is not None]
    out: list[float | None] = list(p_values)
    if method == "none" or not present:
        return out
    raw = np.array([p_values[i] for i in present], dtype=np.float64)
    m = raw.size
    order = np.argsort(raw, kind="stable")
    ranked = raw[order]
    if method == "holm":
        scaled = np.maximum.accumulate(ranked * (m - np.arange(m)))
    else:
        scaled = np.minimum.accumulate((ranked * m / np.arange(1, m + 1))[::-1])[::-1]
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(scaled, 1.0)
    for i, value in zip(present, adjusted.tolist(), strict=True):
        out[i] = value
    return out


def adjust_families(tests: Sequence[Comparison], method: str) -> list[Comparison]:
    """``tests`` with ``p_adjusted`` set, each family adjusted on its own.

    The headline question (the headline metric, each run against the baseline) is
    answered by a few tests: adjusted together with every other metric's, it could
    never come out significant in a report of a dozen metrics. So the headline tests
    form one family and all the others a second one; the order of ``tests`` is kept.
    """
    out = list(tests)
    for family in FAMILIES:
        members = [i for i, test in enumerate(tests) if test.family == family]
        adjusted = adjust_p_values([tests[i].p_value for i in members], method)
        for i, p in zip(members, adjusted, strict=True):
            out[i] = replace(tests[i], p_adjusted=p)
    return out
