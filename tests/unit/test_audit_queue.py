"""The grading session's queue with an audit sample: the drawn queries first, in draw
order, each until a person graded its pool down to the deepest cutoff, then the usual
order; its progress as ``raglabel audit --list`` counts it; and all of it before the
background load brings the runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from raglabel.session.grading import GradingSession
from raglabel.session.options import AppOptions
from raglabel.storage.audit import audit, draw, waiting_pairs
from raglabel.storage.grades import GradeEvent, record
from raglabel.storage.project import Project

ME = "ann"  # the demo annotator (tests/conftest.py)


def drawn(db: Path, size: int, seed: int) -> list[str]:
    with Project.open(db) as project:
        return list(draw(project, size, seed).draw.drawn)


@pytest.fixture
def session(demo_db: Path) -> Iterator[GradingSession]:
    opened = GradingSession.open(AppOptions(project=demo_db, annotator=ME))
    yield opened
    opened.close()


def test_without_a_draw_the_queue_is_as_it_was(session: GradingSession) -> None:
    assert session.audit_progress() is None
    for q in (0, 5, 25):
        assert session.audit_hole(q) is None
        here = session.hole_here(q)
        if here is not None:
            assert session.next_hole(q) == here


def test_the_queue_serves_the_drawn_queries_in_draw_order(demo_db: Path) -> None:
    members = drawn(demo_db, 3, seed=12)
    session = GradingSession.open(AppOptions(project=demo_db, annotator=ME))
    try:
        ext = [q.ext_id for q in session.catalog.queries]
        start = next(q for q in range(len(ext)) if ext[q] not in members)
        assert session.audit_progress() == (0, 3)
        visited: list[str] = []
        q = start
        while True:
            hole = session.next_hole(q)
            assert hole is not None
            if ext[hole.query] not in members:
                break  # the audit is done: the usual queue goes on
            if not visited or visited[-1] != ext[hole.query]:
                visited.append(ext[hole.query])
            # Listed with its query's passages, wherever it ranks.
            assert hole.pid in {row.pid for row in session.passages(hole.query)}
            session.grade(hole.query, hole.pid, 3)
            q = hole.query
        assert visited == members
        assert session.audit_progress() == (3, 3)
    finally:
        session.close()
    # The app's count is the command's: the app's deepest cutoff is audit's default depth.
    with Project.open(demo_db) as project:
        state = audit(project.conn, depth=20)
    assert list(state.complete) == members and state.incomplete == ()


def test_a_drawn_query_started_is_finished_first(demo_db: Path) -> None:
    members = drawn(demo_db, 3, seed=4)
    session = GradingSession.open(AppOptions(project=demo_db, annotator=ME))
    try:
        second = session.catalog.query_by_ext(members[1])
        assert second is not None
        hole = session.next_hole(second)
        assert hole is not None and hole.query == second
    finally:
        session.close()


def test_another_persons_grades_complete_a_drawn_query(demo_db: Path) -> None:
    members = drawn(demo_db, 2, seed=30)
    session = GradingSession.open(AppOptions(project=demo_db, annotator=ME))
    try:
        first = session.catalog.query_by_ext(members[0])
        assert first is not None
        assert session.audit_progress() == (0, 2)
        # Bob grades the first drawn query whole, in another process as it were.
        with Project.open(demo_db) as project:
            row = session.catalog.queries[first].row_id
            for waiting in waiting_pairs(project.conn, [row], 20)[row]:
                record(
                    project,
                    GradeEvent(query=members[0], passage=waiting.passage, annotator="bob", grade=2),
                )
        session.reload()
        assert session.audit_progress() == (1, 2)
        # Blind, Ann has not graded those pairs, yet the queue moves on to the second.
        hole = session.next_hole(first)
        assert hole is not None
        assert session.catalog.queries[hole.query].ext_id == members[1]
    finally:
        session.close()


def test_the_audit_needs_no_runs_from_the_background_load(demo_db: Path) -> None:
    members = drawn(demo_db, 2, seed=1)
    session = GradingSession.open(AppOptions(project=demo_db, annotator=ME), background=True)
    try:
        assert session.loading.waiting and session.loading.counting
        assert session.audit_progress() == (0, 2)
        hole = session.audit_hole(0)
        assert hole is not None
        assert session.catalog.queries[hole.query].ext_id == members[0]
        assert hole.pid in {row.pid for row in session.passages(hole.query)}
        session.grade(hole.query, hole.pid, 4)
        # Nothing waited for the runs: the load is still to come, untouched.
        assert session.loading.waiting and not session.loading.started
        session.ensure_runs()
        assert session.book.grade_of(hole.query, hole.pid) == 4
    finally:
        session.close()


def test_a_drawn_query_no_run_covers_is_not_counted(demo_db: Path) -> None:
    # The app's count is the command's here too: such a query completes nothing.
    members = drawn(demo_db, 3, seed=12)
    with Project.open(demo_db) as project:
        project.conn.execute(
            "DELETE FROM ranking WHERE query_id = (SELECT id FROM query WHERE ext_id = ?)",
            (members[0],),
        )
        project.conn.commit()
        state = audit(project.conn, depth=20)
    assert state.uncovered == (members[0],)
    session = GradingSession.open(AppOptions(project=demo_db, annotator=ME))
    try:
        assert session.audit_progress() == (len(state.complete), state.drawn) == (0, 2)
    finally:
        session.close()
