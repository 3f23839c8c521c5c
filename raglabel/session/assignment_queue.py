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

Its members are read at once (one indexed read). Which of them are done takes the whole
share's pools and grades (tens of milliseconds at hundreds of queries): a queue made
with ``read_done=False`` leaves that to :meth:`AssignmentQueue.read_aside`, in a worker
thread on a connection of its own, whose answer :meth:`AssignmentQueue.land` puts in
place on the app's thread; whatever needs it sooner reads it there and then
(:meth:`AssignmentQueue.read`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from raglabel.session.catalog import Catalog
from raglabel.storage.assignments import assigned_to, done_queries, has_started, latest_assign
from raglabel.storage.audit import Waiting, waiting_pairs
from raglabel.storage.project import Project


@dataclass(frozen=True)
class DoneRead:
    """The done queries a worker read for ``queue``, by query id."""

    queue: AssignmentQueue
    done: frozenset[str]


class AssignmentQueue:
    """The queries assigned to ``annotator`` (as the session's query indexes, in serving
    order) and which of them they finished, down to ``depth``."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        catalog: Catalog,
        annotator: str,
        depth: int,
        *,
        read_done: bool = True,
    ) -> None:
        self.annotator = annotator
        self.depth = depth
        self._catalog = catalog
        #: The last assign when the members were read; read before them, so an assign
        #: landing between the two reads shows as a change (``stale``), never hides one.
        self.assign_run = latest_assign(conn)
        self.members: list[int] = []
        for qid in assigned_to(conn, annotator):
            q = catalog.query_by_ext(qid)
            if q is not None:
                self.members.append(q)
        self._member_set = set(self.members)
        self.done: set[int] = set()
        #: Which members are done is read (nothing to read without a member).
        self.known = not self.members
        #: A worker was asked to read it (``read_aside``), and has not landed yet.
        self.reading = False
        # Members read again after an action of this session before the done ones were
        # known: their answer is newer than a worker's that began before the action.
        self._refreshed: set[int] = set()
        if read_done:
            self.read(conn)

    def stale(self, conn: sqlite3.Connection) -> bool:
        """Whether an assign was recorded since the members were read (another process:
        the lead assigning while this app is open). One indexed read."""
        return latest_assign(conn) != self.assign_run

    def read(self, conn: sqlite3.Connection) -> None:
        """Read which members are done now, on this thread, unless that is known."""
        if not self.known:
            self.land(done_queries(conn, self.annotator, self.depth))

    def read_aside(self, path: Path) -> DoneRead | None:
        """Which members are done, read on a read-only connection of its own: safe in a
        worker thread. Hand the answer to :meth:`land` on the app's thread. None when
        the file could not be read so: :meth:`read` on the app's thread then says why."""
        try:
            with Project.reader(path) as reader, reader.snapshot():
                done = done_queries(reader.conn, self.annotator, self.depth)
        except sqlite3.Error:
            return None
        return DoneRead(self, frozenset(done))

    def land(self, done: Collection[str]) -> None:
        """Take ``done`` (query ids) as the members done, but for those read again since
        (``refresh``); nothing when it is known already (read here meanwhile)."""
        if self.known:
            return
        ext = self._catalog.queries
        self.done = {
            q
            for q in self.members
            if (q in self.done if q in self._refreshed else ext[q].ext_id in done)
        }
        self.known = True
        self.reading = False
        self._refreshed.clear()

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
        if not self.known:
            self._refreshed.add(q)

    def progress(self) -> tuple[int, int]:
        """(done, assigned), once the done ones are known (``read``)."""
        return len(self.done), len(self.members)

    def next_pair(self, conn: sqlite3.Connection, q: int) -> tuple[int, Waiting] | None:
        """The next pair of the assignment: query ``q``'s while it is assigned, not done
        and started by this annotator (begun work is finished first), else the first
        assigned query's that is not done, in serving order; None once every one is done.
        A query merely under the cursor is not started: the shares come in the order the
        assignment gives them, the same for two annotators sharing queries. Reads which
        are done first if that is not known yet."""
        self.read(conn)
        begun = (
            q in self._member_set
            and q not in self.done
            and has_started(conn, self.annotator, self._catalog.queries[q].row_id)
        )
        first = [q] if begun else []
        for member in first + [m for m in self.members if m not in self.done]:
            row = self._catalog.queries[member].row_id
            waiting = waiting_pairs(conn, [row], self.depth, annotator=self.annotator)[row]
            # Not done, yet nothing waits: a query no stored run covers any more has no
            # pool, so it is never done, and it has nothing to serve either.
            if waiting:
                return member, waiting[0]
        return None
