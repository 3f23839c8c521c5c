"""Average precision (trec_eval ``map`` / ``map_cut.k``) and R-precision (``Rprec``).

Both read only the relevant entries of a run, located by query and rank; entries are
grouped by query in rank order, so a relevant entry's place among its query's
relevant entries is its index minus the index of the query's first one.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]


def _defined(total: FloatArray, n_rel: NDArray[np.int64]) -> FloatArray:
    out = np.full(total.shape, np.nan)
    np.divide(total, n_rel.astype(np.float64), out=out, where=n_rel > 0)
    return out


def average_precision(
    qidx: NDArray[np.int64], pos: NDArray[np.int64], n_rel: NDArray[np.int64]
) -> FloatArray:
    """Per query: sum of the precision at the rank of each relevant entry given, divided
    by the query's number of relevant passages ``n_rel`` (NA when it is 0).

    ``qidx`` and ``pos`` are the query index and 0-based rank of the relevant entries
    (of the whole run for ``ap``, of the top k for ``ap@k``), grouped by query in rank
    order.
    """
    n = n_rel.size
    per_query = np.bincount(qidx, minlength=n)
    first = np.cumsum(per_query) - per_query
    found = np.arange(qidx.size, dtype=np.int64) - first[qidx] + 1
    precision = found / (pos + 1.0)
    total: FloatArray = np.bincount(qidx, weights=precision, minlength=n).astype(np.float64)
    return _defined(total, n_rel)


def r_precision(
    qidx: NDArray[np.int64], pos: NDArray[np.int64], n_rel: NDArray[np.int64]
) -> FloatArray:
    """Per query: relevant entries among the first R, divided by R = ``n_rel`` (NA when
    it is 0), from the relevant entries' query index and rank. A run shorter than R
    still divides by R, as trec_eval does."""
    within = pos < n_rel[qidx]
    total: FloatArray = np.bincount(qidx[within], minlength=n_rel.size).astype(np.float64)
    return _defined(total, n_rel)
