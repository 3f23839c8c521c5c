"""Answer statistics against independent computations: the judge-corrected mean in plain
Python, alpha against the ``krippendorff`` package, the randomization test against exact
enumeration, the batch ranking score against ``chunk_ranking``, and the distinct-value
bootstrap against the row bootstrap."""

from __future__ import annotations

import itertools
import math
import statistics

import krippendorff
import numpy as np
import pytest
from examples import examples
from hypothesis import given
from hypothesis import strategies as st
from numpy.typing import NDArray

from raglabel.judge.work import ChunkGrade
from raglabel.metrics.agreement import krippendorff_alpha
from raglabel.metrics.answer_stats import (
    alpha_interval,
    column_bootstrap,
    corrected_mean,
    pattern_alphas,
    ranking_scores,
    summarize,
)
from raglabel.metrics.chunk_ranking import chunk_ranking, linear_gains
from raglabel.metrics.stats import bootstrap_means, paired_randomization

NAN = float("nan")


def plain_corrected(judge: list[float], human: list[float]) -> tuple[float, float, float, int]:
    """theta and its interval, computed without numpy from the spec's formula."""
    f = [j for j in judge if not math.isnan(j)]
    d = [j - h for j, h in zip(judge, human, strict=True) if not (math.isnan(j) or math.isnan(h))]
    theta = sum(f) / len(f) - sum(d) / len(d)
    # statistics.variance is the sample variance (n - 1 in the denominator).
    se = math.sqrt(statistics.variance(f) / len(f) + statistics.variance(d) / len(d))
    z = statistics.NormalDist().inv_cdf(0.975)
    return theta, theta - z * se, theta + z * se, len(d)


def test_corrected_mean_equals_the_plain_formula_with_missing_values() -> None:
    rng = np.random.default_rng(3)
    judge = rng.integers(1, 6, size=80).astype(float)
    human = np.clip(judge + rng.integers(-1, 2, size=80), 1, 5).astype(float)
    judge[[2, 9, 40]] = np.nan  # judge failed or never asked
    human[45:] = np.nan  # people graded the first 45 only
    human[[0, 5]] = np.nan
    got = corrected_mean(judge, human)
    assert got is not None
    theta, lo, hi, n = plain_corrected(judge.tolist(), human.tolist())
    # Of the first 45, samples 2, 9 and 40 lack a judge grade, 0 and 5 a human one.
    assert got.n_human == n == 45 - 3 - 2
    assert got.n_judge == 77
    assert got.mean == pytest.approx(theta, abs=1e-12)
    assert got.ci == pytest.approx((lo, hi), abs=1e-12)


def test_corrected_mean_needs_thirty_samples_with_both_grades() -> None:
    judge = np.full(50, 4.0)
    human = np.full(50, np.nan)
    human[:29] = 3.0
    assert corrected_mean(judge, human) is None
    human[29] = 5.0
    got = corrected_mean(judge, human)
    assert got is not None and got.n_human == 30
    # The judge is 4 everywhere; the people are lower by 29/30 on average.
    assert got.mean == pytest.approx(4.0 - (29 * 1.0 - 1.0) / 30)


def test_summary_counts_and_never_writes_nan() -> None:
    values = np.array([5.0, 3.0, np.nan, 2.0, np.nan])
    got = summarize(values, 3, {"no_answer": 1}, resamples=200, seed=1)
    assert got.mean == pytest.approx(10 / 3)
    assert got.pass_rate == pytest.approx(2 / 3)
    assert (got.valid, got.samples, got.na) == (3, 5, {"no_answer": 1})
    assert got.ci is not None and 2.0 <= got.ci[0] <= got.ci[1] <= 5.0
    empty = summarize(np.full(4, np.nan), 3, {"judge_failed": 4}, resamples=50, seed=1)
    assert (empty.mean, empty.pass_rate, empty.ci, empty.valid) == (None, None, None, 0)


def test_column_bootstrap_draws_as_the_row_bootstrap_does() -> None:
    rng = np.random.default_rng(7)
    values = rng.integers(1, 6, size=300).astype(float)
    values[rng.random(300) < 0.2] = np.nan
    ours = column_bootstrap(values, 20_000, 1)
    rows = bootstrap_means(values[:, None], 20_000, 2)[:, 0]
    # Two independent draws of one distribution: moments and tails agree to sampling error.
    assert ours.mean() == pytest.approx(rows.mean(), abs=0.005)
    assert ours.std() == pytest.approx(rows.std(), rel=0.03)
    assert np.percentile(ours, [2.5, 97.5]) == pytest.approx(
        np.percentile(rows, [2.5, 97.5]), abs=0.02
    )
    # NaN rows carry no weight: a column of one value and NaNs always resamples to it.
    draws = column_bootstrap(np.array([4.0, np.nan, np.nan]), 500, 3)
    assert set(draws[~np.isnan(draws)].tolist()) == {4.0}
    assert np.isnan(draws).any()  # resamples that picked only NaN rows
    assert np.isnan(column_bootstrap(np.full(3, np.nan), 10, 0)).all()
    np.testing.assert_array_equal(column_bootstrap(values, 50, 9), column_bootstrap(values, 50, 9))


@examples(200)
@given(
    st.lists(
        st.lists(st.integers(1, 5), min_size=1, max_size=7).flatmap(
            lambda g: st.tuples(st.just(g), st.permutations(list(range(len(g)))))
        ),
        min_size=1,
        max_size=8,
    )
)
def test_batch_ranking_scores_equal_chunk_ranking(
    samples: list[tuple[list[int], list[int]]],
) -> None:
    grades = [g for g, _ in samples]
    orders = [list(o) for _, o in samples]
    got = ranking_scores(grades, orders, linear_gains())
    for i, (g, order) in enumerate(samples):
        chunks = [ChunkGrade(p + 1, grade, "") for p, grade in enumerate(g)]
        expected = chunk_ranking(chunks, list(order)).score
        if expected is None:
            assert np.isnan(got[i])
        else:
            assert got[i] == pytest.approx(expected, abs=1e-9)


def _ratings(seed: int, raters: int, items: int, missing: float) -> NDArray[np.float64]:
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, size=items)
    data: NDArray[np.float64] = np.clip(
        truth + rng.integers(-1, 2, size=(raters, items)), 1, 5
    ).astype(np.float64)
    data[rng.random(data.shape) < missing] = np.nan
    return data


@pytest.mark.parametrize(
    ("seed", "raters", "items", "missing"), [(1, 2, 40, 0.0), (2, 3, 60, 0.3), (3, 5, 25, 0.5)]
)
def test_alpha_equals_the_krippendorff_package(
    seed: int, raters: int, items: int, missing: float
) -> None:
    data = _ratings(seed, raters, items, missing)
    expected = krippendorff.alpha(
        reliability_data=data, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5]
    )
    assert krippendorff_alpha(data, "ordinal", (1, 2, 3, 4, 5)) == pytest.approx(
        expected, abs=1e-12
    )
    got = alpha_interval(data, resamples=300, seed=seed)
    assert got.alpha == pytest.approx(expected, abs=1e-12)
    assert got.items == int(((~np.isnan(data)).sum(axis=0) >= 2).sum())
    assert got.ci is not None and got.ci[0] <= got.ci[1]


def test_every_bootstrap_alpha_equals_the_package_on_the_resampled_items() -> None:
    # pattern_alphas on pattern weights is alpha of the items those weights stand for:
    # repeat each item as often as a resample picks it and ask the package.
    data = _ratings(5, 3, 30, 0.25)
    data = data[:, (~np.isnan(data)).sum(axis=0) >= 2]
    rng = np.random.default_rng(0)
    for _ in range(5):
        picked = rng.integers(0, data.shape[1], size=data.shape[1])
        sample = data[:, picked]
        counts = np.zeros((sample.shape[1], 5))
        for u in range(sample.shape[1]):
            for value in sample[:, u][~np.isnan(sample[:, u])]:
                counts[u, int(value) - 1] += 1
        patterns, sizes = np.unique(counts, axis=0, return_counts=True)
        got = pattern_alphas(sizes[None, :].astype(float), patterns)[0]
        expected = krippendorff.alpha(
            reliability_data=sample, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5]
        )
        assert got == pytest.approx(expected, abs=1e-9)


def test_alpha_of_too_few_items_is_none() -> None:
    one = np.array([[3.0, np.nan], [np.nan, 4.0]])
    assert alpha_interval(one, resamples=10, seed=0).alpha is None
    assert alpha_interval(one, resamples=10, seed=0).items == 0
    same = np.array([[3.0, 3.0], [3.0, 3.0]])  # one category: alpha is 0/0
    assert alpha_interval(same, resamples=10, seed=0).alpha is None


def test_randomization_p_value_matches_exact_enumeration_with_missing_values() -> None:
    a = np.array([3, 4, 2, 5, 3, np.nan, 4, 1, 2, 3, 5, 4])
    b = np.array([4, 5, 2, 5, 4, 3, np.nan, 3, 3, 4, 4, 5])
    both = ~np.isnan(a) & ~np.isnan(b)
    diff = (b - a)[both]
    observed = abs(diff.mean())
    # Every sign assignment of the 10 paired differences, counted exactly.
    hits = sum(
        abs(sum(s * d for s, d in zip(signs, diff, strict=True)) / diff.size) >= observed - 1e-12
        for signs in itertools.product((-1, 1), repeat=diff.size)
    )
    exact = hits / 2**diff.size
    got = paired_randomization(
        a, b, baseline="a", run="b", metric="m", permutations=200_000, resamples=100, seed=5
    )
    assert got.queries == 10
    assert got.mean_difference == pytest.approx(diff.mean())
    assert got.p_value == pytest.approx(exact, abs=0.005)
    assert (got.wins, got.ties, got.losses) == (7, 2, 1)
