"""The grades a session shows and scores with, kept in step with every write.

Blind (the default), that is the annotator's own current grades; otherwise one resolved
grade per pair over all annotators (an adjudicated grade wins, else the lower median),
as ``raglabel eval DB`` resolves them. The grades are read as arrays and become a
dictionary per query when that query is first asked about: a big project holds
millions. Besides, the book keeps each run's entry grades as arrays, so metrics over
all queries stay whole-array work and a new grade only touches the entries of its own
query.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
from numpy.typing import NDArray

from raglabel.session.catalog import Catalog, RunLists

#: Pairs as one integer each, (query index, pid) -> query * SPAN + pid + SPAN // 2:
#: pids are passage rows (below 2**31) or small negative numbers.
SPAN = 1 << 32


class QueryGrades(Sequence[dict[int, int]]):
    """Per query, its grades by pid; made from sorted arrays on first use."""

    def __init__(
        self, offsets: NDArray[np.int64], pids: NDArray[np.int64], grades: NDArray[np.int64]
    ) -> None:
        self._offsets = offsets
        self._pids = pids
        self._grades = grades
        self._books: dict[int, dict[int, int]] = {}

    @classmethod
    def empty(cls, n: int) -> QueryGrades:
        none = np.zeros(0, np.int64)
        return cls(np.zeros(n + 1, np.int64), none, none)

    def __len__(self) -> int:
        return int(self._offsets.size - 1)

    def __getitem__(self, q: int) -> dict[int, int]:  # type: ignore[override]
        found = self._books.get(q)
        if found is None:
            start, stop = int(self._offsets[q]), int(self._offsets[q + 1])
            found = self._books[q] = dict(
                zip(self._pids[start:stop].tolist(), self._grades[start:stop].tolist(), strict=True)
            )
        return found

    def __iter__(self) -> Iterator[dict[int, int]]:
        return (self[q] for q in range(len(self)))

    def pids(self) -> list[int]:
        """Every graded pid, once or more."""
        return [pid for q in range(len(self)) for pid in self[q]]


class GradeBook:
    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        n = len(catalog.queries)
        self.grades = QueryGrades.empty(n)
        self.counts = np.zeros((n, 6), dtype=np.int64)
        self.run_grades: list[NDArray[np.int8]] = [
            np.zeros(len(run.ext), dtype=np.int8) for run in catalog.runs
        ]
        # Per query, how many of its candidates have a grade: the Queries screen sorts
        # and sums it over every query, so it is kept, not counted again each time.
        self.graded_candidates = np.zeros(n, dtype=np.int64)

    # -- loading -----------------------------------------------------------------------

    def load(
        self,
        table: NDArray[np.int64],
        *,
        score: bool = True,
        moved: dict[int, int] | None = None,
        pairs: tuple[NDArray[np.int64], NDArray[np.int64]] | None = None,
    ) -> None:
        """Fill from ``(query row, passage row, grade)`` rows, all at once; with
        ``score``, the runs' entry grades too. ``moved`` and ``pairs`` stand in for the
        catalog's (:meth:`PassageNames.moved_in`, ``Catalog.pairs``) in another thread."""
        cat = self.catalog
        n = len(cat.queries)
        q = cat.query_indexes(table[:, 0])
        keep = q >= 0
        q, pids, grades = q[keep], table[keep, 1], table[keep, 2]
        for row, pid in (cat.passage_ext.moved_in() if moved is None else moved).items():
            pids[pids == row] = pid
        order = np.argsort(q, kind="stable")
        q, pids, grades = q[order], pids[order], grades[order]
        offsets = np.concatenate([[0], np.cumsum(np.bincount(q, minlength=n))]).astype(np.int64)
        self.grades = QueryGrades(offsets, pids, grades)
        self.counts = np.bincount(q * 6 + grades, minlength=n * 6).reshape(-1, 6).astype(np.int64)
        self.counts[:, 0] = 0
        # Pairs are unique on both sides, so a graded pair found among the candidates
        # is one graded candidate: a sorted search, far cheaper than a set operation.
        pool_q, pool_pid = cat.pairs if pairs is None else pairs
        pool = np.sort(pool_q * SPAN + pool_pid + SPAN // 2)
        keys = q * SPAN + pids + SPAN // 2
        at = np.searchsorted(pool, keys).clip(0, max(pool.size - 1, 0))
        found = pool[at] == keys if pool.size else np.zeros(keys.size, bool)
        self.graded_candidates = np.bincount(q[found], minlength=n).astype(np.int64)
        if score:
            self.score_runs()

    def score_runs(self) -> None:
        """Each run entry's grade (0: none), for the catalog's runs as they are now."""
        if not self.catalog.runs:
            self.run_grades = []
            return
        names = self.catalog.passage_ext
        names.name([pid for pid in self.grades.pids() if pid >= 0])
        by_text = [{names[pid]: g for pid, g in book.items()} for book in self.grades]
        self.run_grades = entry_grades(self.catalog.runs, by_text)

    # -- changes -----------------------------------------------------------------------

    def grade_of(self, q: int, pid: int) -> int | None:
        return self.grades[q].get(pid)

    def set(self, q: int, pid: int, grade: int | None) -> None:
        book = self.grades[q]
        old = book.get(pid)
        if old == grade:
            return
        if old is not None:
            self.counts[q, old] -= 1
        if (old is None) != (grade is None) and pid in self.catalog.candidates[q]:
            self.graded_candidates[q] += 1 if old is None else -1
        if grade is None:
            book.pop(pid, None)
        else:
            book[pid] = grade
            self.counts[q, grade] += 1
        text = self.catalog.passage_ext[pid]
        for run, out in zip(self.catalog.runs, self.run_grades, strict=True):
            start = int(run.offsets[q])
            for i, ext in enumerate(run.ranked(q)):
                if ext == text:
                    out[start + i] = 0 if grade is None else grade


def entry_grades(
    runs: Sequence[RunLists], by_text: Sequence[dict[str, int]]
) -> list[NDArray[np.int8]]:
    """Each run entry's grade (0: none) from each query's grades by passage id. It only
    reads, so the thread that reads the runs in the background can compute it too."""
    out = []
    for run in runs:
        looked: list[int] = []
        for q, graded in enumerate(by_text):
            ranked = run.ranked(q)
            looked.extend([graded.get(e, 0) for e in ranked] if graded else [0] * len(ranked))
        out.append(np.array(looked, dtype=np.int8))
    return out
