"""Run scores as trec_eval compares them when it ranks a run.

trec_eval reads each run line's score with ``atof`` into a C ``float``: it ranks by
the 32-bit rounding of the score, so two scores alike to about 7 significant digits
tie there (and are then ordered by passage id). Every place that orders run entries
compares these, never the float64 scores, which are still what is kept and shown.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def trec_scores(scores: NDArray[np.float64]) -> NDArray[np.float32]:
    """``scores`` rounded to nearest 32-bit floats, as C converts a double to a float:
    beyond float32's range they become infinite (numpy's warning about that is the
    conversion working as trec_eval's does, so it is silenced)."""
    with np.errstate(over="ignore"):
        return np.asarray(scores, dtype=np.float64).astype(np.float32)
