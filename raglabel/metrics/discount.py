"""The log2 position discount shared by nDCG and the context-ranking score."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def discount(positions: NDArray[np.int64]) -> NDArray[np.float64]:
    """1 / log2(rank + 1) for 0-based positions."""
    result: NDArray[np.float64] = 1.0 / np.log2(positions.astype(np.float64) + 2.0)
    return result


def ideal_dcg(
    counts: NDArray[np.int64], gains: NDArray[np.float64], k: NDArray[np.int64]
) -> NDArray[np.float64]:
    """DCG of the best ordering of a query's graded passages, cut at k.

    Built from grade counts: the passages of one grade occupy a block of consecutive
    ranks, whose discounts sum to a difference of the cumulative discount table.
    """
    n_queries = counts.shape[0]
    if n_queries == 0:
        return np.zeros(0)
    # Ranks past a query's graded passages add nothing: the discount table never needs
    # more entries than the most graded passages of a query, whatever k asks.
    graded = counts[:, 1:].sum(axis=1)
    k = np.minimum(k, graded)
    limit = int(max(int(k.max(initial=0)), 0))
    table = np.concatenate([[0.0], np.cumsum(discount(np.arange(limit, dtype=np.int64)))])
    order = np.argsort(-gains[:, 1:], axis=1, kind="stable") + 1
    rows = np.arange(n_queries)[:, None]
    sorted_counts = counts[rows, order].astype(np.int64)
    sorted_gains = gains[rows, order]
    end = np.minimum(np.cumsum(sorted_counts, axis=1), k[:, None])
    start = np.minimum(np.cumsum(sorted_counts, axis=1) - sorted_counts, k[:, None])
    block = table[end] - table[start]
    result: NDArray[np.float64] = (block * sorted_gains).sum(axis=1)
    return result
