"""nDCG's two gain conventions, and nDCG over the whole ranking.

``ndcg`` adds each passage's gain from the gain map as it is (linear gain: trec_eval's
``ndcg``, ir_measures' ``nDCG``, ranx's ``ndcg``); ``ndcg_exp`` adds ``2**gain - 1``
(exponential gain, Burges et al. 2005: ranx's ``ndcg_burges``). With the default maps a
TREC label's gain is the label itself, so both equal those tools' numbers on qrels.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from raglabel.metrics.discount import discount, ideal_dcg
from raglabel.metrics.run import RankedRun

FloatArray = NDArray[np.float64]


def exponential(gains: FloatArray) -> FloatArray:
    """``2**g - 1`` for every gain ``g``: a gain of 0 stays 0, 1 stays 1, 3 becomes 7."""
    result: FloatArray = np.exp2(gains) - 1.0
    return result


def whole_ranking(run: RankedRun, counts: NDArray[np.int64], gains: FloatArray) -> FloatArray:
    """Per query: DCG of the whole run / DCG of all its graded passages in the best order.

    ``gains`` holds the gain of grades 0 (unjudged) to 5. Only graded entries can add to
    the DCG, so only they are located, however long the run. A query whose passages all
    have gain 0 scores 0, as it does at a cutoff (and in trec_eval).
    """
    n = run.n_queries
    graded = np.flatnonzero(run.grades)
    qidx, pos = run.locate(graded)
    grade = run.grades[graded].astype(np.int64)
    weights = gains[grade] * discount(pos)
    dcg = np.bincount(qidx, weights=weights, minlength=n).astype(np.float64)
    everything = counts[:, 1:].sum(axis=1).astype(np.int64)
    best = ideal_dcg(counts, np.broadcast_to(gains, (n, gains.size)), everything)
    out = np.zeros(n)
    np.divide(dcg, best, out=out, where=best > 0)
    return out
