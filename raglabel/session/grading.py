"""The grading session the app drives: one annotator, one project file, one cutoff.

Every action writes through the grade log first (committed before it returns) and only
then updates what the screens show, so a grade the screen shows is a grade on disk.

The session is what the screens ask and what the annotator's actions go through; its
parts live beside it, each with one job: the background load of a big project's
candidates, grades and runs (``loading``), each query's figures at the cutoff
(``query_figures``), the undo stack (``undo``), and the answers side (``answers``), which
is handed the project, the annotator and the undo stack rather than the session.
"""

from __future__ import annotations

import gc
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

import numpy as np
from numpy.typing import NDArray

from raglabel.session.assignment_queue import AssignmentQueue, DoneRead
from raglabel.session.audit_queue import AuditQueue
from raglabel.session.catalog import (
    Catalog,
    Passage,
    load_catalog,
    load_passages,
)
from raglabel.session.gradebook import GradeBook
from raglabel.session.live_metrics import PANEL_METRICS, Hole, LiveMetrics, QueryPanel
from raglabel.session.loading import BackgroundLoad, Write
from raglabel.session.options import AppOptions
from raglabel.session.query_figures import QueryFigures
from raglabel.session.suggestions import Suggestion, query_suggestions
from raglabel.session.timing import Timing
from raglabel.session.undo import UndoEntry, UndoStack
from raglabel.storage import adjudication
from raglabel.storage.assignments import assigned
from raglabel.storage.audit import Waiting
from raglabel.storage.labels import (
    graders,
    own_grade_rows,
    resolved_grade_rows,
    resolved_grades,
)
from raglabel.storage.marks import all_marks, standing_marks
from raglabel.storage.project import Project

if TYPE_CHECKING:
    # The grade log's models import pydantic, which costs a tenth of the app's start;
    # they load on the first write, or in the runs thread after the first paint.
    # Answers, likewise, load when the Answers view first opens.
    from raglabel.session.answers import AnswerChange, AnswerGrading
    from raglabel.storage.events import EventKind
    from raglabel.storage.grades import Recorded

#: A pair whose annotators disagree, as the lead's screen lists them.
Disagreement: TypeAlias = adjudication.Disagreement


@dataclass(frozen=True)
class QueryRow:
    """One line of the Queries screen."""

    index: int
    ext_id: str
    text: str
    graded: int  # candidates with a grade in view
    candidates: int
    holes: int  # ungraded passages in any run's top K
    ra_nwg: tuple[float, ...]  # per run, at K; NaN = NA
    scored: bool = True  # False while the runs are still being read: holes, ra_nwg unknown
    counted: bool = True  # False while candidates and grades are read: progress unknown


def _settle_collector() -> None:
    """Move what the session holds for good (catalog, runs, grades) out of the cyclic
    garbage collector's sight.

    A big project's runs are tens of millions of passage ids, and none of them is ever
    part of a cycle; yet every full collection walked them all, which froze the app
    for ten seconds at a time in the middle of a sort or of opening a query.
    """
    gc.freeze()


@dataclass(frozen=True)
class QueryColumns:
    """The Queries screen's numbers as arrays over all queries (index order)."""

    graded: NDArray[np.int64]
    candidates: NDArray[np.int64]
    holes: NDArray[np.int64]
    ra_nwg: NDArray[np.float64]  # runs x queries, NaN = NA
    scored: bool
    counted: bool  # graded and candidates known (else zeros)


@dataclass(frozen=True)
class PassageRow:
    """One candidate passage of the Grade screen."""

    pid: int
    ext_id: str
    title: str
    grade: int | None  # the grade in view (own when blind)
    own: int | None  # this annotator's grade
    suggestion: Suggestion | None
    ranks: tuple[int | None, ...]  # 1-based rank in each run, None when absent
    skipped: bool
    flagged: bool
    skip_reason: str | None = None  # the latest standing skip's reason
    flag_note: str | None = None  # the latest standing flag's note ("" when none was given)


@dataclass(frozen=True)
class SearchRow:
    """A passage of the corpus that matches a search, with its grade in view."""

    pid: int
    ext_id: str
    title: str
    snippet: str  # matches between [ and ]
    score: float  # BM25, higher is better
    grade: int | None
    in_pool: bool  # a candidate of the query already


@dataclass(frozen=True)
class ReviewRow:
    """A passage this annotator skipped or flagged, as the review screen lists it."""

    query: int
    pid: int
    query_ext: str
    passage_ext: str
    kind: str  # "skip" or "flag"
    note: str
    grade: int | None  # the grade in view now
    at: str  # when the mark was made


@dataclass(frozen=True)
class Change:
    """What an action did: the pair it touched and its grade in view afterwards."""

    query: int
    pid: int
    grade: int | None
    event_id: int
    kind: str


@dataclass
class GradingSession:
    """One annotator grading one project file at one cutoff, as the app shows it."""

    project: Project
    options: AppOptions
    annotator: str
    catalog: Catalog
    book: GradeBook
    board: LiveMetrics
    k: int
    # Pools, grades and runs still to come (all in at once without a background load).
    loading: BackgroundLoad = field(default_factory=lambda: BackgroundLoad(pending=False))
    # Per query, passages outside its pool the annotator opened from a search.
    _extra: dict[int, list[int]] = field(default_factory=dict)
    # What this session wrote and has not undone: undo takes it back in that order.
    undo_stack: UndoStack = field(default_factory=UndoStack)
    _answers: AnswerGrading | None = field(default=None, repr=False, compare=False)
    # The audit sample's queue, read when first asked for (``audit``).
    _audit: AuditQueue | None = field(default=None, repr=False, compare=False)
    # This annotator's assignment, read when first asked for (``assignment``).
    _assignment: AssignmentQueue | None = field(default=None, repr=False, compare=False)
    # The assigned queries this annotator was last shown (serving order), None before
    # any: a reload reads the assignment anew, and the change must still be told.
    _members_seen: tuple[int, ...] | None = field(default=None, repr=False, compare=False)
    # Each query's figures at K, from the board (whose book is the session's).
    figures: QueryFigures = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.figures = QueryFigures(self.board)

    def __repr__(self) -> str:
        # Short on purpose: Textual describes a worker by repr(its function), and the
        # dataclass repr of a bound method's session spelled out every run entry, which
        # froze a big project's app for seconds at every checkpoint.
        return f"GradingSession({self.project.path or 'memory'}, {self.annotator!r})"

    @classmethod
    def open(
        cls, options: AppOptions, project: Project | None = None, *, background: bool = False
    ) -> GradingSession:
        """The session on ``options.project``. With ``background`` only the queries are
        read at once: ``start_runs`` reads the candidates, the grades and the runs in
        another thread (a big project's millions of them take seconds), and whatever
        needs them waits (``ensure_runs``)."""
        project = project or Project.open(options.project)
        background = background and project.path is not None
        # The collector rests while the catalog is made: its objects hold no cycle, and
        # collections over 100,000 queries as they are made cost more than making them.
        collecting = gc.isenabled()
        gc.disable()
        try:
            catalog = load_catalog(project, pools=not background)
        finally:
            if collecting:
                gc.enable()
        book = GradeBook(catalog)
        session = cls(
            project=project,
            options=options,
            annotator=options.annotator,
            catalog=catalog,
            book=book,
            board=LiveMetrics(catalog, book, options.config),
            k=options.cutoffs[0],
            loading=BackgroundLoad(pending=background),
        )
        if project.path is not None:
            # The app checkpoints from a worker instead (``checkpoint``), and on close.
            project.defer_checkpoints()
        catalog.grew = session._candidates_grew
        session.reload()
        _settle_collector()
        return session

    def start_runs(self) -> None:
        """Read candidates, grades and runs (and score the runs) in another thread, if
        they are still to come."""
        if not self.loading.waiting:
            return
        assert self.project.path is not None
        self.loading.start(
            self.project.path,
            self.catalog,
            annotator=self.annotator,
            blind=self.blind,
            k=self.k,
            config=self.options.config,
        )

    @property
    def counts_ready(self) -> bool:
        """Candidates and grades are read (``ensure_counts`` will not wait)."""
        return self.loading.counts_ready

    @property
    def counted(self) -> bool:
        """Candidates and grades are in: progress is known."""
        return not self.loading.counting

    def ensure_counts(self) -> None:
        """Wait for candidates and grades still to come, then put them in place."""
        if not self.loading.counting:
            return
        self.start_runs()
        landing = self.loading.take_counts()
        counted = landing.counted
        grown = self.catalog.take_counts(counted.pairs, counted.sizes)
        if not landing.current:  # grades were reloaded meanwhile (another annotator)
            self.reload()
            return
        self._load_grades(counted.grades, counted.own, counted.book)
        # The thread's book counted the graded candidates among its pairs only.
        for q, pids in grown.items():
            self._candidates_grew(q, pids)
        # A query opened early was read after the thread's snapshot began, and may show a
        # grade made in between by another window or annotator, which the thread's book
        # lacks: those queries are read again, as the file is now.
        early = {key for key in self._own if key[0] in landing.early}
        for key in early:
            del self._own[key]
        for q in sorted(landing.early):
            grades, own = self._query_grades(q)
            for pid in set(self.book.grades[q]) | set(grades):
                self.book.set(q, pid, grades.get(pid))
            for pid, grade in own.items():
                self._own[(q, pid)] = grade
        # The thread's reads may predate writes of this session: those written after they
        # began are put again, in order, with the grade in view as it is now (another
        # annotator may have graded the pair since, and the reads seen it).
        for write in landing.replay:
            q, pid = write.query, write.pid
            if not self.blind:
                self._set_own(q, pid, write.own)
            self.book.set(q, pid, write.own if self.blind else self._resolved(q, pid))
        self._rescore()

    def _candidates_grew(self, q: int, pids: list[int]) -> None:
        """Count the graded ones among candidates another process made after the counts
        were read (``Catalog.agree``): the book counted its graded candidates then."""
        graded = sum(1 for pid in pids if self.book.grade_of(q, pid) is not None)
        self.book.graded_candidates[q] += graded

    @property
    def runs_ready(self) -> bool:
        """Candidates, grades and runs are read (``ensure_runs`` will not wait)."""
        return self.loading.runs_ready

    @property
    def runs_scored(self) -> bool:
        """Candidates, grades and runs are in and every figure is computed."""
        return not self.loading.waiting

    def ensure_runs(self) -> None:
        """Wait for candidates, grades and runs still to come (reading them now if nobody
        started), then put them in place; at once if they are in."""
        if not self.loading.waiting:
            return
        self.ensure_counts()
        landing = self.loading.take_runs()
        loaded = landing.loaded
        book = self.book
        changed = self.catalog.install(loaded.runs)
        regraded: list[int] | None = None
        if landing.current and changed is not None:
            book.run_grades = loaded.run_grades
            # Queries opened or graded meanwhile: their entries as shown, graded as now.
            regraded = sorted(changed | book.touched)
            for q in regraded:
                self.catalog.resolve(q)  # a passage graded meanwhile may be unnamed there
                book.regrade(q)
        else:  # grades were reloaded meanwhile (another annotator): score them again
            book.score_runs()
        book.touched.clear()
        if regraded is not None and loaded.k == self.k and loaded.ra is not None:
            self.figures.land(loaded, regraded, self.k)
        else:
            self._rescore()
        _settle_collector()

    def checkpoint(self) -> None:
        """Copy committed pages from the WAL into the database file, on a connection of
        its own (safe from a worker thread; a passive checkpoint never blocks a grade)."""
        self.project.checkpoint(aside=True)

    def close(self) -> None:
        self.loading.close()
        self.project.checkpoint()
        self.project.close()

    @property
    def blind(self) -> bool:
        return self.options.blind

    def reload(self) -> None:
        """Read every grade again (another annotator's work, a switch of annotator)."""
        conn = self.project.conn
        if self._answers is not None:
            self._answers.passages_changed()
        self._audit = None  # others' grades may have completed drawn queries: read anew
        # Another window of this annotator may have finished assigned queries, or a new
        # assign given others; a switch of annotator brings another assignment.
        self._assignment = None
        self.book = GradeBook(self.catalog)
        self.board.book = self.book
        self.loading.reread()
        self._own: dict[tuple[int, int], int] = {}
        if self.loading.counting:  # the thread reading the runs reads the grades first
            self._rescore()
            return
        rows = own_grade_rows(conn, self.annotator) if self.blind else resolved_grade_rows(conn)
        own = None if self.blind else own_grade_rows(conn, self.annotator)
        self._load_grades(rows, own, None)

    def _load_grades(
        self, rows: NDArray[np.int64], own: NDArray[np.int64] | None, book: GradeBook | None
    ) -> None:
        """Put grades read as ``(query row, passage row, grade)`` in the book, or take
        ``book``, which the thread that read them filled already."""
        if book is None:
            self.book.load(rows)
        else:
            self.book = book
            self.board.book = book
            if self._answers is not None:
                self._answers.passages_changed()
        if own is not None:
            moved = self.catalog.passage_ext.moved_in()
            for query_row, passage, grade in own.tolist():
                q = self.catalog.query_index(query_row)
                if q is not None:
                    self._own[(q, moved.get(passage, passage))] = grade
        self._rescore()

    def _rescore(self) -> None:
        if self.loading.waiting:  # scored when the runs come in
            self.figures.clear()
        else:
            self.figures.rescore(self.k)

    # -- cutoff and annotator ----------------------------------------------------------

    def set_k(self, k: int) -> None:
        self.ensure_runs()
        if k < 1:
            raise ValueError("K must be at least 1")
        self.k = k
        self._rescore()

    def cycle_k(self) -> int:
        cutoffs = self.options.cutoffs
        position = cutoffs.index(self.k) if self.k in cutoffs else -1
        self.set_k(cutoffs[(position + 1) % len(cutoffs)])
        return self.k

    def switch_annotator(self, name: str) -> None:
        name = name.strip()
        if not name:
            raise ValueError("an annotator needs a name")
        self.annotator = name
        self.undo_stack.clear()  # another annotator's log: their own latest action is undone
        self._members_seen = None  # another person's assignment is no change of theirs
        if self._answers is not None:
            self._answers.switch_annotator(name)
        self.reload()

    # -- what the screens show ---------------------------------------------------------

    def query_rows(self) -> list[QueryRow]:
        return [self.query_row(q) for q in range(len(self.catalog.queries))]

    def query_columns(self) -> QueryColumns:
        """What the Queries screen sorts and sums, for every query at once."""
        n = len(self.catalog.queries)
        runs = len(self.catalog.run_names)
        ra, holes = self.figures.ra, self.figures.holes
        return QueryColumns(
            graded=self.book.graded_candidates,
            candidates=self.catalog.candidates.sizes,
            holes=holes if holes.size else np.zeros(n, np.int64),
            ra_nwg=ra if ra.size else np.full((runs, n), math.nan),
            scored=not self.loading.waiting,
            counted=not self.loading.counting,
        )

    def query_row(self, q: int) -> QueryRow:
        query = self.catalog.queries[q]
        figures = self.figures
        holes: int | None = int(figures.holes[q]) if figures.holes.size else None
        ra: tuple[float, ...] | None = (
            tuple(float(v) for v in figures.ra[:, q]) if figures.ra.size else None
        )
        # Opened before the counts are in, its own pool and grades were read (never
        # here: the Queries table asks for every row it paints).
        early = self.loading.is_early
        if self.loading.waiting and (self.counted or early(q)) and q in self.catalog.opened:
            # Opened before the runs are in: its own rankings give its figures.
            holes = len(self.board.holes(q, self.k))
            values = self.panel(q).values
            ra = tuple(values[name]["ra_nwg"] for name in self.catalog.run_names)
        return QueryRow(
            index=q,
            ext_id=query.ext_id,
            text=query.text,
            graded=int(self.book.graded_candidates[q]),
            candidates=int(self.catalog.candidates.sizes[q]),
            holes=holes or 0,
            ra_nwg=ra if ra is not None else (math.nan,) * len(self.catalog.run_names),
            scored=holes is not None,
            counted=self.counted or early(q),
        )

    def passages(self, q: int) -> list[PassageRow]:
        """The query's candidates in pool order, then any hole outside the pool. Before
        the runs are in, read from the query's own rankings, and before the counts are,
        from its own pool and grades: nothing waits for them."""
        self._read_query(q)
        cat = self.catalog
        pool = list(cat.candidates[q])
        listed = set(pool)
        pool += [h.pid for h in self.board.holes(q, self.k) if h.pid not in listed]
        listed = set(pool)
        pool += [pid for pid in self._extra.get(q, []) if pid not in listed]
        ranks = [
            {pid: rank for rank, pid in enumerate(pids.tolist(), 1)}
            for pids, _ in self.book.ranked(q)
        ]
        suggestions = {
            cat.pid(ext): s
            for ext, s in query_suggestions(self.project, cat.queries[q].row_id).items()
        }
        notes = self.mark_notes(q)
        titles = self._titles(pool)
        rows = []
        for pid in pool:
            grade = self.book.grade_of(q, pid)
            own = grade if self.blind else self._own.get((q, pid))
            rows.append(
                PassageRow(
                    pid=pid,
                    ext_id=cat.passage_ext[pid],
                    title=titles.get(pid, ""),
                    grade=grade,
                    own=own,
                    suggestion=suggestions.get(pid),
                    ranks=tuple(r.get(pid) for r in ranks),
                    skipped="skip" in notes.get(pid, {}),
                    flagged="flag" in notes.get(pid, {}),
                    skip_reason=notes.get(pid, {}).get("skip"),
                    flag_note=notes.get(pid, {}).get("flag"),
                )
            )
        return rows

    def search(self, q: int, text: str, limit: int = 50) -> list[SearchRow]:
        """Passages of the whole corpus matching words of ``text`` (BM25 order),
        with their grade for query ``q``: what no run retrieved can be found and graded."""
        from raglabel.storage.search import search_passages

        pool = set(self.catalog.candidates[q])
        rows = []
        for hit in search_passages(self.project.conn, text, limit):
            pid = self.catalog.pid(hit.passage)
            rows.append(
                SearchRow(
                    pid,
                    hit.passage,
                    hit.title,
                    hit.snippet,
                    hit.score,
                    self.book.grade_of(q, pid),
                    pid in pool,
                )
            )
        return rows

    def include(self, q: int, pid: int) -> None:
        """Show passage ``pid`` among query ``q``'s passages from now on (a search hit
        outside the pool); grading it makes it a candidate for good."""
        if pid not in self.catalog.candidates[q] and pid not in self._extra.get(q, []):
            self._extra.setdefault(q, []).append(pid)

    def passage(self, pid: int) -> Passage:
        found = load_passages(self.project, self.catalog, [pid])
        return found.get(pid) or Passage(pid, self.catalog.passage_ext[pid], "", "")

    def metric_definitions(self) -> list[str]:
        """What each of the panel's metrics measures at the current K, with the
        conventions in force (``Harm@5: share of the top 5 graded 2 or lower``)."""
        from raglabel.metrics.definitions import definitions
        from raglabel.metrics.names import MetricKey

        keys = [MetricKey(name, self.k) for name in PANEL_METRICS]
        return definitions(keys, self.options.config)

    def panel(self, q: int) -> QueryPanel:
        self._read_query(q)  # neither the runs nor the counts are needed: its own are read
        return self.figures.panel(q, self.k)

    def hole_here(self, q: int) -> Hole | None:
        """Query ``q``'s most-retrieved ungraded passage: the queue's next pair while it
        has one. Waits for nothing: the query's own pool, grades and rankings say."""
        self._read_query(q)
        here = self.board.holes(q, self.k)
        return here[0] if here else None

    @property
    def audit(self) -> AuditQueue:
        """The audit sample's queue (no member when the project has no draw), complete at
        the deepest of the app's cutoffs: the deepest K in use."""
        if self._audit is None:
            self._audit = AuditQueue(self.project.conn, self.catalog, max(self.options.cutoffs))
        return self._audit

    def audit_progress(self) -> tuple[int, int] | None:
        """(complete, drawn) of the audit sample; None when the project has no draw."""
        audit = self.audit
        return audit.progress() if audit.members else None

    def audit_hole(self, q: int) -> Hole | None:
        """The audit's next pair: query ``q``'s next passage no person graded while ``q``
        is drawn and incomplete, else the first incomplete drawn query's (draw order);
        None when there is no draw or every drawn query is complete. Waits for nothing:
        it reads the drawn queries' rankings and grades from the file."""
        return self._served(self.audit.next_pair(q))

    @property
    def assignment(self) -> AssignmentQueue:
        """This annotator's assignment (no member when they have none), done at the
        deepest of the app's cutoffs, as the audit's queue is complete. Which members are
        done is read when first needed, or sooner by a worker (``assignment_to_read``):
        on a project file it is not read here, at the first paint."""
        if self._assignment is None:
            self._assignment = AssignmentQueue(
                self.project.conn,
                self.catalog,
                self.annotator,
                max(self.options.cutoffs),
                read_done=self.project.path is None,
            )
            if self._members_seen is None:
                self._members_seen = tuple(self._assignment.members)
        return self._assignment

    def assignment_changed(self) -> int | None:
        """Read the assignment anew when an assign was recorded since it was read (the
        lead assigning while this app is open); how many queries are assigned to this
        annotator now when their share differs from the one last shown, else None.
        Costs one indexed read while nothing changed: the app asks at every ``g``."""
        if self._assignment is not None and self._assignment.stale(self.project.conn):
            self._assignment = None
        queue = self.assignment
        seen, self._members_seen = self._members_seen, tuple(queue.members)
        return None if seen == self._members_seen else len(queue.members)

    def assignment_progress(self) -> tuple[int, int] | None:
        """(done, assigned) of this annotator's assignment; None when they have none.
        Reads which are done if no worker has brought that yet."""
        assignment = self.assignment
        if not assignment.members:
            return None
        assignment.read(self.project.conn)
        return assignment.progress()

    def assignment_standing(self) -> tuple[int | None, int] | None:
        """``assignment_progress`` without waiting: done is None while it is unread."""
        assignment = self.assignment
        if not assignment.members:
            return None
        return (assignment.progress()[0] if assignment.known else None), len(assignment.members)

    def assignment_to_read(self) -> tuple[AssignmentQueue, Path] | None:
        """The assignment whose done members a worker should read (``read_aside`` on
        the file), marked as being read; None when nothing is to be read or a worker
        reads it already. Hand its answer to ``land_assignment``."""
        assignment = self.assignment
        path = self.project.path
        if assignment.known or assignment.reading or path is None:
            return None
        assignment.reading = True
        return assignment, path

    def land_assignment(self, read: DoneRead) -> bool:
        """Put a worker's read of the done members in place; False when it is stale (the
        assignment was read anew meanwhile: another annotator, a reload)."""
        if read.queue is not self._assignment:
            return False
        read.queue.land(read.done)
        return True

    def assignment_hole(self, q: int) -> Hole | None:
        """The assignment's next pair: query ``q``'s next passage this annotator has not
        graded while ``q`` is theirs, started and not done, else the first not-done
        query's (serving order); None without an assignment or once it is all done.
        Waits for nothing."""
        return self._served(self.assignment.next_pair(self.project.conn, q))

    def served_hole(self, q: int) -> Hole | None:
        """The queue's pairs that wait for no run: this annotator's assignment first,
        then the audit's drawn queries; None when neither has one left."""
        return self.assignment_hole(q) or self.audit_hole(q)

    def _served(self, found: tuple[int, Waiting] | None) -> Hole | None:
        """A pair one of the queues read from the file, as the session's hole."""
        if found is None:
            return None
        query, waiting = found
        pid = self.catalog.pid(waiting.passage)
        # Listed with the query's passages even where it is no candidate (ranked below
        # the pool depth) or lies below the current K, as a search hit would be.
        self.include(query, pid)
        return Hole(query, pid, waiting.runs, waiting.best_rank)

    def next_hole(self, q: int) -> Hole | None:
        """The labeling queue's next pair: the assignment's, then the audit's first
        (``served_hole``), then this query's most-retrieved ungraded passage, else the
        best hole of the query with the most holes."""
        served = self.served_hole(q)
        if served is not None:
            return served
        here = self.hole_here(q)
        if here is not None:
            return here
        self.ensure_runs()  # which query has the most holes needs them all
        holes = self.figures.holes
        if not holes.size or int(holes.max()) == 0:
            return None
        other = int(np.argmax(holes))
        found = self.board.holes(other, self.k)
        return found[0] if found else None

    # -- actions -----------------------------------------------------------------------

    def grade(
        self, q: int, pid: int, grade: int, timing: Timing | None = None, *, accepted: bool = False
    ) -> Change:
        return self._write(q, pid, "grade", grade=grade, timing=timing, accepted=accepted)

    def clear(self, q: int, pid: int, timing: Timing | None = None) -> Change:
        """Clear this annotator's grade (the app asks ``own_grade`` first: it writes no
        clear for a passage without one)."""
        return self._write(q, pid, "clear", timing=timing)

    def skip(self, q: int, pid: int, reason: str, timing: Timing | None = None) -> Change:
        return self._write(q, pid, "skip", note=reason, timing=timing)

    def flag(
        self, q: int, pid: int, note: str | None = None, timing: Timing | None = None
    ) -> Change:
        return self._write(q, pid, "flag", note=note or None, timing=timing)

    def disagreements(self) -> list[Disagreement]:
        return adjudication.disagreements(self.project.conn)

    def adjudicate(
        self, query: str, passage: str, grade: int, timing: Timing | None = None
    ) -> Change:
        """The lead's (this annotator's) final grade for a pair annotators disagree on."""
        timing = timing or Timing()
        done = adjudication.adjudicate(
            self.project,
            query,
            passage,
            self.annotator,
            grade,
            shown_at=timing.shown_at,
            active_ms=timing.active_ms,
        )
        self._remember(done)
        return self._apply(done, "grade")

    @property
    def answers(self) -> AnswerGrading:
        """The answers side of the session (grading RAG answers), made on first use."""
        if self._answers is None:
            from raglabel.session.answers import AnswerGrading

            self._answers = AnswerGrading(self.project, self.annotator, self.blind, self.undo_stack)
        return self._answers

    def waiting_marks(self) -> int:
        """Answers whose unsupported marks wait for a faithfulness grade (not yet saved);
        0 when the answers were never opened, without loading them."""
        return 0 if self._answers is None else self._answers.waiting_marks()

    def undo(self) -> Change | AnswerChange | None:
        """Revert this annotator's latest action, on whatever query it was: a passage's
        grade, skip or flag, or an answer's grade or marks.

        Actions of this session are undone in the order they were made. Before them
        (the app was closed and opened again) the two logs are weighed by when their
        latest actions were made.
        """
        from raglabel.storage.events import latest_kind

        entry = self.undo_stack.pop()
        # Past this session's own actions, the logs say which holds the latest one.
        kind = entry.target.kind if entry else latest_kind(self.project.conn, self.annotator)
        if kind is None:
            return None
        first, then = (
            (self.answers.undo, self._undo_passage)
            if kind == "answer"
            else (self._undo_passage, self.answers.undo)
        )
        # The other log answers when this one has nothing left (another window undid it).
        return first() or then()

    def _undo_passage(self) -> Change | None:
        from raglabel.storage.grades import undo_last

        done = undo_last(self.project, self.annotator, origin="app")
        if done is None:
            return None
        return self._apply(done, "undo")

    def _write(
        self,
        q: int,
        pid: int,
        kind: EventKind,
        *,
        grade: int | None = None,
        note: str | None = None,
        timing: Timing | None = None,
        accepted: bool = False,
    ) -> Change:
        from raglabel.storage.grades import GradeEvent, record

        timing = timing or Timing()
        event = GradeEvent(
            query=self.catalog.queries[q].ext_id,
            passage=self.catalog.passage_ext[pid],
            annotator=self.annotator,
            kind=kind,
            grade=grade,
            note=note,
            origin="app",
            shown_at=timing.shown_at,
            active_ms=timing.active_ms,
            accepted_suggestion=True if accepted else None,
        )
        done = record(self.project, event)
        self._remember(done)
        return self._apply(done, kind)

    def _remember(self, done: Recorded) -> None:
        """Put this session's passage action on the undo stack."""
        from raglabel.storage.events import PassageTarget

        self.undo_stack.push(UndoEntry(PassageTarget(done.query, done.passage), done.event_id))

    def _apply(self, done: Recorded, kind: str) -> Change:
        # The grades in view, not the runs: the book grades the runs' entries of the
        # queries it changes meanwhile once they are in.
        q = self.catalog.query_by_ext(done.query)
        pid = self.catalog.pid(done.passage)
        assert q is not None
        if kind == "grade" and pid not in self.catalog.candidates[q]:
            # A new candidate joins the pairs the counts are read with: they must be in
            # first, else the snapshot and this session could both hold it.
            self.ensure_counts()
        self._read_query(q)  # read after the write: the book holds it already
        if self.blind:
            shown = done.grade
        else:
            self._set_own(q, pid, done.grade)
            shown = self._resolved(q, pid)
        self.loading.note_write(Write(done.event_id, q, pid, done.grade))
        if kind == "grade" and pid not in self.catalog.candidates[q]:
            # The log made the pair a candidate (a passage found by search); before the
            # book hears of the grade, which counts graded candidates.
            self.catalog.add_candidate(q, pid)
            if pid in self._extra.get(q, []):
                self._extra[q].remove(pid)
        self.book.set(q, pid, shown)
        if self._answers is not None:
            self._answers.passages_changed()
        if self._audit is not None:
            self._audit.refresh(self.project.conn, q)
        if self._assignment is not None:
            self._assignment.refresh(self.project.conn, q)
        self._refresh_query(q)
        return Change(q, pid, shown, done.event_id, kind)

    def _set_own(self, q: int, pid: int, grade: int | None) -> None:
        if grade is None:
            self._own.pop((q, pid), None)
        else:
            self._own[(q, pid)] = grade

    def _read_query(self, q: int) -> None:
        """Before the counts are in, query ``q``'s pool and grades read on their own into
        the interim book (what the Grade screen shows and scores needs nothing else);
        the counts instead once they are read."""
        if not self.loading.counting or self.loading.is_early(q):
            return
        if self.counts_ready:
            self.ensure_counts()
            return
        cat, book = self.catalog, self.book
        grades, own = self._query_grades(q)
        for pid, grade in own.items():
            self._own[(q, pid)] = grade
        held = book.grades[q]
        held.clear()
        held.update(grades)
        counts = np.bincount(np.array(list(grades.values()), np.int64), minlength=6)
        book.counts[q] = counts[:6]
        book.counts[q, 0] = 0
        pool = cat.candidates[q]
        cat.candidates.sizes[q] = len(pool)
        book.graded_candidates[q] = sum(pid in grades for pid in pool)
        self.figures.forget(q)
        self.loading.read_early(q)

    def _query_grades(self, q: int) -> tuple[dict[int, int], dict[int, int]]:
        """Query ``q``'s grades as the file holds them now, by passage: those in view
        and, unless blind (where they are the same), the annotator's own."""
        conn = self.project.conn
        row = self.catalog.queries[q].row_id
        moved = self.catalog.passage_ext.moved_in()
        read = (
            own_grade_rows(conn, self.annotator, query_row=row)
            if self.blind
            else resolved_grade_rows(conn, query_row=row)
        )
        grades = {moved.get(pid, pid): grade for _, pid, grade in read.tolist()}
        own = {}
        if not self.blind:
            own = {
                moved.get(pid, pid): grade
                for _, pid, grade in own_grade_rows(conn, self.annotator, query_row=row).tolist()
            }
        return grades, own

    def _resolved(self, q: int, pid: int) -> int | None:
        rows = resolved_grades(
            self.project.conn,
            query_row=self.catalog.queries[q].row_id,
            passage=self.catalog.passage_ext[pid],
        )
        return rows[0][2] if rows else None

    def _refresh_query(self, q: int) -> None:
        if self.loading.waiting:  # the runs' figures come with them; the panel is asked anew
            self.figures.forget(q)
        else:
            self.figures.refresh(q, self.k)

    def annotators(self) -> list[str]:
        """Everyone with a grade in the file, by name."""
        return graders(self.project.conn)

    def assigned_annotators(self) -> list[str]:
        """Everyone with an assignment in the file, by name (``raglabel assign`` creates
        people who have no grade yet)."""
        return sorted(assigned(self.project.conn))

    def export_qrels(self, target: Path) -> int:
        """The grades in view (own when blind, else resolved) as TREC qrels at ``target``;
        returns how many. It opens the file again, so a worker thread may call it: the
        app's own connection must not share its transactions with another thread."""
        from raglabel.formats.maps import GradeMap
        from raglabel.storage.export import export_qrels
        from raglabel.storage.labels import LabelChoice

        assert self.project.path is not None
        choice = LabelChoice(annotator=self.annotator) if self.blind else LabelChoice()
        with Project.open(self.project.path) as project:
            return export_qrels(project.conn, target, GradeMap(), choice).pairs

    def own_grade(self, q: int, pid: int) -> int | None:
        """This annotator's own grade (differs from the one in view when not blind)."""
        return self.book.grade_of(q, pid) if self.blind else self._own.get((q, pid))

    def marks(self, q: int) -> dict[int, set[str]]:
        """Passages this annotator skipped or flagged on query ``q`` (and did not undo)."""
        return {pid: set(kinds) for pid, kinds in self.mark_notes(q).items()}

    def mark_notes(self, q: int) -> dict[int, dict[str, str]]:
        """Each skipped or flagged passage of query ``q``: its latest reason or note by
        kind ("" for a flag without a note)."""
        found: dict[int, dict[str, str]] = {}
        for _, passage, kind, note, _ in standing_marks(
            self.project.conn, self.annotator, self.catalog.queries[q].row_id
        ):
            found.setdefault(self.catalog.pid(passage), {})[kind] = note or ""
        return found

    def review(self) -> list[ReviewRow]:
        """Every passage this annotator skipped or flagged (and did not undo), newest
        first; a passage both skipped and flagged is listed once for each."""
        self.ensure_counts()  # the grades in view; the runs are not needed
        rows: list[ReviewRow] = []
        seen: set[tuple[int, int, str]] = set()
        for query_ext, passage, kind, note, at in reversed(
            all_marks(self.project.conn, self.annotator)
        ):
            q = self.catalog.query_by_ext(query_ext)
            if q is None:
                continue
            pid = self.catalog.pid(passage)
            if (q, pid, kind) in seen:
                continue
            seen.add((q, pid, kind))
            grade = self.book.grade_of(q, pid)
            rows.append(ReviewRow(q, pid, query_ext, passage, kind, note or "", grade, at))
        return rows

    def _titles(self, pids: list[int]) -> dict[int, str]:
        found = load_passages(self.project, self.catalog, pids)
        return {pid: p.title for pid, p in found.items()}
