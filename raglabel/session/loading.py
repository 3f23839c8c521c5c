"""The background load of a grading session: a big project's candidates, grades and
runs, read in a thread of their own while the app is already in use.

``BackgroundLoad`` owns that thread and everything that keeps its results true when they
land: the generation counter (grades read again meanwhile make its reads stale), the
queries read on their own before the counts were in, and the writes this session made
meanwhile, which are put again on what the thread read. It reports each stage that lands
("counts", then "runs") through a callback, called from the thread; the app turns it into
a message, so nothing polls. The session puts the results in place on its own thread:
nothing here writes to the catalog or the book.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from threading import Event, RLock
from typing import Literal, TypeAlias

import numpy as np
from numpy.typing import NDArray

from raglabel.metrics.config import MetricConfig
from raglabel.session.catalog import (
    Catalog,
    RunLists,
    load_runs,
    name_late_entries,
    pool_pairs,
)
from raglabel.session.gradebook import GradeBook, entry_grades, late_for
from raglabel.session.live_metrics import score_in_chunks
from raglabel.storage.labels import last_event_id, own_grade_rows, resolved_grade_rows
from raglabel.storage.project import Project

#: What lands, in this order: the candidates and grades, then the runs (scored).
Stage: TypeAlias = Literal["counts", "runs"]


@dataclass(frozen=True)
class Counted:
    """The candidates and the grades as the thread read them (the book's, and this
    annotator's own when not blind)."""

    pairs: tuple[NDArray[np.int64], NDArray[np.int64]]  # (query index, pid)
    sizes: NDArray[np.int64]  # candidates per query
    grades: NDArray[np.int64]
    own: NDArray[np.int64] | None
    book: GradeBook  # filled from ``grades`` here: seconds of numpy off the app's thread
    generation: int  # the session's reload count when the thread started
    # The newest event when the reads began: every event up to it is in them; a later
    # one (this session's own, written meanwhile) may be or not.
    before: int


@dataclass  # the thread fills in its scores after reading
class LoadedRuns:
    runs: list[RunLists]
    run_grades: list[NDArray[np.int8]]
    generation: int
    # The figures the session's rescoring gives on the snapshot: at cutoff ``k``, from
    # the grade counts ``counts`` and ``run_grades``; holes None when a top K needs naming.
    k: int
    counts: NDArray[np.int64]
    # Both None until the thread scored them (and if it could not: closing, an error).
    ra: NDArray[np.float64] | None
    holes: NDArray[np.int64] | None


@dataclass(frozen=True)
class Write:
    """A grade change this session wrote while the counts were being read."""

    event_id: int
    query: int
    pid: int
    own: int | None  # this annotator's grade of the pair afterwards


@dataclass(frozen=True)
class CountsLanding:
    """The counts as they land, with what the session must do again on top of them."""

    counted: Counted
    # Read since the grades were last read again: else the session reads them anew.
    current: bool
    # Queries read on their own before the counts were in, read again as the file is now:
    # another window or annotator may have graded them after the thread's snapshot.
    early: frozenset[int]
    # This session's writes the thread's reads may predate, oldest first.
    replay: tuple[Write, ...]


@dataclass(frozen=True)
class RunsLanding:
    loaded: LoadedRuns
    current: bool  # as ``CountsLanding.current``


class BackgroundLoad:
    """The candidates, grades and runs still to come, and the thread that reads them."""

    def __init__(self, *, pending: bool) -> None:
        # Still to come: not yet read, or read but not put in place by the session.
        self.counting = pending  # candidates and grades (read before the runs)
        self.waiting = pending  # the runs, and so every figure
        self.generation = 0  # grades read again (``reread``) since the session opened
        self._counts: Future[Counted] | None = None
        self._runs: Future[LoadedRuns] | None = None
        self._early: set[int] = set()
        self._meanwhile: list[Write] = []
        self._closing = Event()  # set by close: the thread stops scoring
        # Landed stages, and how many of them the callback was told of.
        self._lock = RLock()
        self._landed: list[Stage] = []
        self._told = 0
        self._report: Callable[[Stage], None] | None = None

    @property
    def started(self) -> bool:
        return self._runs is not None

    def start(
        self,
        path: Path,
        catalog: Catalog,
        *,
        annotator: str,
        blind: bool,
        k: int,
        config: MetricConfig,
    ) -> None:
        """Read whatever is still to come in another thread; nothing if it is running."""
        if not self.waiting or self._runs is not None:
            return
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="raglabel-runs")
        # Counts first: the progress column and its sort need them, and they take a
        # fraction of the runs' time.
        counts: Future[Counted] | None = Future() if self.counting else None
        self._counts = counts
        if counts is not None:
            counts.add_done_callback(lambda _: self._landed_stage("counts"))
        self._runs = pool.submit(
            _read_pools_and_runs,
            counts,
            path,
            catalog,
            annotator=annotator,
            blind=blind,
            generation=self.generation,
            k=k,  # the session's set_k waits for the runs: K stays until they land
            config=config,
            stop=self._closing,
        )
        self._runs.add_done_callback(lambda _: self._landed_stage("runs"))
        pool.shutdown(wait=False)

    # -- reporting ---------------------------------------------------------------------

    def watch(self, report: Callable[[Stage], None]) -> None:
        """Call ``report`` with each stage as it lands, from the thread that read it (and
        at once with any that landed before this call), each stage once."""
        with self._lock:
            self._report = report
        self._tell()

    def _landed_stage(self, stage: Stage) -> None:
        if self._closing.is_set():  # cancelled, or landing as the app goes away
            return
        with self._lock:
            self._landed.append(stage)
        self._tell()

    def _tell(self) -> None:
        # Reported while the lock is held: the app's watch and the reading thread may both
        # tell at once, and each stage must reach the app in the order it landed (runs after
        # counts). A report only posts a message; the lock is re-entrant for one that asks
        # back.
        with self._lock:
            report = self._report
            if report is None:
                return
            stages = self._landed[self._told :]
            self._told = len(self._landed)
            for stage in stages:
                report(stage)

    # -- what the session asks ---------------------------------------------------------

    @property
    def counts_ready(self) -> bool:
        """Candidates and grades are read (``take_counts`` will not wait)."""
        return not self.counting or (self._counts is not None and self._counts.done())

    @property
    def runs_ready(self) -> bool:
        """Candidates, grades and runs are read (``take_runs`` will not wait)."""
        return not self.waiting or (self._runs is not None and self._runs.done())

    def is_early(self, q: int) -> bool:
        """Query ``q`` was read on its own while the counts were still to come."""
        return q in self._early

    def read_early(self, q: int) -> None:
        """The session read query ``q``'s pool and grades on its own."""
        self._early.add(q)

    def note_write(self, write: Write) -> None:
        """Keep a write made before the counts landed, to put again on them."""
        if self.counting:
            self._meanwhile.append(write)

    def reread(self) -> None:
        """The session reads every grade again: what the thread reads before now is stale
        (the session reads its grades anew when it lands), and so are the queries read
        early and the writes kept, which the new reads hold."""
        self.generation += 1
        self._early.clear()
        self._meanwhile.clear()

    def take_counts(self) -> CountsLanding:
        """Wait for the candidates and grades (the thread must be started), and hand
        them over with what must be done again on top of them."""
        assert self.counting and self._counts is not None
        counted = self._counts.result()
        self._counts = None
        self.counting = False
        early = frozenset(self._early)
        # Those written after the reads began, on a query not read again anyway.
        replay = tuple(
            write
            for write in self._meanwhile
            if write.event_id > counted.before and write.query not in early
        )
        self._early.clear()
        self._meanwhile.clear()
        return CountsLanding(counted, counted.generation == self.generation, early, replay)

    def take_runs(self) -> RunsLanding:
        """Wait for the runs (the counts taken first), and hand them over."""
        assert self.waiting and not self.counting and self._runs is not None
        loaded = self._runs.result()
        self._runs = None
        self.waiting = False
        return RunsLanding(loaded, loaded.generation == self.generation)

    def close(self) -> None:
        # A thread already reading cannot be cancelled, and the interpreter waits for it
        # at exit: it stops at its next chunk of scoring instead.
        self._closing.set()
        for pending in (self._counts, self._runs):
            if pending is not None:
                pending.cancel()


# Each reader has its own connection: the app's connection belongs to the app's thread.
# The collector rests while the counts are read: millions of grades hold no cycle, and
# collections walking them again and again slowed the reading.


def _read_pools_and_runs(
    counts: Future[Counted] | None,
    path: Path,
    catalog: Catalog,
    *,
    annotator: str,
    blind: bool,
    generation: int,
    k: int,
    config: MetricConfig,
    stop: Event,
) -> LoadedRuns:
    """Candidates and grades (into ``counts``, as soon as they are read: the progress
    column waits for them), then the runs. One snapshot for both: the run entries' grades
    must be the book's as read, whatever another process grades meanwhile. The grades
    are taken as arrays before the book is handed over: the app's thread changes the book
    from then on, and the grades it makes meanwhile reach the runs through the session."""
    with Project.reader(path) as reader, reader.snapshot():
        loaded = _read_in_snapshot(
            reader, counts, catalog, annotator=annotator, blind=blind, generation=generation, k=k
        )
    # Out of the snapshot (it holds back the app's checkpoints) for the numpy that follows.
    _score(loaded, catalog, config, stop)
    return loaded


def _read_in_snapshot(
    reader: Project,
    counts: Future[Counted] | None,
    catalog: Catalog,
    *,
    annotator: str,
    blind: bool,
    generation: int,
    k: int,
) -> LoadedRuns:
    """The counts (handed to ``counts`` as soon as they are read) and the runs, in the
    reader's snapshot."""
    counted = None
    if counts is not None and counts.set_running_or_notify_cancel():
        try:
            counted = _read_counts(reader, catalog, annotator, blind, generation)
            table = counted.book.grades.table()
            grade_counts = counted.book.counts.copy()
            counts.set_result(counted)
        except BaseException as exc:
            counts.set_exception(exc)
            raise
    if counted is None:
        counted = _read_counts(reader, catalog, annotator, blind, generation)
        table = counted.book.grades.table()
        grade_counts = counted.book.counts
    return _read_runs(reader, catalog, table, grade_counts, generation=generation, k=k)


def _read_counts(
    reader: Project, catalog: Catalog, annotator: str, blind: bool, generation: int
) -> Counted:
    collecting = gc.isenabled()
    gc.disable()
    try:
        conn = reader.conn
        before = last_event_id(conn)
        pairs = pool_pairs(catalog, reader)
        grades = own_grade_rows(conn, annotator) if blind else resolved_grade_rows(conn)
        own = None if blind else own_grade_rows(conn, annotator)
        sizes = np.bincount(pairs[0], minlength=len(catalog.queries)).astype(np.int64)
        book = GradeBook(catalog)
        # No pid was handed out yet (nothing named moved in), and the catalog's pairs are
        # the app thread's to set: both are given.
        book.load(grades, score=False, moved={}, pairs=pairs)
        return Counted(pairs, sizes, grades, own, book, generation, before)
    finally:
        if collecting:
            gc.enable()


def _read_runs(
    reader: Project,
    catalog: Catalog,
    table: tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]],
    counts: NDArray[np.int64],
    *,
    generation: int,
    k: int,
) -> LoadedRuns:
    """The runs as pids, with their entries' grades from ``table`` (the book's grades as
    (query, pid, grade) arrays, read in the same snapshot). Their pids are the rows the
    rankings store; the app's thread names the rest when it needs them, and puts queries
    opened meanwhile in as it showed them."""
    runs = load_runs(reader, catalog)
    q, pids, grades = table
    late = late_for(runs, pids)
    if late.any():
        # A graded passage that got its row after a run was stored (found by search,
        # named by a later label file) may be an entry stored as 0: found by its id.
        name_late_entries(reader, catalog, runs, q[late], pids[late])
    run_grades = entry_grades(runs, q, pids, grades)
    # Warm the import the first grade needs, here rather than on the annotator's key.
    import raglabel.storage.grades  # noqa: F401

    return LoadedRuns(runs, run_grades, generation, k, counts, None, None)


def _score(loaded: LoadedRuns, catalog: Catalog, config: MetricConfig, stop: Event) -> None:
    """Score the runs on the thread's snapshot (``loaded.ra``, ``loaded.holes``), not on
    the app's thread when they land. Nothing if the session closes meanwhile; nothing
    either if scoring fails here: the app's thread then scores them all, as it did."""
    try:
        found = score_in_chunks(
            catalog.queries,
            loaded.counts,
            loaded.runs,
            loaded.run_grades,
            k=loaded.k,
            config=config,
            stop=stop,
        )
    except Exception:  # scored again on the app's thread, where an error is seen
        return
    if found is not None:
        loaded.ra, loaded.holes = found
