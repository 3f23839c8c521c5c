"""The labeled slice of each query, reduced to what every metric needs: grade counts."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from raglabel.metrics.record import FrozenRecord


# Compared and hashed by identity: its arrays compare element-wise, so a field-by-field
# __eq__ could only raise. A hand-written record, not a dataclass, so that no code is
# generated and compiled for it at every eval's start-up.
class LabelSet(FrozenRecord):
    """Grade counts per query.

    ``counts[q, g]`` is the number of passages with resolved grade ``g`` (1..5) for
    query ``q``; column 0 is unused so that a grade indexes its own column. Metrics
    never need passage identities of the slice: oracle gains and ideal DCG follow
    from the counts, because every passage of a grade weighs the same.
    """

    __slots__ = ("counts", "query_ids")

    query_ids: tuple[str, ...]
    counts: NDArray[np.int64]

    def __init__(self, query_ids: tuple[str, ...], counts: NDArray[np.int64]) -> None:
        object.__setattr__(self, "query_ids", query_ids)
        object.__setattr__(self, "counts", counts)
        if self.counts.shape != (len(self.query_ids), 6):
            raise ValueError(
                f"counts must have shape ({len(self.query_ids)}, 6), got {self.counts.shape}"
            )
        if (self.counts < 0).any():
            raise ValueError("grade counts must not be negative")

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    @property
    def n_graded(self) -> int:
        return int(self.counts.sum())


def counts_from_grades(
    n_queries: int, qidx: NDArray[np.integer], grades: NDArray[np.integer]
) -> NDArray[np.int64]:
    """Histogram of grades per query (grade 0 = unjudged lands in column 0)."""
    flat = np.bincount(qidx.astype(np.int64) * 6 + grades.astype(np.int64), minlength=n_queries * 6)
    return flat.reshape(n_queries, 6).astype(np.int64)
