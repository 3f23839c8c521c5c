"""Actual against ideal ranks of a run's top-k, the detail behind ``ctx_rank_prec``."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from raglabel.metrics.run import RankedRun


def passes(score: NDArray[np.float64], threshold: float) -> NDArray[np.bool_]:
    """Whether each ctx_rank_prec score reaches the pass mark (within float rounding)."""
    passed: NDArray[np.bool_] = score >= threshold - 1e-9
    return passed


def ideal_ranks(
    run: RankedRun, query: int, k: int, gains: NDArray[np.float64]
) -> tuple[NDArray[np.int64], NDArray[np.int8]]:
    """For the query's top-k entries (in run order): each one's 0-based rank in the ideal
    order, and the grades. The ideal order is the one the score's ideal DCG assumes:
    by gain (``gains[grade]``), then grade, highest first; unjudged last; ties kept in
    run order.
    """
    start = int(run.offsets[query])
    cut = k if run.k_override is None or run.k_override[query] <= 0 else int(run.k_override[query])
    stop = min(int(run.offsets[query + 1]), start + cut)
    grades = run.grades[start:stop]
    order = np.lexsort((-grades.astype(np.int64), -gains[grades]))
    ranks = np.empty(order.size, dtype=np.int64)
    ranks[order] = np.arange(order.size)
    return ranks, grades
