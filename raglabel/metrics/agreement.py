"""Agreement between annotators (Krippendorff's alpha, weighted kappa) and between runs'
orderings (Kendall's tau-b).

Grades live on an ordinal 1..5 scale. A statistic that is undefined for its input comes
back as ``None`` rather than NaN, so callers cannot average it in by accident.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

__all__ = [
    "binary_tables",
    "confusion",
    "kendall_tau_b",
    "krippendorff_alpha",
    "mean_difference",
    "table_kappas",
    "tau_b_rows",
    "weighted_kappa",
]


def _vector(x: ArrayLike, name: str) -> FloatArray:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


def _pair(
    a: ArrayLike, b: ArrayLike, names: tuple[str, str] = ("a", "b")
) -> tuple[FloatArray, FloatArray]:
    va = _vector(a, names[0])
    vb = _vector(b, names[1])
    if va.shape != vb.shape:
        raise ValueError(
            f"{names[0]} and {names[1]} must have the same length, got {va.size} and {vb.size}"
        )
    return va, vb


def _category_index(x: FloatArray, cats: FloatArray, name: str) -> IntArray:
    """Position of each value of ``x`` in ``cats`` (which may be in any order)."""
    order = np.argsort(cats, kind="stable")
    sorted_cats = cats[order]
    pos = np.searchsorted(sorted_cats, x)
    clipped = np.minimum(pos, sorted_cats.size - 1)
    found = (pos < sorted_cats.size) & (sorted_cats[clipped] == x)
    if not np.all(found):
        bad = sorted({float(v) for v in x[~found]})
        shown = ", ".join(f"{v:g}" for v in bad[:5])
        raise ValueError(f"{name} has values outside the categories: {shown}")
    index: IntArray = order[clipped].astype(np.int64)
    return index


def _categories(categories: Sequence[float], name: str) -> FloatArray:
    cats = np.asarray(categories, dtype=np.float64)
    if cats.ndim != 1 or cats.size == 0:
        raise ValueError(f"{name} must be a non-empty sequence")
    if not np.all(np.isfinite(cats)):
        raise ValueError(f"{name} must be finite")
    if np.unique(cats).size != cats.size:
        raise ValueError(f"{name} must not repeat a value")
    return cats


def _ordinal_distance(freq: FloatArray) -> FloatArray:
    """Krippendorff's rank-based ordinal metric from the category frequencies.

    ``freq`` is in scale order; delta_ck = (sum_{g=c..k} n_g - (n_c + n_k) / 2) ** 2.
    """
    # With cumulative sums S, sum_{g=c..k} n_g = S[k] - S[c-1] for c <= k, so the whole
    # matrix comes from one outer difference instead of a loop over category pairs.
    cum = np.concatenate(([0.0], np.cumsum(freq)))
    k = freq.size
    lo = np.minimum.outer(np.arange(k), np.arange(k))
    hi = np.maximum.outer(np.arange(k), np.arange(k))
    between = cum[hi + 1] - cum[lo]
    dist: FloatArray = (between - (freq[:, None] + freq[None, :]) / 2.0) ** 2
    return dist


def krippendorff_alpha(
    data: NDArray[np.float64],
    level: Literal["nominal", "ordinal", "interval"] = "ordinal",
    values: Sequence[float] | None = None,
) -> float | None:
    """Krippendorff's alpha for a (raters, units) matrix with NaN for a missing rating.

    Units rated fewer than twice cannot be paired and are left out. ``values`` lists the
    scale's categories (default: the distinct values in ``data``); a value in ``data``
    that is not among them raises ValueError. Categories that never occur change nothing:
    an unused ordinal category has zero frequency, so it adds no rank distance.

    Returns None when fewer than 2 pairable values exist or the expected disagreement is
    0 (every pairable rating is the same category), since alpha is 0/0 there.
    """
    if level not in ("nominal", "ordinal", "interval"):
        raise ValueError(f"unknown level {level!r}; use 'nominal', 'ordinal' or 'interval'")
    mat = np.asarray(data, dtype=np.float64)
    if mat.ndim != 2:
        raise ValueError(f"data must be 2-D (raters, units), got shape {mat.shape}")
    present = ~np.isnan(mat)
    if np.any(np.isinf(mat)):
        raise ValueError("data contains infinite values")

    observed = mat[present]
    if values is None:
        cats = np.unique(observed)
        if cats.size == 0:
            return None
    else:
        cats = np.sort(_categories(values, "values"))
    k = cats.size

    # counts[u, c]: how many raters put unit u in category c.
    unit_of = np.nonzero(present)[1]
    cat_of = _category_index(observed, cats, "data")
    counts = np.zeros((mat.shape[1], k), dtype=np.float64)
    np.add.at(counts, (unit_of, cat_of), 1.0)

    m = counts.sum(axis=1)
    pairable = m >= 2
    counts = counts[pairable]
    m = m[pairable]
    if m.sum() < 2:
        return None

    # Each unit contributes its ordered pairs of distinct ratings, weighted 1 / (m_u - 1)
    # so that every pairable rating carries total weight 1 in the coincidence matrix.
    scaled = counts / (m - 1.0)[:, None]
    coincidence = counts.T @ scaled - np.diag(scaled.sum(axis=0))
    # The coincidence matrix's marginals are exactly these integer counts; taking them
    # from the counts keeps a one-category sample's expected disagreement exactly 0
    # instead of a rounding residue that would turn alpha into noise.
    freq = counts.sum(axis=0)
    n = float(freq.sum())

    if level == "nominal":
        delta = 1.0 - np.eye(k)
    elif level == "interval":
        delta = np.subtract.outer(cats, cats) ** 2
    else:
        delta = _ordinal_distance(freq)

    observed_dis = float((coincidence * delta).sum())
    expected_dis = float(freq @ delta @ freq) / (n - 1.0)
    if expected_dis == 0.0:
        return None
    return 1.0 - observed_dis / expected_dis


def confusion(a: ArrayLike, b: ArrayLike, categories: Sequence[int] = (1, 2, 3, 4, 5)) -> IntArray:
    """Counts of (a's grade, b's grade) pairs: rows follow a, columns follow b.

    Raises ValueError if the lengths differ or a grade is not in ``categories``.
    """
    va, vb = _pair(a, b)
    cats = _categories(categories, "categories")
    ia = _category_index(va, cats, "a")
    ib = _category_index(vb, cats, "b")
    table = np.zeros((cats.size, cats.size), dtype=np.int64)
    np.add.at(table, (ia, ib), 1)
    return table


Weights = Literal["quadratic", "linear", "none"]


def _disagreement_weights(k: int, weights: Weights) -> FloatArray:
    """Disagreement weight of positions i, j on a scale of ``k`` categories."""
    if weights not in ("quadratic", "linear", "none"):
        raise ValueError(f"unknown weights {weights!r}; use 'quadratic', 'linear' or 'none'")
    # max() keeps a one-category scale from dividing by zero; kappa is then undefined anyway.
    span = float(max(k - 1, 1))
    gap = np.abs(np.subtract.outer(np.arange(k), np.arange(k))).astype(np.float64)
    if weights == "quadratic":
        w: FloatArray = (gap / span) ** 2
    elif weights == "linear":
        w = gap / span
    else:
        w = (gap > 0).astype(np.float64)
    return w


def table_kappas(tables: ArrayLike, weights: Weights = "quadratic") -> FloatArray:
    """Cohen's kappa of each count table in a stack of shape (..., K, K), rows one
    rater's category positions and columns the other's: NaN where it is undefined (an
    empty table, or both raters in one and the same category throughout).

    The form :func:`weighted_kappa` computes one table with, and a bootstrap many.
    """
    stack = np.asarray(tables, dtype=np.float64)
    if stack.ndim < 2 or stack.shape[-1] != stack.shape[-2]:
        raise ValueError(f"tables must end in two equal axes (K, K), got shape {stack.shape}")
    w = _disagreement_weights(stack.shape[-1], weights)
    total = stack.sum(axis=(-2, -1))
    rows = stack.sum(axis=-1)
    columns = stack.sum(axis=-2)
    observed_dis = (stack * w).sum(axis=(-2, -1))
    # sum_ij w_ij r_i c_j, divided by total^2 below: the disagreement chance would give.
    expected_dis = np.einsum("...i,ij,...j->...", rows, w, columns)
    with np.errstate(invalid="ignore", divide="ignore"):
        kappas: FloatArray = np.where(
            (total > 0) & (expected_dis > 0),
            1.0 - observed_dis * total / expected_dis,
            np.nan,
        )
    return kappas


def weighted_kappa(
    a: ArrayLike,
    b: ArrayLike,
    categories: Sequence[int] = (1, 2, 3, 4, 5),
    weights: Weights = "quadratic",
) -> float | None:
    """Cohen's kappa between two raters who graded the same items, in the same order.

    Disagreement weights use positions i, j in ``categories`` (listed in scale order):
    quadratic (i - j)^2 / (K - 1)^2, linear |i - j| / (K - 1), none 0/1.
    Raises ValueError if the lengths differ or a grade is not in ``categories``.
    Returns None when there are no items or the expected disagreement is 0 (both raters
    used one and the same category throughout).
    """
    kappa = float(table_kappas(confusion(a, b, categories), weights))
    return None if np.isnan(kappa) else kappa


def binary_tables(tables: ArrayLike, relevant: ArrayLike) -> FloatArray:
    """Each (K, K) count table of a stack folded to (2, 2): position 0 the categories
    that are not ``relevant`` (a boolean per category), 1 those that are. Cohen's kappa
    of the folded table is the binary kappa at a relevance threshold."""
    stack = np.asarray(tables, dtype=np.float64)
    mask = np.asarray(relevant, dtype=bool)
    if mask.ndim != 1 or stack.ndim < 2 or stack.shape[-2:] != (mask.size, mask.size):
        raise ValueError(f"tables of shape {stack.shape} do not fit {mask.size} relevance flags")
    # fold[c, s] = 1 when category c falls on side s; fold^T T fold sums each block.
    fold = np.stack([~mask, mask], axis=1).astype(np.float64)
    folded: FloatArray = np.einsum("ci,...cd,dj->...ij", fold, stack, fold)
    return folded


def tau_b_rows(x: ArrayLike, y: ArrayLike) -> FloatArray:
    """Kendall's tau-b of each row pair of two (R, n) matrices; NaN in either matrix
    leaves that column out of its row, as if the item were not there. NaN where tau is
    undefined (fewer than 2 items left, or all of x, or of y, tied).

    The form :func:`kendall_tau_b` computes one pair with, and a bootstrap many.
    """
    mx = np.atleast_2d(np.asarray(x, dtype=np.float64))
    my = np.atleast_2d(np.asarray(y, dtype=np.float64))
    if mx.shape != my.shape or mx.ndim != 2:
        raise ValueError(f"x and y must be matrices of one shape, got {mx.shape} and {my.shape}")
    n = mx.shape[1]
    first, second = np.triu_indices(n, k=1)
    present = ~(np.isnan(mx) | np.isnan(my))
    both = present[:, first] & present[:, second]
    # A pair with a missing item counts as tied on both sides: it then adds nothing to
    # the score nor to either count of untied pairs, exactly as if it were not there.
    with np.errstate(invalid="ignore"):
        sx = np.where(both, np.sign(mx[:, first] - mx[:, second]), 0.0)
        sy = np.where(both, np.sign(my[:, first] - my[:, second]), 0.0)
    # Pairs tied on x are untied pairs lost from x's side of the normalisation, and
    # likewise for y, which is what makes tau-b reach +-1 in the presence of ties.
    untied_x = np.count_nonzero(sx, axis=1).astype(np.float64)
    untied_y = np.count_nonzero(sy, axis=1).astype(np.float64)
    score = (sx * sy).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        taus: FloatArray = np.where(
            (untied_x > 0) & (untied_y > 0), score / np.sqrt(untied_x * untied_y), np.nan
        )
    return taus


def kendall_tau_b(x: ArrayLike, y: ArrayLike) -> float | None:
    """Kendall's tau-b between two paired score vectors, with the usual tie correction.

    Quadratic in the length, which is meant for a handful of runs, not large samples.
    Raises ValueError if the lengths differ or a value is not finite.
    Returns None when there are fewer than 2 pairs or all of x (or of y) are tied.
    """
    vx, vy = _pair(x, y, ("x", "y"))
    if vx.size < 2:
        return None
    tau = float(tau_b_rows(vx[None, :], vy[None, :])[0])
    return None if np.isnan(tau) else tau


def mean_difference(a: ArrayLike, b: ArrayLike) -> float | None:
    """Mean of a - b, i.e. how much higher rater a grades than rater b on average.

    Raises ValueError if the lengths differ or a value is not finite.
    Returns None when there are no items.
    """
    va, vb = _pair(a, b)
    if va.size == 0:
        return None
    return float(np.mean(va - vb))
