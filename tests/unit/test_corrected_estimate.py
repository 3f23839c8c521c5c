"""The judge-corrected estimate (issue 29 §2-3, raglabel.metrics.judge_corrected), shown
valid rather than claimed:

- the formula against a plain-Python computation of the spec's estimator, undefined
  values included; the weight's clipping and degenerate cases; the refusal;
- the quantile, the p-value and the classical intervals against scipy;
- the estimator against the reference implementation, ``ppi_py`` (PyPI ``ppi-python``):
  equal where the conventions agree, and differing exactly by the documented conventions
  where they do not (the weight's moments, population against sample variances);
- ``queries_to_settle`` against a plain search under the stated assumption;
- by seeded simulation of 1,000 draws of 40 queries from a population of 400, with a
  judge that overrates every query and favours one run: the intervals of both runs' means
  and of their paired difference cover the truth at least 93% of the time; when the judge
  correlates with people at 0.5 or more they are narrower than people's alone on every
  draw where the judge gets any weight (over 99% of draws; on the others they are
  people's own), and when the judge is pure noise they are within 10% of people's alone
  on average (and on 99% of draws).

The truth is the mean of people's metric over the whole population. The population is
finite and the draw is without replacement, so that mean, not the mean of some infinite
distribution the population came from, is what a draw's estimate is unbiased for; it is
also what "all-human" evaluation would report had people graded every query.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import numpy as np
import pytest
from numpy.typing import NDArray
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
from scipy import stats

from raglabel.metrics.judge_corrected import (
    MIN_DRAWN,
    Correction,
    Corrections,
    TooFewDrawnError,
    judge_corrected,
    normal_quantile,
)

FloatArray = NDArray[np.float64]
NAN = math.nan

POPULATION = 400
DRAWN = 40
DRAWS = 1000
#: Overrating every query, and more so run B's: what LLM assessors are found to do.
OVERRATE = 0.10
FAVOUR_B = 0.05


# --- the formula, in plain Python ---------------------------------------------------------


def _defined(*columns: list[float]) -> list[tuple[float, ...]]:
    return [row for row in zip(*columns, strict=True) if not any(math.isnan(x) for x in row)]


def plain_estimate(
    f: list[float], h: list[float], g: list[float], level: float = 0.95
) -> dict[str, float]:
    """The spec's estimator, from its text, without numpy: f over the population, h and
    g over the draw, a query's NaN leaving it out of its side."""
    fs = [x for x in f if not math.isnan(x)]
    pairs = _defined(h, g)
    hs = [p[0] for p in pairs]
    gs = [p[1] for p in pairs]
    n, n_all = len(pairs), len(fs)
    cov = statistics.covariance(hs, gs)  # sample covariance (n - 1)
    lam = min(max(cov / ((1 + n / n_all) * statistics.variance(gs)), 0.0), 1.0)
    rest = [a - lam * b for a, b in pairs]
    estimate = lam * statistics.fmean(fs) + statistics.fmean(rest)
    se = math.sqrt(statistics.variance(rest) / n + lam**2 * statistics.variance(fs) / n_all)
    z = statistics.NormalDist().inv_cdf(0.5 + level / 2)
    return {
        "estimate": estimate,
        "lam": lam,
        "low": estimate - z * se,
        "high": estimate + z * se,
        "n": n,
        "n_all": n_all,
    }


def test_the_estimate_is_the_spec_formula_with_undefined_values_left_out() -> None:
    rng = np.random.default_rng(1)
    f = rng.uniform(0, 1, size=(60, 2))
    h = np.clip(f[:20] + rng.normal(-0.1, 0.15, size=(20, 2)), 0, 1)
    f[[3, 50, 51], 0] = NAN  # the metric is undefined for these on judge labels
    h[[0, 7], 0] = NAN  # and for these on people's
    f[11, 1] = NAN
    g = f[:20]  # the first 20 population queries are the draw
    got = judge_corrected(f, h, g)
    for j in range(2):
        want = plain_estimate(f[:, j].tolist(), h[:, j].tolist(), g[:, j].tolist())
        column = got.column(j)
        assert column.corrected is not None
        assert column.corrected.mean == pytest.approx(want["estimate"], abs=1e-12)
        assert column.lam == pytest.approx(want["lam"], abs=1e-12)
        assert column.corrected.ci == pytest.approx((want["low"], want["high"]), abs=1e-12)
        assert column.corrected.queries == want["n"]
        assert got.judge_only.queries[j] == want["n_all"]
    # Column 0: drawn queries 0, 3 and 7 lack h or g; population queries 3, 50, 51 lack f.
    first = got.column(0)
    assert (first.drawn_undefined, first.population_undefined) == (3, 3)
    assert first.corrected is not None and first.corrected.queries == 17
    # People alone: every drawn query where h is defined (3 is, though g is not).
    assert first.human_only is not None and first.human_only.queries == 18
    human = [x for x in h[:, 0].tolist() if not math.isnan(x)]
    assert first.human_only.mean == pytest.approx(statistics.fmean(human))
    assert (got.column(1).drawn_undefined, got.column(1).population_undefined) == (1, 1)


def test_the_weight_is_clipped_to_0_and_1_and_a_constant_judge_gets_0() -> None:
    rng = np.random.default_rng(2)
    h = rng.uniform(0, 1, size=(30, 1))
    against = 1.0 - h  # a judge that gets people backwards
    compressed = 0.2 * h + 0.5  # tracks people, on a fifth of their scale: raw lam ~ 5
    constant = np.full((30, 1), 0.7)
    cases = {"against": against, "compressed": compressed, "constant": constant}
    for name, g in cases.items():
        f = np.concatenate([g, g[::-1] + 0.01])
        got = judge_corrected(f, h, g).column(0)
        assert got.corrected is not None and got.human_only is not None
        if name == "compressed":
            assert got.lam == 1.0 and not got.constant_judge
            continue
        assert got.lam == 0.0
        assert got.constant_judge is (name == "constant")
        # lam = 0 is people's mean alone, interval and all.
        assert got.corrected.mean == pytest.approx(got.human_only.mean, abs=1e-12)
        assert got.corrected.ci == pytest.approx(got.human_only.ci, abs=1e-12)
    # A fixed weight is used as given, and a constant judge is then no news.
    fixed = judge_corrected(np.concatenate([constant, constant]), h, constant, lam=0.5)
    assert fixed.column(0).lam == 0.5 and not fixed.column(0).constant_judge


def test_fewer_than_ten_complete_drawn_queries_are_refused_with_the_count() -> None:
    assert MIN_DRAWN == 10
    f = np.linspace(0, 1, 50)[:, None]
    with pytest.raises(TooFewDrawnError, match=r"only 9 complete drawn queries.*at least 10") as e:
        judge_corrected(f, f[:9], f[:9])
    assert (e.value.complete, e.value.needed) == (9, 10)
    h = f[:10] + 0.05
    assert judge_corrected(f, h, f[:10]).column(0).corrected is not None
    # Ten drawn, but one is undefined for this column: no corrected figure for it, while
    # the judge's and people's own figures stay.
    h[4, 0] = NAN
    column = judge_corrected(f, h, f[:10]).column(0)
    assert column.corrected is None and column.lam is None and column.p_value is None
    assert column.drawn_undefined == 1
    assert column.judge_only is not None and column.human_only is not None


def test_bad_shapes_and_settings_are_named() -> None:
    f = np.zeros((20, 2))
    with pytest.raises(ValueError, match="2-D"):
        judge_corrected(f[:, 0], f[:10], f[:10])
    with pytest.raises(ValueError, match="pair the same queries"):
        judge_corrected(f, f[:10], f[:11])
    with pytest.raises(ValueError, match="f has 2 columns but h and g have 1"):
        judge_corrected(f, f[:10, :1], f[:10, :1])
    with pytest.raises(ValueError, match="smaller than the draw"):
        judge_corrected(f[:10], f[:12], f[:12])
    with pytest.raises(ValueError, match=r"lam must be in \[0, 1\]"):
        judge_corrected(f, f[:10], f[:10], lam=1.5)
    with pytest.raises(ValueError, match="level must be between 0 and 1"):
        judge_corrected(f, f[:10], f[:10], level=95)


# --- quantile, p-value and classical intervals against scipy ------------------------------


def test_quantile_p_value_and_classical_intervals_match_scipy() -> None:
    for level in (0.8, 0.9, 0.95, 0.99):
        assert normal_quantile(level) == pytest.approx(stats.norm.ppf(0.5 + level / 2), rel=1e-12)
    rng = np.random.default_rng(3)
    f = rng.normal(0.02, 0.1, size=(200, 5))
    h = f[:25] + rng.normal(0.0, 0.05, size=(25, 5))
    got = judge_corrected(f, h, f[:25], level=0.9)
    for j in range(5):
        column = got.column(j)
        assert column.corrected is not None and column.p_value is not None
        z_score = column.corrected.mean / column.corrected.se
        assert column.p_value == pytest.approx(2 * stats.norm.sf(abs(z_score)), rel=1e-9)
        for side, values in ((column.judge_only, f[:, j]), (column.human_only, h[:, j])):
            assert side is not None
            want = stats.norm.interval(0.9, loc=values.mean(), scale=stats.sem(values))
            assert side.ci == pytest.approx(want, rel=1e-9)


# --- against ppi_py -------------------------------------------------------------------


def _datasets() -> list[tuple[FloatArray, FloatArray, FloatArray]]:
    """(Y, Yhat, Yhat_unlabeled) in ppi_py's words: people's values, the judge's on the
    same queries, the judge's on the population. Of several sizes and judge qualities."""
    rng = np.random.default_rng(4)
    out = []
    for n, n_all, noise, bias in ((40, 400, 0.1, 0.1), (15, 60, 0.3, -0.2), (100, 2000, 0.05, 0.0)):
        truth = rng.beta(2, 3, size=n_all)
        judge = truth + bias + rng.normal(0, noise, size=n_all)
        drawn = rng.choice(n_all, size=n, replace=False)
        out.append((truth[drawn], judge[drawn], judge))
    return out


def _ours(y: FloatArray, yhat: FloatArray, unlabeled: FloatArray, **kw: float) -> Corrections:
    return judge_corrected(unlabeled[:, None], y[:, None], yhat[:, None], **kw)


def _ppi_variance_terms(
    y: FloatArray, yhat: FloatArray, unlabeled: FloatArray, lam: float, alpha: float
) -> tuple[float, float]:
    """The two variance terms of ppi_py's interval, read off its output: the whole from
    its interval's half-width, the draw's term from an interval whose population term is
    0 (a constant judge on the population), the population's term as the rest."""
    z = stats.norm.ppf(1 - alpha / 2)
    lo, hi = ppi_mean_ci(y, yhat, unlabeled, alpha=alpha, lam=lam)
    total = (float(np.squeeze(hi - lo)) / (2 * z)) ** 2
    lo0, hi0 = ppi_mean_ci(y, yhat, np.full_like(unlabeled, 0.5), alpha=alpha, lam=lam)
    drawn = (float(np.squeeze(hi0 - lo0)) / (2 * z)) ** 2
    return drawn, total - drawn


def test_a_fixed_weight_matches_ppi_py_up_to_sample_variances() -> None:
    """With lam given, the point estimate is ppi_py's exactly. Its interval uses
    population variances (n and n_all in the denominators), ours sample variances (n - 1
    and n_all - 1, as the spec and raglabel's answer criteria): each variance term of
    ours is ppi_py's times n / (n - 1), resp. n_all / (n_all - 1)."""
    for y, yhat, unlabeled in _datasets():
        n, n_all = y.size, unlabeled.size
        for lam in (0.0, 0.4, 1.0):
            got = _ours(y, yhat, unlabeled, lam=lam, level=0.9).column(0)
            assert got.corrected is not None
            want = float(np.squeeze(ppi_mean_pointestimate(y, yhat, unlabeled, lam=lam)))
            assert got.corrected.mean == pytest.approx(want, abs=1e-12)
            drawn, population = _ppi_variance_terms(y, yhat, unlabeled, lam, alpha=0.1)
            expected = drawn * n / (n - 1) + population * n_all / (n_all - 1)
            assert got.corrected.se**2 == pytest.approx(expected, rel=1e-9)
            # And the sample-variance correction is not negligible: the two differ.
            assert got.corrected.se**2 != pytest.approx(drawn + population, rel=1e-4)


def test_the_tuned_weight_matches_ppi_py_up_to_its_moments() -> None:
    """ppi_py tunes lam as cov(h, g) / ((1 + n / n_all) var(g)) too, with two different
    moments: the covariance over n (not n - 1), and var(g) over the draw's and the
    population's judge values pooled (with n + n_all - 1) rather than the draw's alone.
    Its weight is read off its point estimate, which is linear in lam; ours is that
    weight converted by those two ratios, both clipped to [0, 1]."""
    for y, yhat, unlabeled in _datasets():
        n = y.size
        theirs_estimate = float(np.squeeze(ppi_mean_pointestimate(y, yhat, unlabeled)))
        theirs = (theirs_estimate - y.mean()) / (unlabeled.mean() - yhat.mean())
        assert 0.0 < theirs < 1.0  # the datasets are chosen so that neither clips
        pooled = np.var(np.concatenate([yhat, unlabeled]), ddof=1)
        converted = theirs * n / (n - 1) * pooled / np.var(yhat, ddof=1)
        got = _ours(y, yhat, unlabeled).column(0)
        assert got.lam == pytest.approx(min(converted, 1.0), rel=1e-9)
        # With ppi_py's weight given, the two estimates are one.
        same = _ours(y, yhat, unlabeled, lam=theirs).column(0).corrected
        assert same is not None and same.mean == pytest.approx(theirs_estimate, abs=1e-12)
    # Both clip at 0 a judge that gets people backwards.
    y, yhat, unlabeled = _datasets()[0]
    theirs_estimate = float(np.squeeze(ppi_mean_pointestimate(y, -yhat, -unlabeled)))
    assert theirs_estimate == pytest.approx(y.mean(), abs=1e-12)
    assert _ours(y, -yhat, -unlabeled).column(0).lam == 0.0


# --- queries to settle -----------------------------------------------------------------


def plain_queries_to_settle(
    f: FloatArray, h: FloatArray, g: FloatArray, got: Corrections, j: int
) -> int | None:
    """Search m = 0, 1, ... up to the undrawn queries for the first number of further
    drawn queries whose interval excludes 0, with the effect, lam, var(h - lam g) and
    var(f) held as estimated (computed here from the data)."""
    column = got.column(j)
    assert column.corrected is not None and column.lam is not None
    theta, lam = column.corrected.mean, column.lam
    n, n_all = h.shape[0], f.shape[0]
    residual_var = statistics.variance((h[:, j] - lam * g[:, j]).tolist())
    judge_term = lam**2 * statistics.variance(f[:, j].tolist()) / n_all
    z = statistics.NormalDist().inv_cdf(0.5 + got.level / 2)
    if theta == 0:
        return None
    for more in range(n_all - n + 1):
        if abs(theta) > z * math.sqrt(residual_var / (n + more) + judge_term):
            return more
    return None


def test_queries_to_settle_is_the_least_number_that_excludes_0() -> None:
    rng = np.random.default_rng(5)
    n_all, n = 500, 20
    spread = rng.normal(0, 0.2, size=(n_all, 1))
    # Centred on the draw and on the rest apart, so that each column's effect is its shift.
    spread[:n] -= spread[:n].mean()
    spread[n:] -= spread[n:].mean()
    # Per-query differences with growing effects, the last one clear already.
    f = np.concatenate([spread + shift for shift in (0.01, 0.04, 0.08, 0.5)], axis=1)
    noise = rng.normal(0, 0.3, size=(n, 4))
    h = f[:n] + noise - noise.mean(axis=0)
    got = judge_corrected(f, h, f[:n])
    settles = [got.column(j).queries_to_settle for j in range(4)]
    for j in range(4):
        assert settles[j] == plain_queries_to_settle(f, h, f[:n], got, j), j
    assert settles[3] == 0
    assert sum(s is not None and 0 < s <= n_all - n for s in settles) >= 2, settles
    # With only 5 undrawn queries left, the small effects cannot be settled.
    few = judge_corrected(f[: n + 5], h, f[:n])
    for j in range(3):
        assert few.column(j).queries_to_settle == plain_queries_to_settle(
            f[: n + 5], h, f[:n], few, j
        )
    assert [few.column(j).queries_to_settle for j in range(3)] == [None, None, None]
    # An effect of exactly 0 never settles (dyadic values: their mean is exactly 0).
    flat = rng.normal(0, 1, size=(n_all, 1))
    zero_h = np.tile([0.25, -0.25, 0.5, -0.5], n // 4)[:, None]
    zero = judge_corrected(flat, zero_h, flat[:n], lam=0.0).column(0)
    assert zero.corrected is not None and zero.corrected.mean == 0.0
    assert zero.queries_to_settle is None and zero.p_value == 1.0


# --- validity by simulation --------------------------------------------------------------


@dataclass(frozen=True)
class Population:
    """People's and a judge's per-query metric for runs A and B and their difference B - A
    (columns 0, 1, 2), over every query of the population."""

    human: FloatArray
    judge: FloatArray

    @property
    def truth(self) -> FloatArray:
        return self.human.mean(axis=0)


def population(shared: float, own: float, seed: int) -> Population:
    """People's metric in [0, 1] with B better than A by about 0.04; the judge's is
    people's, overrated by ``OVERRATE`` (B's by ``FAVOUR_B`` more), with per-query error
    of which ``shared`` (sd) hits both runs alike and ``own`` each run apart."""
    rng = np.random.default_rng(seed)
    a = rng.beta(2, 3, size=POPULATION)
    b = np.clip(a + 0.04 + rng.normal(0, 0.12, size=POPULATION), 0, 1)
    # Errors centred, so that the judge's bias is exactly the one named.
    common, own_a, own_b = (
        x - x.mean() for x in rng.normal(0, [[shared], [own], [own]], size=(3, POPULATION))
    )
    judge_a = a + OVERRATE + common + own_a
    judge_b = b + OVERRATE + FAVOUR_B + common + own_b
    human = np.stack([a, b, b - a], axis=1)
    return Population(human, np.stack([judge_a, judge_b, judge_b - judge_a], axis=1))


def pure_noise(seed: int) -> Population:
    """The same people, and a judge whose values have nothing to do with theirs."""
    people = population(0.0, 0.0, seed).human
    rng = np.random.default_rng(seed + 1)
    judge = rng.uniform(0, 1, size=(POPULATION, 2))
    return Population(people, np.column_stack([judge, judge[:, 1] - judge[:, 0]]))


@dataclass(frozen=True)
class Draws:
    """The estimates of ``DRAWS`` draws at once: (draws, 3) arrays, one column per figure."""

    corrected: Corrections
    truth: FloatArray

    def covered(self) -> FloatArray:
        est = self.corrected.corrected
        inside = (est.low <= self.truth) & (self.truth <= est.high)
        return inside.reshape(DRAWS, 3).mean(axis=0)

    def width_ratio(self) -> FloatArray:
        corrected = self.corrected.corrected.high - self.corrected.corrected.low
        human = self.corrected.human_only.high - self.corrected.human_only.low
        return (corrected / human).reshape(DRAWS, 3)


def draw(pop: Population, seed: int) -> Draws:
    """``DRAWS`` uniform draws of ``DRAWN`` queries without replacement, as columns of one
    call: draw d's three figures are columns 3d, 3d + 1 and 3d + 2."""
    rng = np.random.default_rng(seed)
    picks = np.argsort(rng.random((DRAWS, POPULATION)), axis=1)[:, :DRAWN]  # (draws, n)
    h = pop.human[picks].transpose(1, 0, 2).reshape(DRAWN, DRAWS * 3)
    g = pop.judge[picks].transpose(1, 0, 2).reshape(DRAWN, DRAWS * 3)
    f = np.tile(pop.judge, (1, DRAWS))
    return Draws(judge_corrected(f, h, g), np.tile(pop.truth, DRAWS))


def correlations(pop: Population) -> list[float]:
    return [float(np.corrcoef(pop.human[:, j], pop.judge[:, j])[0, 1]) for j in range(3)]


#: Judges by (shared, own) error sd: one correlating with people at just over 0.5 on
#: every figure (both runs and their difference), and a better one.
JUDGES = {"fair": (0.28, 0.14), "good": (0.08, 0.05)}


@pytest.mark.parametrize("judge", sorted(JUDGES))
def test_a_biased_judge_is_corrected_and_narrows_the_interval(judge: str) -> None:
    pop = population(*JUDGES[judge], seed=29)
    rho = correlations(pop)
    assert min(rho) >= 0.5, rho
    if judge == "fair":
        assert max(rho) < 0.65, rho  # the claim's edge, not a comfortable margin
    # The judge is biased: its own figures, over the whole population, miss the truth.
    judge_only = judge_corrected(pop.judge, pop.human[:DRAWN], pop.judge[:DRAWN]).judge_only
    assert np.all((judge_only.low > pop.truth) | (judge_only.high < pop.truth))
    bias = pop.judge.mean(axis=0) - pop.truth
    assert bias == pytest.approx([OVERRATE, OVERRATE + FAVOUR_B, FAVOUR_B], abs=1e-12)

    draws = draw(pop, seed=290)
    assert np.all(draws.covered() >= 0.93), draws.covered()
    # Narrower than people's alone on every draw where the judge got any weight, and
    # never wider (lam = 0 is people's figure itself).
    ratio = draws.width_ratio()
    weighted = draws.corrected.lam.reshape(DRAWS, 3) > 0
    assert np.all(ratio[weighted] < 1.0)
    assert np.all(ratio <= 1.0 + 1e-12)
    assert weighted.mean() > 0.99
    assert np.all(ratio.mean(axis=0) < (0.95 if judge == "fair" else 0.6))


def test_a_pure_noise_judge_costs_at_most_a_tenth_of_the_width() -> None:
    pop = pure_noise(seed=31)
    assert max(abs(r) for r in correlations(pop)) < 0.1
    draws = draw(pop, seed=310)
    assert np.all(draws.covered() >= 0.93), draws.covered()
    ratio = draws.width_ratio()
    assert np.all(np.abs(ratio.mean(axis=0) - 1.0) <= 0.10), ratio.mean(axis=0)
    # Draw by draw too, but for the odd draw where chance correlation gives the noise
    # some weight (the interval then narrows, as it validly may).
    assert np.all(ratio <= 1.10)
    assert (np.abs(ratio - 1.0) <= 0.10).mean() >= 0.99


def test_a_thousand_draws_of_three_figures_take_one_call() -> None:
    """Vectorised over columns: the simulation above is one call of 3,000 columns, and
    each column's figure is the one a call for that column alone gives."""
    pop = population(*JUDGES["fair"], seed=29)
    draws = draw(pop, seed=290)
    rng = np.random.default_rng(290)
    picks = np.argsort(rng.random((DRAWS, POPULATION)), axis=1)[:, :DRAWN]
    for d in (0, 517, DRAWS - 1):
        alone = judge_corrected(pop.judge, pop.human[picks[d]], pop.judge[picks[d]])
        for j in range(3):
            assert _numbers(alone.column(j)) == pytest.approx(
                _numbers(draws.corrected.column(3 * d + j)), rel=1e-12
            )


def _numbers(column: Correction) -> list[float]:
    corrected = column.corrected
    assert corrected is not None and column.lam is not None and column.p_value is not None
    settle = column.queries_to_settle
    return [
        corrected.mean,
        *corrected.ci,
        corrected.queries,
        column.lam,
        column.p_value,
        -1 if settle is None else settle,
    ]


def test_no_standard_error_gives_no_p_value() -> None:
    """Values that do not vary give se = 0: a p of 0 there would enter Holm's or BH's
    family as a finding, so there is none, and the comparison stays out of the family."""
    f = np.full((40, 2), 0.5)
    h = np.tile([0.7, 0.0], (12, 1))  # a constant nonzero mean, and a constant 0
    column, zero = (judge_corrected(f, h, f[:12]).column(j) for j in (0, 1))
    for one, mean in ((column, 0.7), (zero, 0.0)):
        # 0, or rounding's near 0: the mean of twelve 0.7s is 0.7000000000000001.
        assert one.corrected is not None and one.corrected.se < 1e-15
        assert one.corrected.mean == pytest.approx(mean)
        assert one.p_value is None


def test_an_interval_of_rounding_width_shows_no_spread_as_one_of_none() -> None:
    """The "no spread" note and the missing p-value follow one rule: twelve 0.7s leave
    an interval a few 1e-17 wide, which is no spread, exactly as twelve 0s' interval of
    no width; values that vary by 1e-9 do spread."""
    f = np.full((40, 3), 0.5)
    h = np.tile([0.7, 0.0, 0.3], (12, 1))
    h[::2, 2] += 1e-9
    rounding, exact, varying = (judge_corrected(f, h, f[:12]).column(j) for j in (0, 1, 2))
    assert rounding.corrected is not None and exact.corrected is not None
    assert rounding.corrected.ci[0] != rounding.corrected.ci[1]  # rounding's width
    assert exact.corrected.ci[0] == exact.corrected.ci[1]
    assert rounding.corrected.no_spread and exact.corrected.no_spread
    assert varying.corrected is not None and not varying.corrected.no_spread
    assert varying.p_value is not None
