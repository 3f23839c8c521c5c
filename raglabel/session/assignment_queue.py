"""An annotator's assignment as the grading app serves it: the queries ``raglabel assign``
gave them, in their serving order, each until they graded every passage a stored run
ranks within the deepest cutoff. The labeling queue serves it before anything else.

Only this annotator's grades count here, unlike the audit sample, where anyone's do: with
an overlap of two, a query someone else graded whole still waits for this annotator's
grades. What is done is ``storage.assignments.done_queries``'s word, the same the lead's
``raglabel assign --list`` and ``raglabel progress`` read; what a query still waits for is
``storage.audit.waiting_pairs`` for this annotator, the pool those count over.

Like the audit's queue it reads the project file, not the session's book, so it serves
from the start, before the background load brings the runs. It changes the order only:
every query, assigned or not, stays open to everyone.
"""

from __future__ import annotations

import sqlite3

from raglabel.session.catalog import Catalog
from raglabel.storage.assignments import assigned_to, done_queries
from raglabel.storage.audit import Waiting, waiting_pairs


class AssignmentQueue:
    """The queries assigned to ``annotator`` (as the session's query indexes, in serving
    order) and which of them they finished, down to ``depth``."""

    def __init__(
        self, conn: sqlite3.Connection, catalog: Catalog, annotator: str, depth: int
    ) -> None:
        self.annotator = annotator
        self.depth = depth
        self._catalog = catalog
        self.members: list[int] = []
        for qid in assigned_to(conn, annotator):
            q = catalog.query_by_ext(qid)
            if q is not None:
                self.members.append(q)
        self._member_set = set(self.members)
        self.done: set[int] = set()
        self._read_done(conn)

    def _read_done(self, conn: sqlite3.Connection) -> None:
        if not self.members:
            return  # no assignment: nothing to ask the file
        done = done_queries(conn, self.annotator, self.depth)
        self.done = {q for q in self.members if self._catalog.queries[q].ext_id in done}

    def refresh(self, conn: sqlite3.Connection, q: int) -> None:
        """Read again whether query ``q`` is done, after a grade, clear or undo on it.
        Only ``q`` is read: the whole share's pool costs a second at hundreds of queries,
        and this session's action changed no other query."""
        if q not in self._member_set:
            return
        qid = self._catalog.queries[q].ext_id
        if done_queries(conn, self.annotator, self.depth, among=[qid]):
            self.done.add(q)
        else:
            self.done.discard(q)

    def progress(self) -> tuple[int, int]:
        """(done, assigned)."""
        return len(self.done), len(self.members)

    def next_pair(self, conn: sqlite3.Connection, q: int) -> tuple[int, Waiting] | None:
        """The next pair of the assignment: query ``q``'s while it is assigned and not
        done (a query started is finished first), else the first assigned query's that is
        not done, in serving order; None once every one is done."""
        first = [q] if q in self._member_set and q not in self.done else []
        for member in first + [m for m in self.members if m not in self.done]:
            row = self._catalog.queries[member].row_id
            waiting = waiting_pairs(conn, [row], self.depth, annotator=self.annotator)[row]
            # Not done, yet nothing waits: a query no stored run covers any more has no
            # pool, so it is never done, and it has nothing to serve either.
            if waiting:
                return member, waiting[0]
        return None
