"""The ranges of an evaluation's resampling settings, checked the same way whichever
door (the command line, the Python API) they came in by."""

from __future__ import annotations

#: Upper bounds of the resampling settings: far beyond any use, below a memory error.
MAX_RESAMPLES = 100_000
MAX_PERMUTATIONS = 100_000_000
#: numpy's generators take seeds below 2**63 - 1.
MAX_SEED = 2**63 - 2


def resampling_problem(
    resamples: int, permutations: int, seed: int, confidence: float
) -> tuple[str, str] | None:
    """The first setting out of its range, as (its name, what it must be), or None.
    Each door names the setting its own way (``--seed`` or ``seed=``)."""
    if not 1 <= resamples <= MAX_RESAMPLES:
        return "resamples", f"must be from 1 to {MAX_RESAMPLES:,}, got {resamples}"
    if not 1 <= permutations <= MAX_PERMUTATIONS:
        return "permutations", f"must be from 1 to {MAX_PERMUTATIONS:,}, got {permutations}"
    if not 0 <= seed <= MAX_SEED:
        return "seed", f"must be from 0 to 2**63 - 2, got {seed}"
    if not 0.0 < confidence < 1.0:
        return "confidence", "must be between 0 and 1, e.g. 0.95"
    return None
