"""The runs landing: the thread that reads them scores every query on its own snapshot,
and the app's thread scores again only what changed meanwhile. What is shown must be
what a full recompute now gives, and what a session opened without the thread gives."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from raglabel.session import loading
from raglabel.session.catalog import Catalog, RunLists
from raglabel.session.grading import GradingSession, QueryColumns
from raglabel.session.live_metrics import LiveMetrics
from raglabel.session.options import AppOptions
from raglabel.storage.grades import GradeEvent, record
from raglabel.storage.project import Project

ME = "ann"  # the demo's annotator
OTHER = "bea"


class Gate:
    """Holds the runs' thread once it has read the runs, until opened: what is done
    meanwhile happens after the thread's snapshot."""

    def __init__(self) -> None:
        self.reading = threading.Event()
        self.open = threading.Event()


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[Gate]:
    held = Gate()
    load = loading.load_runs

    def held_load(reader: Project, catalog: Catalog) -> list[RunLists]:
        held.reading.set()
        runs = load(reader, catalog)
        assert held.open.wait(30), "the test never let the runs' thread go on"
        return runs

    monkeypatch.setattr(loading, "load_runs", held_load)
    yield held
    held.open.set()


def _session(db: Path, *, blind: bool, background: bool, k: int = 5) -> GradingSession:
    options = AppOptions(project=db, annotator=ME, blind=blind, cutoffs=(k, 10, 20))
    return GradingSession.open(options, background=background)


def _candidate(db: Path, q: int, *, graded: bool) -> tuple[str, str]:
    """Query ``q``'s (0-based) first candidate with (or without) a grade of the demo's
    annotator, as (query id, passage id)."""
    sql = """
        SELECT query.ext_id, passage.ext_id FROM candidate
        JOIN query ON query.id = candidate.query_id
        JOIN passage ON passage.id = candidate.passage_id
        WHERE query.id = ? AND EXISTS (
            SELECT 1 FROM current_grade g WHERE g.query_id = candidate.query_id
            AND g.passage_id = candidate.passage_id) = ?
        ORDER BY candidate.best_rank, passage.ext_id LIMIT 1
    """
    with sqlite3.connect(db) as conn:
        found = conn.execute(sql, (q + 1, graded)).fetchone()
    assert found is not None
    return found[0], found[1]


def _other_grades(db: Path, pairs: list[tuple[str, str, int]]) -> None:
    with Project.open(db) as project:
        for query, passage, grade in pairs:
            record(
                project,
                GradeEvent(
                    query=query, passage=passage, annotator=OTHER, kind="grade", grade=grade
                ),
            )


def _columns(session: GradingSession) -> QueryColumns:
    found = session.query_columns()
    return QueryColumns(
        found.graded.copy(),
        found.candidates.copy(),
        found.holes.copy(),
        found.ra_nwg.copy(),
        found.scored,
        found.counted,
    )


def _same(mine: QueryColumns, theirs: QueryColumns) -> None:
    # Exact: the same float64 bits, NaN where NA.
    assert mine.ra_nwg.shape == theirs.ra_nwg.shape
    assert np.array_equal(mine.ra_nwg, theirs.ra_nwg, equal_nan=True)
    assert mine.holes.tolist() == theirs.holes.tolist()
    assert mine.graded.tolist() == theirs.graded.tolist()
    assert mine.candidates.tolist() == theirs.candidates.tolist()
    assert mine.scored and theirs.scored


def _full_recompute(session: GradingSession) -> QueryColumns:
    session._rescore()  # what every query's figures are now, from scratch
    return _columns(session)


def _no_whole_rescore(monkeypatch: pytest.MonkeyPatch) -> None:
    """Landing must not score every query again on the app's thread."""

    def refuse(self: LiveMetrics, k: int) -> None:
        raise AssertionError("scored every query on the app's thread")

    monkeypatch.setattr(LiveMetrics, "ra_nwg_all", refuse)
    monkeypatch.setattr(LiveMetrics, "hole_counts", refuse)


def _hole_pairs(session: GradingSession, queries: range) -> list[tuple[int, int]]:
    found = []
    for q in queries:
        hole = session.hole_here(q)
        if hole is not None:
            found.append((q, hole.pid))
    return found


@pytest.mark.parametrize("blind", [True, False])
def test_landing_scores_only_what_changed_and_shows_a_full_recompute(
    demo_db: Path, gate: Gate, blind: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another annotator's grades, some on pairs the demo's annotator graded too: the
    # resolved grades (not blind) differ from the own ones.
    _other_grades(
        demo_db,
        [
            (*_candidate(demo_db, 0, graded=True), 1),
            (*_candidate(demo_db, 1, graded=True), 5),
            (*_candidate(demo_db, 25, graded=False), 3),
        ],
    )
    session = _session(demo_db, blind=blind, background=True)
    try:
        early = _hole_pairs(session, range(20, 24))  # read on their own, before the counts
        session.grade(*early[0], 4)
        session.start_runs()
        assert gate.reading.wait(30)
        # While the thread holds its snapshot: grades before and after the counts land,
        # a clear, and queries opened (their entries named as shown).
        for q, pid in early[1:2]:
            session.grade(q, pid, 2)
        session.ensure_counts()
        later = _hole_pairs(session, range(24, 29))
        for (q, pid), grade in zip(later, [5, 1, 3], strict=False):
            session.grade(q, pid, grade)
        session.clear(*early[0])
        session.passages(29)
        assert not session.runs_ready
        gate.open.set()
        _no_whole_rescore(monkeypatch)
        session.ensure_runs()
        landed = _columns(session)
        monkeypatch.undo()
        _same(landed, _full_recompute(session))
        reference = _session(demo_db, blind=blind, background=False)
        try:
            _same(landed, _columns(reference))
            for q in [0, 1, 20, 21, 24, 25, 26, 29]:
                assert repr(session.panel(q)) == repr(reference.panel(q))
        finally:
            reference.close()
    finally:
        gate.open.set()
        session.close()


@pytest.mark.parametrize("blind", [True, False])
def test_grades_another_process_writes_while_the_runs_load(
    demo_db: Path, gate: Gate, blind: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # After the thread's snapshot: neither it nor the session's book holds them (the
    # session reads them on a reload), and landing shows the book's figures.
    session = _session(demo_db, blind=blind, background=True)
    try:
        session.start_runs()
        assert gate.reading.wait(30)
        _other_grades(demo_db, [(*_candidate(demo_db, 3, graded=True), 5)])
        query, passage = _candidate(demo_db, 27, graded=False)
        with Project.open(demo_db) as project:
            record(
                project,
                GradeEvent(query=query, passage=passage, annotator=ME, kind="grade", grade=4),
            )
        session.ensure_counts()
        gate.open.set()
        _no_whole_rescore(monkeypatch)
        session.ensure_runs()
        landed = _columns(session)
        monkeypatch.undo()
        _same(landed, _full_recompute(session))
    finally:
        gate.open.set()
        session.close()


@pytest.mark.parametrize("blind", [True, False])
def test_k_changed_while_the_runs_load_waits_for_them(
    demo_db: Path, gate: Gate, blind: bool
) -> None:
    session = _session(demo_db, blind=blind, background=True)
    try:
        session.start_runs()
        assert gate.reading.wait(30)
        timer = threading.Timer(0.2, gate.open.set)
        timer.start()
        assert session.cycle_k() == 10
        timer.join()
        landed = _columns(session)
        _same(landed, _full_recompute(session))
        reference = _session(demo_db, blind=blind, background=False, k=10)
        try:
            _same(landed, _columns(reference))
        finally:
            reference.close()
    finally:
        gate.open.set()
        session.close()


@pytest.mark.parametrize("blind", [True, False])
def test_a_reload_while_the_runs_load_scores_every_query_again(
    demo_db: Path, gate: Gate, blind: bool
) -> None:
    session = _session(demo_db, blind=blind, background=True)
    try:
        session.start_runs()
        assert gate.reading.wait(30)
        session.ensure_counts()
        _other_grades(
            demo_db,
            [
                (*_candidate(demo_db, 2, graded=True), 2),
                (*_candidate(demo_db, 28, graded=False), 4),
            ],
        )
        session.reload()  # another annotator's work read again: the snapshot is old
        gate.open.set()
        session.ensure_runs()
        landed = _columns(session)
        _same(landed, _full_recompute(session))
        reference = _session(demo_db, blind=blind, background=False)
        try:
            _same(landed, _columns(reference))
        finally:
            reference.close()
    finally:
        gate.open.set()
        session.close()


def test_a_grade_moved_within_a_query_is_scored_though_its_counts_stay(
    demo_db: Path, gate: Gate, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A grade cleared on a passage in the top K and the same grade given to one outside
    it: the query's grade counts are the snapshot's, its run grades are not."""
    session = _session(demo_db, blind=True, background=True)
    try:
        session.start_runs()
        assert gate.reading.wait(30)
        session.ensure_counts()
        q = next(
            q
            for q in range(len(session.catalog.queries))
            if any(
                r.grade is not None and min(filter(None, r.ranks), default=99) <= 5
                for r in session.passages(q)
            )
            and any(r.grade is None for r in session.passages(q))
        )
        rows = session.passages(q)
        top = next(
            r for r in rows if r.grade is not None and min(filter(None, r.ranks), default=99) <= 5
        )
        other = next(r for r in rows if r.grade is None)
        counts = session.book.counts[q].copy()
        session.clear(q, top.pid)
        assert top.grade is not None
        session.grade(q, other.pid, top.grade)
        assert session.book.counts[q].tolist() == counts.tolist()
        gate.open.set()
        _no_whole_rescore(monkeypatch)
        session.ensure_runs()
        landed = _columns(session)
        monkeypatch.undo()
        _same(landed, _full_recompute(session))
        reference = _session(demo_db, blind=True, background=False)
        try:
            _same(landed, _columns(reference))
        finally:
            reference.close()
    finally:
        gate.open.set()
        session.close()


def test_a_session_closed_while_the_runs_load_stops_scoring(
    demo_db: Path, gate: Gate, monkeypatch: pytest.MonkeyPatch
) -> None:
    from raglabel.session import live_metrics

    scored: list[int] = []
    score = live_metrics.ra_nwg_of

    def counted(*args: object, **kwargs: object) -> object:
        scored.append(1)
        return score(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(live_metrics, "ra_nwg_of", counted)
    session = _session(demo_db, blind=False, background=True)
    session.start_runs()
    assert gate.reading.wait(30)
    pending = session.loading._runs
    assert pending is not None
    session.close()  # the thread is reading: it cannot be cancelled
    gate.open.set()
    loaded = pending.result(timeout=30)
    assert loaded.ra is None and scored == []


@pytest.mark.parametrize("blind", [True, False])
def test_scoring_that_fails_in_the_thread_is_done_on_landing(
    demo_db: Path, blind: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from raglabel.session import live_metrics

    def broken(*args: object, **kwargs: object) -> object:
        raise MemoryError("no room to score here")

    monkeypatch.setattr(live_metrics, "score_in_chunks", broken)
    monkeypatch.setattr(loading, "score_in_chunks", broken)
    session = _session(demo_db, blind=blind, background=True)
    try:
        session.ensure_runs()
        assert session.runs_scored
        reference = _session(demo_db, blind=blind, background=False)
        try:
            _same(_columns(session), _columns(reference))
        finally:
            reference.close()
    finally:
        session.close()
