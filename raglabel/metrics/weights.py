"""Rarity-aware grade weights and oracle gains, per query, as arrays."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from raglabel.metrics.config import GRADES, MetricConfig


def rarity_weights(counts: NDArray[np.int64], config: MetricConfig) -> NDArray[np.float64]:
    """Weight of each grade for each query, shape (n_queries, 6); column 0 (unjudged) is 0.

    r_g = b_g / p_g^alpha with p_g the grade's share of the labeled slice (r_g = 0 when
    p_g = 0); w_5 = 1, w_4 = min(r_4 / r_5, cap4), lower grades min(r_g / r_5, cap3).
    A slice without a grade 5 takes the fallback weights, since r_5 would be 0.
    """
    n_queries = counts.shape[0]
    graded = counts[:, 1:].sum(axis=1).astype(np.float64)
    weights = np.zeros((n_queries, 6), dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = counts.astype(np.float64) / graded[:, None]
        rarity = np.zeros_like(share)
        for g in GRADES:
            present = counts[:, g] > 0
            rarity[present, g] = config.base_utilities[g] / share[present, g] ** config.alpha
        has5 = counts[:, 5] > 0
        r5 = np.where(has5, rarity[:, 5], 1.0)
        weights[:, 5] = 1.0
        weights[:, 4] = np.minimum(rarity[:, 4] / r5, config.cap4)
        for g in (3, 2, 1):
            weights[:, g] = np.minimum(rarity[:, g] / r5, config.cap3)
    fallback = np.array([0.0] + [config.fallback_weights[g] for g in GRADES])
    weights[~has5] = fallback
    return weights


def grade_inversions(counts: NDArray[np.int64], weights: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Queries where a present grade outweighs a present higher grade (w3 > w4, w4 > w5)."""
    flagged = np.zeros(counts.shape[0], dtype=np.bool_)
    for low in (1, 2, 3, 4):
        for high in range(low + 1, 6):
            both = (counts[:, low] > 0) & (counts[:, high] > 0)
            flagged |= both & (weights[:, low] > weights[:, high])
    return flagged


def top_k_gain(
    counts: NDArray[np.int64], values: NDArray[np.float64], k: NDArray[np.int64]
) -> NDArray[np.float64]:
    """Sum of the k largest values when ``counts[q, g]`` passages carry ``values[q, g]``.

    Grades are taken in decreasing value, each contributing as many passages as it has
    (and as the remaining budget allows), so an inverted weight order is honoured.
    """
    order = np.argsort(-values[:, 1:], axis=1, kind="stable") + 1
    rows = np.arange(counts.shape[0])[:, None]
    sorted_counts = counts[rows, order].astype(np.int64)
    sorted_values = values[rows, order]
    before = np.cumsum(sorted_counts, axis=1) - sorted_counts
    taken = np.clip(k[:, None] - before, 0, sorted_counts)
    total: NDArray[np.float64] = (taken * sorted_values).sum(axis=1)
    return total
