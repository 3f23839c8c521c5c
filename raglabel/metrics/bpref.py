"""bpref, as trec_eval computes it.

For each relevant passage retrieved, with ``m`` judged non-relevant passages ranked
above it: 1 - min(m, R) / min(R, N) (1 when m = 0), summed and divided by R, where R
and N are the query's relevant and judged non-relevant passages. Unjudged entries do
not count. NA when R = 0.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]


def bpref(
    qidx: NDArray[np.int64],
    relevant: NDArray[np.bool_],
    n_rel: NDArray[np.int64],
    n_nonrel: NDArray[np.int64],
) -> FloatArray:
    """Per-query bpref from a run's judged entries only: their query index (grouped by
    query in rank order) and whether each is relevant."""
    n = n_rel.size
    nonrel = ~relevant
    # Judged non-relevant entries before each entry, within its query.
    before = np.concatenate([[0], np.cumsum(nonrel, dtype=np.int64)])
    per_query = np.bincount(qidx, minlength=n)
    first = np.cumsum(per_query) - per_query
    where = np.flatnonzero(relevant)
    q = qidx[where]
    above = before[where] - before[first[q]]
    r = n_rel[q].astype(np.float64)
    den = np.minimum(n_rel[q], n_nonrel[q]).astype(np.float64)
    penalty = np.zeros(where.size)
    np.divide(np.minimum(above, r), den, out=penalty, where=(above > 0) & (den > 0))
    total = np.bincount(q, weights=1.0 - penalty, minlength=n)
    out = np.full(n, np.nan)
    np.divide(total, n_rel.astype(np.float64), out=out, where=n_rel > 0)
    return out
