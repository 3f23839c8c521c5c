"""The grades a session shows and scores with, kept in step with every write.

Blind (the default), that is the annotator's own current grades; otherwise one resolved
grade per pair over all annotators (an adjudicated grade wins, else the lower median),
as ``raglabel eval DB`` resolves them. Besides a dictionary per query, the book keeps
each run's entry grades as arrays, so metrics over all queries stay whole-array work
and a new grade only touches the entries of its own query.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from raglabel.session.catalog import Catalog


class GradeBook:
    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        n = len(catalog.queries)
        self.grades: list[dict[int, int]] = [{} for _ in range(n)]
        self.counts = np.zeros((n, 6), dtype=np.int64)
        self.run_grades: list[NDArray[np.int8]] = [
            np.zeros(len(run.ext), dtype=np.int8) for run in catalog.runs
        ]
        # Per query, how many of its candidates have a grade: the Queries screen sorts
        # and sums it over every query, so it is kept, not counted again each time.
        self.graded_candidates = np.zeros(n, dtype=np.int64)

    # -- loading -----------------------------------------------------------------------

    def load(self, pairs: list[tuple[int, str, int]]) -> None:
        """Fill from ``(query row id, passage id, grade)`` triples, all at once."""
        cat = self.catalog
        for query_row, passage, grade in pairs:
            q = cat.query_index(query_row)
            if q is not None:
                self.grades[q][cat.pid(passage)] = grade
        n = len(self.grades)
        qidx = np.fromiter((q for q, book in enumerate(self.grades) for _ in book), dtype=np.int64)
        values = np.fromiter((g for book in self.grades for g in book.values()), dtype=np.int64)
        self.counts = np.bincount(qidx * 6 + values, minlength=n * 6).reshape(-1, 6)
        self.counts[:, 0] = 0
        self.graded_candidates = np.array(
            [
                sum(1 for pid in pool if pid in book) if book else 0
                for pool, book in zip(cat.candidates, self.grades, strict=True)
            ],
            dtype=np.int64,
        )
        self.score_runs()

    def score_runs(self) -> None:
        """Each run entry's grade (0: none), for the catalog's runs as they are now."""
        self.run_grades = entry_grades(self.catalog, self.grades)

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


def entry_grades(catalog: Catalog, grades: list[dict[int, int]]) -> list[NDArray[np.int8]]:
    """Each run entry's grade (0: none) from each query's grades by pid. It only reads,
    so the thread that reads the runs in the background can compute it too."""
    # Each query's graded passages by id; every run entry looks its grade up there.
    by_text = [{catalog.passage_ext[pid]: g for pid, g in book.items()} for book in grades]
    out = []
    for run in catalog.runs:
        looked: list[int] = []
        for q, graded in enumerate(by_text):
            ranked = run.ranked(q)
            looked.extend([graded.get(e, 0) for e in ranked] if graded else [0] * len(ranked))
        out.append(np.array(looked, dtype=np.int8))
    return out
