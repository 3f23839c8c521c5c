"""Actual against ideal ranks of a run's top-k, the detail behind ``ctx_rank_prec``."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from raglabel.metrics.run import RankedRun


def ideal_ranks(run: RankedRun, query: int, k: int) -> tuple[NDArray[np.int64], NDArray[np.int8]]:
    """For the query's top-k entries (in run order): each one's 0-based rank in the ideal
    order (by grade, highest first, unjudged last, ties kept in run order), and the grades.
    """
    start = int(run.offsets[query])
    cut = k if run.k_override is None or run.k_override[query] <= 0 else int(run.k_override[query])
    stop = min(int(run.offsets[query + 1]), start + cut)
    grades = run.grades[start:stop]
    order = np.argsort(-grades.astype(np.int64), kind="stable")
    ranks = np.empty(order.size, dtype=np.int64)
    ranks[order] = np.arange(order.size)
    return ranks, grades
