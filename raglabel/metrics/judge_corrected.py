"""Judge-corrected means: prediction-powered inference with PPI++'s power tuning.

The setting. A judge labelled every query of a population (n_all queries), people
labelled a uniformly random draw of n of them. For one metric of one run:

- f: the metric on judge labels, for every query of the population (n_all values);
- h, g: the metric on people's and on judge labels, for the n drawn queries, paired
  (g is f on the drawn queries: the caller passes it so that many draws or columns can
  share one call);
- the target is the mean of h over the population, which no one measured.

The judge's mean of f is biased wherever the judge is; mean(h - g) over the draw measures
that bias without bias, so with a weight lam in [0, 1]

    estimate = lam * mean(f) + mean(h - lam * g)

is unbiased for any fixed lam (tuning lam on the same draw, below, adds a bias of order
1 / n; the simulation tests check that the intervals still cover). Its standard error
treats the two means as independent:

    se = sqrt(var(h - lam * g) / n + lam^2 * var(f) / n_all)

and the interval is estimate +- z * se, z the normal quantile of the level (1.959964 at
0.95); the two-sided p-value of "the true value is 0" is 2 * (1 - Phi(|estimate| / se)).
Every variance and covariance is a sample one (n - 1 in the denominator).

lam is PPI++'s power-tuned choice (Angelopoulos, Duchi and Zrnic, 2023):
cov(h, g) / ((1 + n / n_all) * var(g)), both over the drawn queries, clipped to [0, 1];
it minimises se exactly when var(f) over the population equals var(g) over the draw,
and nearly otherwise. A judge worth nothing gets lam near 0 and the figure is
people's mean; a judge that tracks people gets lam near 1 and the interval narrows. When
the judge gives every drawn query the same value, var(g) = 0 says nothing about how it
tracks people: lam is 0 and ``constant_judge`` says so.

A paired difference between run A and a baseline B is the same estimator over the
per-query differences f_A - f_B, h_A - h_B and g_A - g_B, as columns of their own.

Undefined values (NaN: the metric does not apply to the query, e.g. MRR where the labels
hold no relevant passage) are left out per column and counted, never averaged in: a
population query enters mean(f) and var(f) when f is defined there; a drawn query enters
everything over the draw (mean(h - lam g), the variances, cov(h, g), the count n) only
when both h and g are defined there. The estimate then stands for the mean of h over the
queries where the metric is defined; that holds when the metric is undefined on the same
queries under both labellings, or when the queries left out do not differ from the others
in the quantity estimated.

Fewer than ``MIN_DRAWN`` (10) drawn queries are refused outright (:class:`TooFewDrawnError`);
a column with fewer than ``min_drawn`` defined pairs among them has no corrected figure.

Beside the corrected figure stand the judge-only one (mean of f, interval over the n_all
queries) and the human-only one (mean of h, interval over the drawn queries where h is
defined), each mean +- z * sd / sqrt(count).

How this differs from the reference implementation, ``ppi_py`` (``ppi_mean_pointestimate``
and ``ppi_mean_ci``; tests/unit/test_corrected_estimate.py checks both agreements and
differences):

- lam: ``ppi_py`` divides a covariance with n in the denominator by the variance of
  the judge's values over the draw and the unlabelled set pooled (n + n_all - 1 in the
  denominator); here both are sample moments over the draw, as the spec decides. The
  factor (1 + n / n_all) and the clipping to [0, 1] are the same (``ppi_mean_pval``
  does not clip).
- se: ``ppi_py`` uses population variances (n and n_all in the denominators), here
  sample variances (n - 1, n_all - 1), as raglabel's answer criteria always did.
- Both use the normal quantile, not Student's t.

PPI's model has the labelled and the unlabelled queries apart, both drawn from an endless
supply, hence the judge's term in se. Here the drawn queries are part of the population
and the target is its own mean, so for a fixed lam the estimate's error is the draw's
mean of h - lam * f less the population's, whose variance is (1 - n / n_all) times
var(h - lam f) / n (sampling without replacement). The spec's se is larger on both
counts (no finite-population factor, and the judge's term), so the interval errs on the
wide side: in the tests' simulation, a judge that correlates with people at about 0.9
gives 95% intervals that cover the truth 97% to 98% of the time.

How many more queries would settle a paired difference (``queries_to_settle``): with
the effect, lam, var(h - lam g) and lam^2 var(f) / n_all held as estimated, the interval
at n + m drawn queries excludes 0 when z^2 (var(h - lam g) / (n + m) +
lam^2 var(f) / n_all) < estimate^2, so m is the least number for which that holds: 0 if
it holds already, none when the estimate is 0 or no m up to the undrawn queries does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

#: The corrected estimate is refused with fewer complete drawn queries than this.
MIN_DRAWN = 10
LEVEL = 0.95
#: ``Corrections.queries_to_settle``'s value where no number of queries would settle.
NEVER = -1


class TooFewDrawnError(ValueError):
    """Fewer complete drawn queries than the corrected estimate needs."""

    def __init__(self, complete: int, needed: int) -> None:
        self.complete = complete
        self.needed = needed
        super().__init__(
            f"only {complete} complete drawn {'query' if complete == 1 else 'queries'}: "
            f"the judge-corrected estimate needs at least {needed}"
        )


@dataclass(frozen=True)
class Estimate:
    """A mean with its normal interval, for one column."""

    mean: float
    ci: tuple[float, float]
    """mean +- z * se at the level asked for."""
    se: float
    """The standard error the interval is built on."""
    queries: int
    """Queries the mean is over (for the corrected figure: the drawn queries with both
    values defined, n)."""

    @property
    def no_spread(self) -> bool:
        """The values under it do not vary (its standard error is 0 up to rounding), so
        its interval has no width: that shows no spread, not certainty."""
        return without_spread(self.mean, self.se)


@dataclass(frozen=True)
class Estimates:
    """Means of k columns with their normal intervals: arrays of shape (k,), NaN where a
    column has no figure (``queries`` then says how few values it had)."""

    mean: FloatArray
    low: FloatArray
    high: FloatArray
    se: FloatArray
    queries: IntArray

    def column(self, j: int) -> Estimate | None:
        """Column j as plain Python numbers, None when it has no figure."""
        mean = float(self.mean[j])
        if math.isnan(mean) or math.isnan(float(self.se[j])):
            return None
        return Estimate(
            mean, (float(self.low[j]), float(self.high[j])), float(self.se[j]), int(self.queries[j])
        )


@dataclass(frozen=True)
class Correction:
    """Everything the judge-corrected estimate says of one column (a run's metric, or a
    paired difference)."""

    corrected: Estimate | None
    """The prediction-powered estimate; None when fewer than the minimum drawn queries
    have both values defined for this column (``drawn_undefined`` says how many lack one)."""
    lam: float | None
    """The weight of the judge, in [0, 1] (tuned, or as given); None with ``corrected``."""
    constant_judge: bool
    """The judge gave every drawn query the same value, so tuning set ``lam`` to 0."""
    p_value: float | None
    """Two-sided normal p-value of "the true value is 0" (for a paired difference: no
    difference); None with ``corrected``, and when its standard error is 0: values that
    do not vary test nothing, so the comparison stays out of a multiple-testing family."""
    queries_to_settle: int | None
    """For a paired difference: how many more complete drawn queries would likely make
    the interval exclude 0, if the effect and the variances stay as estimated; 0 when it
    already does; None when the effect is exactly 0, when even drawing every undrawn
    query would not do, or with ``corrected``. (For a plain mean the same number answers
    "is it above 0", which is seldom a question.)"""
    judge_only: Estimate | None
    """The mean of f over the population with its classical interval (None with fewer
    than 2 defined values)."""
    human_only: Estimate | None
    """The mean of h over the drawn queries where it is defined, with its classical
    interval (None with fewer than 2)."""
    drawn_undefined: int
    """Drawn queries left out of this column because h or g is undefined there."""
    population_undefined: int
    """Population queries left out of mean(f) because f is undefined there."""


@dataclass(frozen=True)
class Corrections:
    """The judge-corrected estimate of k columns at once; every array has shape (k,)."""

    corrected: Estimates
    """The prediction-powered estimates (``queries``: n, the pairs used)."""
    judge_only: Estimates
    """Mean of f per column (``queries``: n_all, its defined values)."""
    human_only: Estimates
    """Mean of h per column (``queries``: the drawn queries where h is defined)."""
    lam: FloatArray
    """The judge's weight per column, NaN where there is no corrected figure."""
    constant_judge: BoolArray
    """As :attr:`Correction.constant_judge`, per column."""
    p_value: FloatArray
    """As :attr:`Correction.p_value`, NaN for None."""
    queries_to_settle: IntArray
    """As :attr:`Correction.queries_to_settle`, with ``NEVER`` (-1) for None."""
    drawn_undefined: IntArray
    """As :attr:`Correction.drawn_undefined`, per column."""
    population_undefined: IntArray
    """As :attr:`Correction.population_undefined`, per column."""
    level: float
    """The intervals' level (0.95: 95%)."""

    def column(self, j: int) -> Correction:
        """Column j as plain Python numbers (None for undefined), for a report."""
        corrected = self.corrected.column(j)
        settle = int(self.queries_to_settle[j])
        p = float(self.p_value[j])
        return Correction(
            corrected=corrected,
            lam=None if corrected is None else float(self.lam[j]),
            constant_judge=bool(self.constant_judge[j]),
            p_value=None if corrected is None or math.isnan(p) else p,
            queries_to_settle=None if settle == NEVER else settle,
            judge_only=self.judge_only.column(j),
            human_only=self.human_only.column(j),
            drawn_undefined=int(self.drawn_undefined[j]),
            population_undefined=int(self.population_undefined[j]),
        )


def normal_quantile(level: float) -> float:
    """z such that a normal variable lies within +-z of its mean with probability
    ``level`` (1.959964 at 0.95)."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    # Imported here: only intervals of this kind need it, and an evaluation that shows
    # none should not pay for statistics' imports (fractions, decimal).
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + level / 2.0)


def judge_corrected(
    f: FloatArray,
    h: FloatArray,
    g: FloatArray,
    *,
    level: float = LEVEL,
    lam: float | None = None,
    min_drawn: int = MIN_DRAWN,
) -> Corrections:
    """The judge-corrected estimate of every column (see the module's docstring).

    ``f`` has shape (n_all, k): column j's metric on judge labels for every population
    query; ``h`` and ``g`` have shape (n, k): its metric on people's and on judge labels
    for the n complete drawn queries, row i of both for the same query. NaN marks a value
    that is undefined. ``lam``: None tunes the weight per column (PPI++), a number in
    [0, 1] fixes it for every column (1 is classic prediction-powered inference, 0 is
    people's mean alone). Raises :class:`TooFewDrawnError` when n < ``min_drawn``.

    Every run's metrics and every paired difference can go in one call, side by side as
    columns: a difference of run A against the baseline B is the column f_A - f_B in
    ``f``, h_A - h_B in ``h`` and g_A - g_B in ``g`` (NaN wherever either run's is).
    """
    f, h, g = (np.asarray(x, dtype=np.float64) for x in (f, h, g))
    if f.ndim != 2 or h.ndim != 2 or g.ndim != 2:
        raise ValueError(
            f"f, h and g must be 2-D (queries, columns); got {f.shape}, {h.shape}, {g.shape}"
        )
    if h.shape != g.shape:
        raise ValueError(f"h and g must pair the same queries: shapes {h.shape} and {g.shape}")
    if f.shape[1] != h.shape[1]:
        raise ValueError(f"f has {f.shape[1]} columns but h and g have {h.shape[1]}")
    if f.shape[0] < h.shape[0]:
        raise ValueError(
            f"the population (f: {f.shape[0]} queries) is smaller than the draw ({h.shape[0]})"
        )
    if lam is not None and not 0.0 <= lam <= 1.0:
        raise ValueError(f"lam must be in [0, 1], got {lam}")
    if min_drawn < 2:
        raise ValueError(f"min_drawn must be at least 2 (a variance needs two), got {min_drawn}")
    if h.shape[0] < min_drawn:
        raise TooFewDrawnError(h.shape[0], min_drawn)
    z = normal_quantile(level)

    pair_ok = ~np.isnan(h) & ~np.isnan(g)
    fm = _moments(f, ~np.isnan(f))
    hm = _moments(h, pair_ok)
    gm = _moments(g, pair_ok)
    n, n_all = hm.count, fm.count
    h_dev = np.where(pair_ok, h - hm.mean, 0.0)
    g_dev = np.where(pair_ok, g - gm.mean, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = np.einsum("ij,ij->j", h_dev, g_dev) / (n - 1)
        # Exactly constant, not "variance below some epsilon": a constant column's
        # variance computed through its mean can come out a hair above 0.
        constant = _spread(g, pair_ok) == 0.0
        if lam is None:
            tuned = cov / ((1.0 + n / n_all) * gm.var)
            weight = np.where(constant, 0.0, np.clip(tuned, 0.0, 1.0))
        else:
            weight = np.full(f.shape[1], float(lam))
            constant = np.zeros(f.shape[1], dtype=np.bool_)
        # The residual h - lam g itself rather than its variance expanded through
        # cov(h, g): a judge close to people would lose digits to cancellation.
        em = _moments(h - weight * g, pair_ok)
        judge_term = weight**2 * fm.var / n_all
        estimate = weight * fm.mean + em.mean
        se = np.sqrt(em.var / n + judge_term)
    usable = (n >= min_drawn) & (n_all >= 2)
    estimate = np.where(usable, estimate, np.nan)
    se = np.where(usable, se, np.nan)
    weight = np.where(usable, weight, np.nan)

    settle = _queries_to_settle(estimate, em.var, judge_term, n, z, undrawn=f.shape[0] - h.shape[0])
    return Corrections(
        corrected=Estimates(estimate, estimate - z * se, estimate + z * se, se, n),
        judge_only=_classical(fm, z),
        human_only=_classical(_moments(h, ~np.isnan(h)), z),
        lam=weight,
        constant_judge=constant & usable,
        p_value=_two_sided_p(estimate, se),
        queries_to_settle=settle,
        drawn_undefined=h.shape[0] - n,
        population_undefined=f.shape[0] - n_all,
        level=level,
    )


@dataclass(frozen=True)
class _Moments:
    """Per column: how many values a mask keeps, their mean and sample variance (NaN
    where there are too few)."""

    count: IntArray
    mean: FloatArray
    var: FloatArray


def _moments(x: FloatArray, ok: BoolArray) -> _Moments:
    """The moments of the values ``ok`` keeps, in two passes (the variance from the
    deviations, not from the sum of squares, which loses digits)."""
    count: IntArray = ok.sum(axis=0).astype(np.int64)
    dev = np.where(ok, x, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = dev.sum(axis=0) / count
        dev -= mean
        dev[~ok] = 0.0
        var = np.einsum("ij,ij->j", dev, dev) / (count - 1)
    return _Moments(count, mean, np.where(count >= 2, var, np.nan))


def _spread(x: FloatArray, ok: BoolArray) -> FloatArray:
    """Per column: the largest kept value minus the smallest (NaN with none kept)."""
    top = np.where(ok, x, -np.inf).max(axis=0, initial=-np.inf)
    bottom = np.where(ok, x, np.inf).min(axis=0, initial=np.inf)
    with np.errstate(invalid="ignore"):
        spread: FloatArray = np.where(ok.any(axis=0), top - bottom, np.nan)
    return spread


def _classical(m: _Moments, z: float) -> Estimates:
    """Mean +- z * sd / sqrt(count) per column."""
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt(m.var / m.count)
    mean = np.where(m.count >= 2, m.mean, np.nan)
    return Estimates(mean, mean - z * se, mean + z * se, se, m.count)


#: A standard error this small relative to its estimate is rounding, not spread.
_ROUNDING = 64 * float(np.finfo(np.float64).eps)


def without_spread(estimate: float, se: float) -> bool:
    """se is 0 up to rounding: the mean of twelve 0.7s is 0.7000000000000001, which
    leaves an se near 3e-17. The bound, 64 machine epsilons of the estimate's size (at
    least 1), is far below any se of values that really vary: a metric's values lie in
    [0, 1] or [0, 100] and differ by far more than 1e-13."""
    return se <= _ROUNDING * max(abs(estimate), 1.0)


def _two_sided_p(estimate: FloatArray, se: FloatArray) -> FloatArray:
    """2 * (1 - Phi(|estimate| / se)) = erfc(|estimate| / (se * sqrt 2)); NaN where the
    estimate is, and where se is 0: values that do not vary give no test (a p of 0
    there would count as a finding in Holm's or Benjamini-Hochberg's family), up to
    rounding (:func:`without_spread`)."""
    out = np.full(estimate.shape, np.nan)
    for j, (value, error) in enumerate(zip(estimate.tolist(), se.tolist(), strict=True)):
        if math.isnan(value) or math.isnan(error) or without_spread(value, error):
            continue
        out[j] = math.erfc(abs(value) / (error * math.sqrt(2.0)))
    return out


def _queries_to_settle(
    estimate: FloatArray,
    e_var: FloatArray,
    judge_term: FloatArray,
    n: IntArray,
    z: float,
    *,
    undrawn: int,
) -> IntArray:
    """How many more drawn queries m make the interval exclude 0, per column.

    Assumption: the effect (the estimate), var(h - lam g), lam and the judge's term
    lam^2 var(f) / n_all all stay as estimated; only n grows. The interval at n + m
    excludes 0 when z^2 (var(h - lam g) / (n + m) + judge_term) < estimate^2, so with
    D = estimate^2 / z^2 - judge_term > 0 the least total is floor(var(h - lam g) / D) + 1.
    0 when the interval already excludes 0; ``NEVER`` when the estimate is 0 or NaN, when
    D <= 0 (the judge's term alone keeps the interval over 0), or when more queries are
    needed than remain undrawn.
    """
    out = np.full(estimate.shape, NEVER, dtype=np.int64)
    for j, (theta, var, judge, drawn) in enumerate(
        zip(estimate.tolist(), e_var.tolist(), judge_term.tolist(), n.tolist(), strict=True)
    ):
        if math.isnan(theta) or theta == 0.0:
            continue
        if z * z * (var / drawn + judge) < theta * theta:
            out[j] = 0
            continue
        room = theta * theta / (z * z) - judge
        if room <= 0.0:
            continue
        more = max(math.floor(var / room) + 1 - drawn, 1)
        if more <= undrawn:
            out[j] = more
    return out
