"""A system run as arrays: the ranked entries of all queries, back to back."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from raglabel.metrics.record import FrozenRecord


# Compared and hashed by identity: its arrays compare element-wise, so a field-by-field
# __eq__ could only raise. A hand-written record, not a dataclass, so that no code is
# generated and compiled for it at every eval's start-up.
class RankedRun(FrozenRecord):
    """Ranked entries of one run, aligned with a :class:`LabelSet`.

    Query ``q`` owns ``grades[offsets[q]:offsets[q + 1]]`` in rank order (best first).
    A grade of 0 marks an entry nobody graded. ``contains`` says, per entry, whether
    the passage text holds the query's expected answer (``None`` when texts or
    answers are unknown). ``k_override`` pins a query's cutoff (0 = not pinned).
    """

    __slots__ = ("_qidx", "contains", "grades", "k_override", "name", "offsets")

    name: str
    offsets: NDArray[np.int64]
    grades: NDArray[np.int8]
    contains: NDArray[np.bool_] | None
    k_override: NDArray[np.int64] | None
    _qidx: list[NDArray[np.int64]]

    def __init__(
        self,
        name: str,
        offsets: NDArray[np.int64],
        grades: NDArray[np.int8],
        contains: NDArray[np.bool_] | None = None,
        k_override: NDArray[np.int64] | None = None,
    ) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "offsets", offsets)
        object.__setattr__(self, "grades", grades)
        object.__setattr__(self, "contains", contains)
        object.__setattr__(self, "k_override", k_override)
        # The cache of qidx (a list, so that the frozen record can fill it once).
        object.__setattr__(self, "_qidx", [])
        if self.offsets.ndim != 1 or self.offsets.size == 0 or self.offsets[0] != 0:
            raise ValueError("offsets must be a 1-d array starting at 0")
        if self.offsets[-1] != self.grades.size:
            raise ValueError("offsets must end at the number of entries")
        if (np.diff(self.offsets) < 0).any():
            raise ValueError("offsets must not decrease")
        if self.grades.size and (self.grades.min() < 0 or self.grades.max() > 5):
            raise ValueError("entry grades must be 0 (unjudged) or 1..5")
        if self.contains is not None and self.contains.shape != self.grades.shape:
            raise ValueError("contains must have one flag per entry")
        if self.k_override is not None and self.k_override.shape != (self.n_queries,):
            raise ValueError("k_override must have one value per query")

    @property
    def n_queries(self) -> int:
        return int(self.offsets.size - 1)

    @property
    def lengths(self) -> NDArray[np.int64]:
        return np.diff(self.offsets)

    @property
    def qidx(self) -> NDArray[np.int64]:
        """Query index of every entry (computed once, then cached)."""
        if not self._qidx:
            self._qidx.append(np.repeat(np.arange(self.n_queries, dtype=np.int64), self.lengths))
        return self._qidx[0]

    @property
    def positions(self) -> NDArray[np.int64]:
        """0-based rank of every entry within its query."""
        return np.arange(self.grades.size, dtype=np.int64) - self.offsets[self.qidx]

    def head(self, k: int) -> tuple[NDArray[np.int64] | None, NDArray[np.int64], NDArray[np.int64]]:
        """(entries, query index, rank) of the first ``k`` entries of every query, in
        entry order; entries None when that is every entry.

        Built from the per-query counts, so a cutoff far below the list lengths costs
        arrays of the cut size, not of the whole run.
        """
        take = np.minimum(self.lengths, max(k, 0))
        everything = bool((take == self.lengths).all())
        first = np.repeat(np.cumsum(take) - take, take)
        rank = np.arange(first.size, dtype=np.int64) - first
        qidx = np.repeat(np.arange(self.n_queries, dtype=np.int64), take)
        if everything:
            return None, qidx, rank
        return np.repeat(self.offsets[:-1], take) + rank, qidx, rank

    def locate(self, entries: NDArray[np.integer]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """(query index, rank) of the given entries, found by a search of the offsets."""
        qidx = np.searchsorted(self.offsets, entries, side="right").astype(np.int64) - 1
        return qidx, entries - self.offsets[qidx]

    def grade_counts(self) -> NDArray[np.int64]:
        """Histogram of grades per query, shape (queries, 6); column 0 counts unjudged.

        Only judged entries (a few percent of a run) are located; the unjudged count is
        what remains of each list.
        """
        graded = np.flatnonzero(self.grades)
        qidx, _ = self.locate(graded)
        flat = np.bincount(
            qidx * 6 + self.grades[graded].astype(np.int64), minlength=self.n_queries * 6
        )
        counts = flat.reshape(self.n_queries, 6).astype(np.int64)
        counts[:, 0] = self.lengths - counts[:, 1:].sum(axis=1)
        return counts

    def judged_only(self) -> RankedRun:
        """The condensed run: every query's list without its unjudged entries, in the same
        order (trec_eval's ``-J``, pytrec_eval's ``judged_docs_only_flag``)."""
        keep = self.grades > 0
        if bool(keep.all()):
            return self
        lengths = np.bincount(self.qidx[keep], minlength=self.n_queries).astype(np.int64)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        return RankedRun(
            name=self.name,
            offsets=offsets,
            grades=self.grades[keep],
            contains=None if self.contains is None else self.contains[keep],
            k_override=self.k_override,
        )

    @classmethod
    def from_lists(
        cls,
        name: str,
        ranked_grades: list[list[int]],
        contains: list[list[bool]] | None = None,
        k_override: list[int] | None = None,
    ) -> RankedRun:
        """Build from Python lists; convenient for tests and small inputs."""
        lengths = np.array([len(r) for r in ranked_grades], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        flat = [g for r in ranked_grades for g in r]
        contains_arr = None
        if contains is not None:
            contains_arr = np.array([c for r in contains for c in r], dtype=np.bool_)
        return cls(
            name=name,
            offsets=offsets,
            grades=np.array(flat, dtype=np.int8),
            contains=contains_arr,
            k_override=None if k_override is None else np.array(k_override, dtype=np.int64),
        )
