"""The audit sample as the grading app serves it: the drawn queries first, in draw order,
each until a person graded every passage a stored run ranks within the deepest cutoff.

What a query still needs is read from the project file (``storage.audit``), not from the
session's book: in a blind session the book holds this annotator's grades only, where a
drawn query is complete once *anyone* graded its pool, and it needs neither the runs nor
the counts the background load brings, so the queue serves drawn queries from the start.
"""

from __future__ import annotations

import sqlite3

from raglabel.session.catalog import Catalog
from raglabel.storage.audit import Waiting, covered_queries, drawn_rows, waiting_pairs


class AuditQueue:
    """The drawn queries a stored run covers (as the session's query indexes, in draw
    order) and the passages each still needs a person's grade on, down to ``depth``."""

    def __init__(self, conn: sqlite3.Connection, catalog: Catalog, depth: int) -> None:
        self.depth = depth
        self._catalog = catalog
        self.members: list[int] = []
        # As `raglabel audit --list` counts: a drawn query no run ranks anything for any
        # more has nothing waiting, yet nothing to complete, so it is not a member.
        covered = set(covered_queries(conn))
        for row, qid in drawn_rows(conn):
            q = catalog.query_index(row)
            if q is not None and qid in covered:
                self.members.append(q)
        self._waiting: dict[int, list[Waiting]] = {}
        self._read(conn, self.members)

    def _read(self, conn: sqlite3.Connection, queries: list[int]) -> None:
        rows = {self._catalog.queries[q].row_id: q for q in queries}
        for row, waiting in waiting_pairs(conn, list(rows), self.depth).items():
            self._waiting[rows[row]] = waiting

    def refresh(self, conn: sqlite3.Connection, q: int) -> None:
        """Read again what drawn query ``q`` needs (after a grade, clear or undo on it)."""
        if q in self._waiting:
            self._read(conn, [q])

    def progress(self) -> tuple[int, int]:
        """(complete, drawn)."""
        complete = sum(1 for q in self.members if not self._waiting[q])
        return complete, len(self.members)

    def next_pair(self, q: int) -> tuple[int, Waiting] | None:
        """The queue's next pair among the drawn queries: query ``q``'s while it is drawn
        and incomplete (a query started is finished first), else the first incomplete
        drawn query's; None once every drawn query is complete."""
        if self._waiting.get(q):
            return q, self._waiting[q][0]
        for member in self.members:
            waiting = self._waiting[member]
            if waiting:
                return member, waiting[0]
        return None
