"""Tests of the agreement statistics in ``raglabel.metrics.agreement``.

The fast, matrix-based functions are checked against published values and against slow
reference implementations written here straight from the definitions (loops over pairs
of ratings), which share no code with the module.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from examples import examples
from hypothesis import given
from hypothesis import strategies as st
from numpy.typing import NDArray

from raglabel.metrics.agreement import (
    confusion,
    kendall_tau_b,
    krippendorff_alpha,
    mean_difference,
    weighted_kappa,
)

NAN = math.nan
LEVELS = ("nominal", "ordinal", "interval")

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C:
# 4 observers x 12 units, NaN where an observer gave no value. Unit 12 has a single
# value and is not pairable.
KRIPPENDORFF_2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
)


def reference_alpha(data: NDArray[np.float64], level: str) -> float | None:
    """Alpha from the pairwise definition: 1 - D_o / D_e over all pairable values.

    D_o averages the distance over ordered pairs of ratings within a unit (each unit's
    pairs weighted 1 / (m_u - 1)); D_e averages it over all ordered pairs of pairable
    values regardless of unit.
    """
    units = []
    for column in np.asarray(data, dtype=float).T:
        rated = [float(v) for v in column if not math.isnan(v)]
        if len(rated) >= 2:
            units.append(rated)
    pooled = [v for unit in units for v in unit]
    n = len(pooled)
    if n < 2:
        return None

    def delta(c: float, k: float) -> float:
        if level == "nominal":
            return 0.0 if c == k else 1.0
        if level == "interval":
            return (c - k) ** 2
        lo, hi = min(c, k), max(c, k)
        between = sum(1 for v in pooled if lo <= v <= hi)
        n_c = pooled.count(c)
        n_k = pooled.count(k)
        return (between - (n_c + n_k) / 2) ** 2

    d_o = 0.0
    for unit in units:
        m = len(unit)
        for i, j in itertools.permutations(range(m), 2):
            d_o += delta(unit[i], unit[j]) / (m - 1)
    d_o /= n
    d_e = sum(delta(pooled[i], pooled[j]) for i, j in itertools.permutations(range(n), 2))
    d_e /= n * (n - 1)
    if d_e == 0:
        return None
    return 1.0 - d_o / d_e


def reference_kappa(
    a: list[int], b: list[int], categories: list[int], weights: str
) -> float | None:
    """Weighted kappa from per-item and all-pairs disagreement, with no confusion table."""
    n = len(a)
    if n == 0:
        return None
    k = len(categories)
    pos = {c: i for i, c in enumerate(categories)}

    def w(x: int, y: int) -> float:
        i, j = pos[x], pos[y]
        if weights == "quadratic":
            return (i - j) ** 2 / (k - 1) ** 2
        if weights == "linear":
            return abs(i - j) / (k - 1)
        return 0.0 if i == j else 1.0

    observed = sum(w(x, y) for x, y in zip(a, b, strict=True)) / n
    # Pairing every a-grade with every b-grade is what chance agreement means here.
    expected = sum(w(x, y) for x in a for y in b) / (n * n)
    if expected == 0:
        return None
    return 1.0 - observed / expected


def reference_tau_b(x: list[float], y: list[float]) -> float | None:
    n = len(x)
    concordant = discordant = tied_x = tied_y = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0:
                tied_x += 1
            if dy == 0:
                tied_y += 1
            if dx * dy > 0:
                concordant += 1
            elif dx * dy < 0:
                discordant += 1
    pairs = n * (n - 1) // 2
    if n < 2 or pairs in (tied_x, tied_y):
        return None
    return (concordant - discordant) / math.sqrt((pairs - tied_x) * (pairs - tied_y))


def assert_same(got: float | None, want: float | None) -> None:
    if want is None:
        assert got is None
    else:
        assert got is not None
        assert got == pytest.approx(want, abs=1e-9)


# --- Krippendorff's alpha --------------------------------------------------------------


@pytest.mark.parametrize(
    ("level", "published"),
    [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)],
)
def test_alpha_krippendorff_2011_published_values(level: str, published: float) -> None:
    got = krippendorff_alpha(KRIPPENDORFF_2011, level)  # type: ignore[arg-type]
    assert got is not None
    assert round(got, 3) == published


@pytest.mark.parametrize("level", LEVELS)
def test_alpha_krippendorff_2011_matches_reference(level: str) -> None:
    got = krippendorff_alpha(KRIPPENDORFF_2011, level)  # type: ignore[arg-type]
    assert_same(got, reference_alpha(KRIPPENDORFF_2011, level))


def test_alpha_krippendorff_2011_exact_values() -> None:
    # Full precision, so that a change which still rounds to the published three
    # decimals cannot slip through.
    assert krippendorff_alpha(KRIPPENDORFF_2011, "nominal") == pytest.approx(0.7434210526315789)
    assert krippendorff_alpha(KRIPPENDORFF_2011, "ordinal") == pytest.approx(0.8153875037548813)
    assert krippendorff_alpha(KRIPPENDORFF_2011, "interval") == pytest.approx(0.8491071428571428)


def test_alpha_default_level_is_ordinal() -> None:
    assert krippendorff_alpha(KRIPPENDORFF_2011) == krippendorff_alpha(KRIPPENDORFF_2011, "ordinal")


@pytest.mark.parametrize("level", LEVELS)
def test_alpha_perfect_agreement_is_one(level: str) -> None:
    data = np.array([[1, 2, 3, 4, 5, NAN], [1, 2, 3, 4, 5, 2], [NAN, 2, 3, NAN, 5, 2]])
    assert krippendorff_alpha(data, level) == pytest.approx(1.0)  # type: ignore[arg-type]


@pytest.mark.parametrize("level", LEVELS)
def test_alpha_single_category_is_none(level: str) -> None:
    data = np.array([[3, 3, 3], [3, 3, NAN]], dtype=float)
    assert krippendorff_alpha(data, level) is None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "data",
    [
        np.empty((0, 0)),
        np.full((3, 4), NAN),
        np.array([[1.0, 2.0, 3.0]]),  # one rater: nothing pairable
        np.array([[1.0, NAN], [NAN, 2.0]]),  # each unit rated once
    ],
)
def test_alpha_nothing_pairable_is_none(data: NDArray[np.float64]) -> None:
    for level in LEVELS:
        assert krippendorff_alpha(data, level) is None  # type: ignore[arg-type]


@pytest.mark.parametrize("level", LEVELS)
def test_alpha_unused_categories_change_nothing(level: str) -> None:
    data = np.array([[1, 2, 4, 4, NAN], [1, 4, 4, 2, 1], [2, 2, NAN, 4, 1]], dtype=float)
    default = krippendorff_alpha(data, level)  # type: ignore[arg-type]
    full = krippendorff_alpha(data, level, values=[1, 2, 3, 4, 5])  # type: ignore[arg-type]
    assert default is not None
    assert full == pytest.approx(default)


def test_alpha_value_outside_scale_raises() -> None:
    data = np.array([[1, 2, 6], [1, 2, 3]], dtype=float)
    with pytest.raises(ValueError, match="outside the categories"):
        krippendorff_alpha(data, values=[1, 2, 3, 4, 5])


def test_alpha_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="2-D"):
        krippendorff_alpha(np.array([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="infinite"):
        krippendorff_alpha(np.array([[1.0, math.inf], [1.0, 2.0]]))
    with pytest.raises(ValueError, match="level"):
        krippendorff_alpha(KRIPPENDORFF_2011, "ratio")  # type: ignore[arg-type]


def test_alpha_ordinal_differs_from_interval_on_skewed_use() -> None:
    # Ordinal distance depends on how often categories are used, interval does not; a
    # sample where the raters crowd one end of the scale must tell them apart.
    data = np.array([[1, 1, 1, 2, 5, 1], [1, 1, 2, 2, 4, 1]], dtype=float)
    ordinal = krippendorff_alpha(data, "ordinal")
    interval = krippendorff_alpha(data, "interval")
    assert ordinal is not None
    assert interval is not None
    assert ordinal != pytest.approx(interval)


@st.composite
def rating_matrices(draw: st.DrawFn) -> NDArray[np.float64]:
    raters = draw(st.integers(1, 5))
    units = draw(st.integers(0, 8))
    cells = draw(
        st.lists(
            st.one_of(st.none(), st.integers(1, 5)),
            min_size=raters * units,
            max_size=raters * units,
        )
    )
    flat = [NAN if v is None else float(v) for v in cells]
    return np.array(flat, dtype=float).reshape(raters, units)


@examples(200)
@given(rating_matrices(), st.sampled_from(LEVELS))
def test_alpha_matches_reference(data: NDArray[np.float64], level: str) -> None:
    assert_same(krippendorff_alpha(data, level), reference_alpha(data, level))  # type: ignore[arg-type]


@examples(100)
@given(rating_matrices(), st.sampled_from(LEVELS))
def test_alpha_ignores_rater_and_unit_order(data: NDArray[np.float64], level: str) -> None:
    shuffled = data[::-1, ::-1]
    assert_same(krippendorff_alpha(shuffled, level), krippendorff_alpha(data, level))  # type: ignore[arg-type]


# --- weighted kappa ----------------------------------------------------------------------


def test_kappa_hand_example() -> None:
    # Items (1,1) (2,2) (3,3) (1,2) on a 3-point scale, quadratic weights 0, 1/4, 1.
    # Observed disagreement: one item at 1/4 out of 4 = 1/16. Marginals a = (1/2, 1/4,
    # 1/4), b = (1/4, 1/2, 1/4) give expected disagreement 5/16, so kappa = 1 - 1/5.
    a, b = [1, 2, 3, 1], [1, 2, 3, 2]
    assert weighted_kappa(a, b, categories=(1, 2, 3)) == pytest.approx(0.8)
    assert reference_kappa(a, b, [1, 2, 3], "quadratic") == pytest.approx(0.8)


def test_kappa_unweighted_textbook_example() -> None:
    # 50 items, two readers saying yes (2) or no (1): 20 yes/yes, 5 yes/no, 10 no/yes,
    # 15 no/no. p_o = 0.7, p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5, kappa = 0.4.
    a = [2] * 20 + [2] * 5 + [1] * 10 + [1] * 15
    b = [2] * 20 + [1] * 5 + [2] * 10 + [1] * 15
    assert weighted_kappa(a, b, categories=(1, 2), weights="none") == pytest.approx(0.4)
    # On two categories every weighting is the same 0/1 weighting.
    assert weighted_kappa(a, b, categories=(1, 2)) == pytest.approx(0.4)
    assert weighted_kappa(a, b, categories=(1, 2), weights="linear") == pytest.approx(0.4)


@pytest.mark.parametrize("weights", ["quadratic", "linear", "none"])
def test_kappa_perfect_agreement_is_one(weights: str) -> None:
    grades = [1, 2, 3, 4, 5, 3, 3, 1]
    assert weighted_kappa(grades, grades, weights=weights) == pytest.approx(1.0)  # type: ignore[arg-type]


@pytest.mark.parametrize("weights", ["quadratic", "linear", "none"])
def test_kappa_none_when_undefined(weights: str) -> None:
    assert weighted_kappa([], [], weights=weights) is None  # type: ignore[arg-type]
    assert weighted_kappa([4, 4, 4], [4, 4, 4], weights=weights) is None  # type: ignore[arg-type]


def test_kappa_weights_order_the_penalty() -> None:
    # Off by one everywhere: quadratic weights forgive that most, 0/1 weights not at all.
    a = [1, 2, 3, 4, 5, 1, 2, 3, 4, 5]
    b = [2, 3, 4, 5, 4, 1, 2, 3, 4, 5]
    quad = weighted_kappa(a, b, weights="quadratic")
    lin = weighted_kappa(a, b, weights="linear")
    plain = weighted_kappa(a, b, weights="none")
    assert quad is not None
    assert lin is not None
    assert plain is not None
    assert quad > lin > plain


def test_kappa_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="same length"):
        weighted_kappa([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="outside the categories"):
        weighted_kappa([1, 2, 6], [1, 2, 3])
    with pytest.raises(ValueError, match="outside the categories"):
        weighted_kappa([1, 2, 3], [1, 2.5, 3])
    with pytest.raises(ValueError, match="NaN"):
        weighted_kappa([1, 2, NAN], [1, 2, 3])
    with pytest.raises(ValueError, match="weights"):
        weighted_kappa([1], [1], weights="cubic")  # type: ignore[arg-type]


grade_pairs = st.integers(0, 30).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(1, 5), min_size=n, max_size=n),
        st.lists(st.integers(1, 5), min_size=n, max_size=n),
    )
)


@examples(200)
@given(grade_pairs, st.sampled_from(["quadratic", "linear", "none"]))
def test_kappa_matches_reference(pair: tuple[list[int], list[int]], weights: str) -> None:
    a, b = pair
    got = weighted_kappa(a, b, weights=weights)  # type: ignore[arg-type]
    assert_same(got, reference_kappa(a, b, [1, 2, 3, 4, 5], weights))


@examples(200)
@given(grade_pairs)
def test_kappa_quadratic_is_symmetric(pair: tuple[list[int], list[int]]) -> None:
    a, b = pair
    assert_same(weighted_kappa(b, a), weighted_kappa(a, b))


# --- confusion -----------------------------------------------------------------------


def test_confusion_rows_follow_a() -> None:
    table = confusion([1, 1, 2, 3, 3, 3], [1, 2, 2, 3, 3, 1], categories=(1, 2, 3))
    assert table.dtype == np.int64
    np.testing.assert_array_equal(table, [[1, 1, 0], [0, 1, 0], [1, 0, 2]])


def test_confusion_default_scale_and_empty() -> None:
    table = confusion([5, 1], [4, 1])
    assert table.shape == (5, 5)
    assert table[4, 3] == 1
    assert table[0, 0] == 1
    assert int(table.sum()) == 2
    np.testing.assert_array_equal(confusion([], []), np.zeros((5, 5), dtype=np.int64))


def test_confusion_follows_category_order() -> None:
    table = confusion([1, 3], [3, 3], categories=(3, 1))
    np.testing.assert_array_equal(table, [[1, 0], [1, 0]])


def test_confusion_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="same length"):
        confusion([1, 2], [1])
    with pytest.raises(ValueError, match="outside the categories"):
        confusion([0, 1], [1, 1])
    with pytest.raises(ValueError, match="1-D"):
        confusion([[1, 2]], [[1, 2]])
    with pytest.raises(ValueError, match="repeat"):
        confusion([1], [1], categories=(1, 1, 2))


# --- Kendall's tau-b -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("x", "y", "expected"),
    [
        # Expected values computed once with scipy.stats.kendalltau (variant "b").
        ([1, 2, 3, 4, 5], [3, 1, 2, 5, 4], 0.4),
        ([1, 2, 2, 3, 4], [1, 3, 2, 2, 5], 0.6666666666666666),
        ([0.1, 0.2, 0.2, 0.4, 0.4, 0.9], [1, 1, 2, 2, 3, 3], 0.8006407690254358),
        ([12, 2, 1, 12, 2], [1, 4, 7, 1, 0], -0.4714045207910316),
    ],
)
def test_tau_b_known_values(x: list[float], y: list[float], expected: float) -> None:
    assert kendall_tau_b(x, y) == pytest.approx(expected, abs=1e-12)


def test_tau_b_identical_and_reversed() -> None:
    x = [0.3, 0.1, 0.7, 0.5]
    assert kendall_tau_b(x, x) == pytest.approx(1.0)
    assert kendall_tau_b(x, [-v for v in x]) == pytest.approx(-1.0)
    assert kendall_tau_b([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)


def test_tau_b_ties_still_reach_one() -> None:
    # The tie correction is what lets equal rankings with ties score exactly 1.
    x = [1, 1, 2, 3, 3]
    assert kendall_tau_b(x, x) == pytest.approx(1.0)
    assert kendall_tau_b(x, [10, 10, 20, 30, 30]) == pytest.approx(1.0)


def test_tau_b_none_when_undefined() -> None:
    assert kendall_tau_b([], []) is None
    assert kendall_tau_b([1.0], [2.0]) is None
    assert kendall_tau_b([2, 2, 2], [1, 2, 3]) is None
    assert kendall_tau_b([1, 2, 3], [5, 5, 5]) is None


def test_tau_b_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="same length"):
        kendall_tau_b([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="NaN"):
        kendall_tau_b([1, NAN], [1, 2])


@examples(200)
@given(
    st.integers(0, 12).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(0, 4), min_size=n, max_size=n),
            st.lists(st.integers(0, 4), min_size=n, max_size=n),
        )
    )
)
def test_tau_b_matches_reference(pair: tuple[list[int], list[int]]) -> None:
    x, y = pair
    xs, ys = [float(v) for v in x], [float(v) for v in y]
    got = kendall_tau_b(xs, ys)
    assert_same(got, reference_tau_b(xs, ys))
    assert_same(kendall_tau_b(ys, xs), got)


# --- mean difference -------------------------------------------------------------------


def test_mean_difference() -> None:
    assert mean_difference([3, 4, 5], [2, 4, 3]) == pytest.approx(1.0)
    assert mean_difference([1, 1], [2, 3]) == pytest.approx(-1.5)
    assert mean_difference([], []) is None


def test_mean_difference_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="same length"):
        mean_difference([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="1-D"):
        mean_difference(np.ones((2, 2)), np.ones((2, 2)))
