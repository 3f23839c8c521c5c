"""The grades a session shows and scores with, kept in step with every write.

Blind (the default), that is the annotator's own current grades; otherwise one resolved
grade per pair over all annotators (an adjudicated grade wins, else the lower median),
as ``raglabel eval DB`` resolves them. The grades are read as arrays and become a
dictionary per query when that query is first asked about: a big project holds
millions. Besides, the book keeps each run's entry grades as arrays (matched to the
runs' pids), so metrics over all queries stay whole-array work and a new grade only
touches the entries of its own query.
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

    def table(self) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
        """Every grade as parallel arrays (query index, pid, grade), as they are now."""
        if not self._books:
            n = len(self)
            q = np.repeat(np.arange(n, dtype=np.int64), np.diff(self._offsets))
            return q, self._pids, self._grades
        # Queries asked about (and maybe changed since) as their dictionaries say.
        asked = np.array(sorted(self._books), dtype=np.int64)
        n = len(self)
        q = np.repeat(np.arange(n, dtype=np.int64), np.diff(self._offsets))
        keep = ~np.isin(q, asked)
        more = [(qi, pid, g) for qi in asked.tolist() for pid, g in self._books[qi].items()]
        extra = np.array(more, dtype=np.int64).reshape(-1, 3)
        return (
            np.concatenate([q[keep], extra[:, 0]]),
            np.concatenate([self._pids[keep], extra[:, 1]]),
            np.concatenate([self._grades[keep], extra[:, 2]]),
        )


class GradeBook:
    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        n = len(catalog.queries)
        self.grades = QueryGrades.empty(n)
        self.counts = np.zeros((n, 6), dtype=np.int64)
        self.run_grades: list[NDArray[np.int8]] = [
            np.zeros(run.pids.size, dtype=np.int8) for run in catalog.runs
        ]
        # Per query, how many of its candidates have a grade: the Queries screen sorts
        # and sums it over every query, so it is kept, not counted again each time.
        self.graded_candidates = np.zeros(n, dtype=np.int64)
        # Queries graded before the runs were in: their entries are graded again then.
        self.touched: set[int] = set()

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
        moved = cat.passage_ext.moved_in() if moved is None else moved
        for row, pid in moved.items():
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
        if moved:
            # The pairs read from the file name such a passage by its row; the grades
            # (above) and the Grade screen by the pid the session met it under.
            pool_pid = pool_pid.copy()
            for row, pid in moved.items():
                pool_pid[pool_pid == row] = pid
        pool = np.sort(pool_q * SPAN + pool_pid + SPAN // 2)
        keys = q * SPAN + pids + SPAN // 2
        at = np.searchsorted(pool, keys).clip(0, max(pool.size - 1, 0))
        found = pool[at] == keys if pool.size else np.zeros(keys.size, bool)
        self.graded_candidates = np.bincount(q[found], minlength=n).astype(np.int64)
        if score:
            self.score_runs()

    def score_runs(self) -> None:
        """Each run entry's grade (0: none), for the catalog's runs as they are now."""
        cat = self.catalog
        if not cat.runs:
            self.run_grades = []
            return
        q, pids, grades = self.grades.table()
        # A graded passage that got its row after a run was stored may be one of its
        # unnamed entries: those queries are named first (few: grades found by search).
        for qi in np.unique(q[late_for(cat.runs, pids)]).tolist():
            cat.resolve(qi)
        self.run_grades = entry_grades(cat.runs, q, pids, grades)

    def ranked(self, q: int) -> list[tuple[NDArray[np.int64], NDArray[np.int8]]]:
        """Query ``q``'s ranking in each run as pids, every entry named, with their
        grades: from the runs once they are in, else read on their own."""
        cat = self.catalog
        if not cat.runs:
            book = self.grades[q]
            return [(pids, _grades_of(pids, book)) for pids in cat.ranked_pids(q)]
        if cat.resolve(q):
            self.regrade(q)  # entries named just now may be graded passages
        lists = cat.ranked_pids(q)
        return [
            (pids, grades[run.offsets[q] : run.offsets[q + 1]])
            for pids, run, grades in zip(lists, cat.runs, self.run_grades, strict=True)
        ]

    def regrade(self, q: int) -> None:
        """Grade query ``q``'s run entries again from its grades."""
        book = self.grades[q]
        for run, out in zip(self.catalog.runs, self.run_grades, strict=True):
            start, stop = int(run.offsets[q]), int(run.offsets[q + 1])
            out[start:stop] = _grades_of(run.pids[start:stop], book)

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
        runs = self.catalog.runs
        if not runs:
            # Before the runs are in: entry grades come from the grades when asked, and
            # the runs' are graded again for the queries changed meanwhile (``touched``).
            self.touched.add(q)
            return
        if bool(late_for(runs, np.array([pid], dtype=np.int64))[0]):
            self.catalog.resolve(q)  # the passage may be one of its unnamed entries
        self.regrade(q)


def late_for(runs: Sequence[RunLists], pids: NDArray[np.int64]) -> NDArray[np.bool_]:
    """Which of ``pids`` some run may list unnamed (a 0 entry): a passage met outside
    the file, or one the file gave a row after that run was stored."""
    if not runs:
        return np.zeros(pids.size, dtype=bool)
    return (pids < 0) | (pids > min(run.upto for run in runs))


def _grades_of(pids: NDArray[np.integer], book: dict[int, int]) -> NDArray[np.int8]:
    if not book:
        return np.zeros(pids.size, dtype=np.int8)
    return np.array([book.get(pid, 0) for pid in pids.tolist()], dtype=np.int8)


def entry_grades(
    runs: Sequence[RunLists],
    q: NDArray[np.int64],
    pids: NDArray[np.int64],
    grades: NDArray[np.int64],
) -> list[NDArray[np.int8]]:
    """Each run entry's grade (0: none) from grades as parallel arrays (query index,
    pid, grade): one sorted search over every entry. It only reads, so the thread that
    reads the runs in the background can compute it too."""
    keys = q * SPAN + pids + SPAN // 2
    order = np.argsort(keys, kind="stable")
    keys, by_key = keys[order], grades[order].astype(np.int8)
    out = []
    for run in runs:
        found = np.zeros(run.pids.size, dtype=np.int8)
        # An unnamed entry (0) has no grade (see ``late_for``): most entries below the
        # pool depth are, and need no search.
        named = np.flatnonzero(run.pids)
        if keys.size and named.size:
            # Each named entry's query: the last whose slice starts at or before it. A
            # sorted search, where numpy lets other threads run; np.repeat over every
            # entry held the interpreter's lock for up to half a second a run, and
            # the app's keys (a sort, a filter) waited for it.
            at_query = np.searchsorted(run.offsets, named, side="right") - 1
            wanted = at_query * SPAN + run.pids[named].astype(np.int64) + SPAN // 2
            del at_query
            at = np.searchsorted(keys, wanted).clip(0, keys.size - 1)
            found[named] = np.where(keys[at] == wanted, by_key[at], 0)
        out.append(found)
    return out
