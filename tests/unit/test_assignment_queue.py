"""The grading session's queue with an assignment (issue 30): the annotator's assigned
queries first, in their serving order, each until they graded its pool down to the
deepest cutoff (as ``storage.assignments.done_queries`` says), then the audit's drawn
queries, then the usual order; only the order changes, and nothing at all without an
assignment; all of it before the background load brings the runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from raglabel.session import assignment_queue
from raglabel.session.grading import GradingSession
from raglabel.session.options import AppOptions
from raglabel.storage.assignments import done_queries, record
from raglabel.storage.audit import draw, pooled, waiting_pairs
from raglabel.storage.project import Project

ME = "ann"  # the demo annotator (tests/conftest.py)
DEPTH = 20  # the deepest of the app's default cutoffs


def assign(db: Path, shares: dict[str, list[str]], overlap: int = 1) -> None:
    with Project.open(db) as project:
        record(project, shares, overlap=overlap, seed=None, audit=False)


def opened(db: Path, annotator: str = ME, *, background: bool = False) -> GradingSession:
    return GradingSession.open(AppOptions(project=db, annotator=annotator), background=background)


def grade_whole(session: GradingSession, qid: str, grade: int = 3) -> int:
    """Grade every pair query ``qid`` still waits on for the session's annotator, through
    the session as the app would; how many."""
    q = session.catalog.query_by_ext(qid)
    assert q is not None
    row = session.catalog.queries[q].row_id
    waiting = waiting_pairs(session.project.conn, [row], DEPTH, annotator=session.annotator)[row]
    for pair in waiting:
        session.grade(q, session.catalog.pid(pair.passage), grade)
    return len(waiting)


def walk(session: GradingSession, start: int, members: set[str]) -> list[str]:
    """The queries ``g`` serves from ``start``, grading each pair served 3, while it
    serves one of ``members``; each query once, in the order served."""
    ext = [q.ext_id for q in session.catalog.queries]
    visited: list[str] = []
    q = start
    while True:
        hole = session.next_hole(q)
        assert hole is not None
        if ext[hole.query] not in members:
            return visited
        if not visited or visited[-1] != ext[hole.query]:
            assert ext[hole.query] not in visited, "a query left the queue and came back"
            visited.append(ext[hole.query])
        # Listed with its query's passages, wherever it ranks.
        assert hole.pid in {row.pid for row in session.passages(hole.query)}
        session.grade(hole.query, hole.pid, 3)
        q = hole.query


@pytest.fixture
def session(demo_db: Path) -> Iterator[GradingSession]:
    made = opened(demo_db)
    yield made
    made.close()


def test_without_an_assignment_the_queue_is_as_it_was(demo_db: Path) -> None:
    # Someone else's assignment is no assignment of Ann's.
    assign(demo_db, {"bob": ["q25", "q03"]})
    session = opened(demo_db)
    try:
        assert session.assignment_progress() is None
        for q in (0, 5, 24, 25):
            assert session.assignment_hole(q) is None
            assert session.served_hole(q) == session.audit_hole(q) is None
            here = session.hole_here(q)
            if here is not None:
                assert session.next_hole(q) == here
    finally:
        session.close()


def test_the_queue_serves_the_assignment_in_its_order_until_each_is_done(demo_db: Path) -> None:
    share = ["q27", "q04", "q22"]  # not file order: the share's order is the queue's
    assign(demo_db, {ME: share, "bob": ["q01"]})
    session = opened(demo_db)
    try:
        start = session.catalog.query_by_ext("q10")  # unassigned
        assert start is not None
        assert session.assignment_progress() == (0, 3)
        assert walk(session, start, set(share)) == share
        assert session.assignment_progress() == (3, 3)
        # The session's count is the stored one, which the lead's commands read.
        assert done_queries(session.project.conn, ME, DEPTH) == set(share)
        # Done, the queue goes on as before: nothing of the assignment is served again.
        assert session.assignment_hole(start) is None
    finally:
        session.close()


def test_a_query_leaves_the_queue_with_its_last_pair_and_not_before(demo_db: Path) -> None:
    assign(demo_db, {ME: ["q24", "q26"]})
    session = opened(demo_db)
    try:
        first = session.catalog.query_by_ext("q24")
        assert first is not None
        served: list[int] = []
        while (hole := session.assignment_hole(first)) is not None and hole.query == first:
            assert session.assignment_progress() == (0, 2)
            served.append(hole.pid)
            session.grade(hole.query, hole.pid, 2)
        row = session.catalog.queries[first].row_id
        pool = pooled(session.project.conn, [row], DEPTH)[row]
        assert len(served) == len(set(served)) == len(pool)
        assert session.assignment_progress() == (1, 2)
        assert hole is not None and session.catalog.queries[hole.query].ext_id == "q26"
    finally:
        session.close()


def test_a_clear_or_an_undo_puts_a_done_query_back(demo_db: Path) -> None:
    assign(demo_db, {ME: ["q24", "q26"]})
    session = opened(demo_db)
    try:
        assert grade_whole(session, "q26") > 0
        assert session.assignment_progress() == (1, 2)
        q = session.catalog.query_by_ext("q26")
        assert q is not None
        change = session.undo()  # the last of those grades
        assert change is not None and change.query == q
        assert session.assignment_progress() == (0, 2)
        hole = session.assignment_hole(q)
        assert hole is not None and (hole.query, hole.pid) == (q, change.pid)
        session.grade(q, hole.pid, 5)
        assert session.assignment_progress() == (1, 2)
        session.clear(q, hole.pid)
        assert session.assignment_progress() == (0, 2)
        # The stored count agrees each time: the lead reads that one.
        assert done_queries(session.project.conn, ME, DEPTH) == set()
    finally:
        session.close()


def test_a_query_started_is_finished_first(demo_db: Path) -> None:
    assign(demo_db, {ME: ["q23", "q28", "q21"]})
    session = opened(demo_db)
    try:
        second = session.catalog.query_by_ext("q28")
        assert second is not None
        here = session.hole_here(second)
        assert here is not None
        session.grade(second, here.pid, 1)  # Ann starts the second of her queries
        hole = session.next_hole(second)
        assert hole is not None and hole.query == second
    finally:
        session.close()


def test_the_query_under_the_cursor_is_not_served_before_it_is_started(demo_db: Path) -> None:
    # The tester's case: Carol's list starts q07, q25, q24, and the cursor rests on q01,
    # far down her list; then on q04. Neither is started: g serves q07 from both, and
    # to Bob, who shares her queries, the same.
    share = ["q07", "q25", "q24", "q04", "q01"]
    assign(demo_db, {"carol": share, "bob": share}, overlap=2)
    for name in ("carol", "bob"):
        session = opened(demo_db, name)
        try:
            for cursor in ("q01", "q04"):
                q = session.catalog.query_by_ext(cursor)
                assert q is not None
                hole = session.next_hole(q)
                assert hole is not None
                assert session.catalog.queries[hole.query].ext_id == "q07"
        finally:
            session.close()


def test_another_persons_grades_do_not_finish_my_share(demo_db: Path) -> None:
    # Overlap 2: Bob grading q23 whole leaves it waiting for Ann's grades (the audit
    # would count it complete).
    assign(demo_db, {ME: ["q23", "q29"], "bob": ["q23"]}, overlap=2)
    bob = opened(demo_db, "bob")
    try:
        assert bob.assignment_progress() == (0, 1)
        assert grade_whole(bob, "q23") > 0
        assert bob.assignment_progress() == (1, 1)
    finally:
        bob.close()
    session = opened(demo_db)
    try:
        assert session.assignment_progress() == (0, 2)
        hole = session.next_hole(0)
        assert hole is not None and session.catalog.queries[hole.query].ext_id == "q23"
    finally:
        session.close()


def test_the_assignment_comes_before_the_audit_sample(demo_db: Path) -> None:
    with Project.open(demo_db) as project:
        members = list(draw(project, 2, seed=5).draw.drawn)
    share = [qid for qid in ("q30", "q21", "q22") if qid not in members][:2]
    assign(demo_db, {ME: share})
    session = opened(demo_db)
    try:
        start = next(
            q
            for q, query in enumerate(session.catalog.queries)
            if query.ext_id not in {*members, *share}
        )
        assert walk(session, start, {*share, *members}) == [*share, *members]
    finally:
        session.close()


def test_unassigned_queries_stay_open(demo_db: Path) -> None:
    assign(demo_db, {ME: ["q25"]})
    session = opened(demo_db)
    try:
        other = session.catalog.query_by_ext("q26")
        assert other is not None
        assert len(session.query_rows()) == len(session.catalog.queries)
        here = session.hole_here(other)
        assert here is not None
        change = session.grade(other, here.pid, 4)
        assert change.grade == 4
        assert session.assignment_progress() == (0, 1)
        # The queue still serves the assignment first, from wherever Ann is.
        hole = session.next_hole(other)
        assert hole is not None and session.catalog.queries[hole.query].ext_id == "q25"
    finally:
        session.close()


def test_a_switch_of_annotator_serves_their_assignment(demo_db: Path) -> None:
    assign(demo_db, {ME: ["q25"], "bob": ["q26", "q27"]})
    session = opened(demo_db)
    try:
        assert session.assignment_progress() == (0, 1)
        session.switch_annotator("bob")
        assert session.assignment_progress() == (0, 2)
        hole = session.next_hole(0)
        assert hole is not None and session.catalog.queries[hole.query].ext_id == "q26"
    finally:
        session.close()


def test_work_in_another_window_counts_after_a_reload(session: GradingSession) -> None:
    assign(session.project.path or Path(), {ME: ["q25", "q26"]})
    session.reload()  # the assign came after the session opened
    assert session.assignment_progress() == (0, 2)
    other = opened(session.project.path or Path())
    try:
        grade_whole(other, "q25")
    finally:
        other.close()
    assert session.assignment_progress() == (0, 2)  # read once, until a reload
    session.reload()
    assert session.assignment_progress() == (1, 2)


def test_a_grade_that_accepted_the_judges_suggestion_finishes_nothing(demo_db: Path) -> None:
    assign(demo_db, {ME: ["q25"]})
    session = opened(demo_db)
    try:
        q = session.catalog.query_by_ext("q25")
        assert q is not None
        row = session.catalog.queries[q].row_id
        pairs = waiting_pairs(session.project.conn, [row], DEPTH, annotator=ME)[row]
        for pair in pairs:
            session.grade(q, session.catalog.pid(pair.passage), 3, accepted=True)
        # As the audit counts people's grades: the judge's, accepted, are not Ann's.
        assert session.assignment_progress() == (0, 1)
        hole = session.assignment_hole(q)
        assert hole is not None and hole.query == q
        # Graded by Ann herself, the same pairs finish it.
        assert grade_whole(session, "q25") == len(pairs)
        assert session.assignment_progress() == (1, 1)
    finally:
        session.close()


def test_the_assignment_needs_no_runs_from_the_background_load(demo_db: Path) -> None:
    assign(demo_db, {ME: ["q28", "q29"]})
    session = opened(demo_db, background=True)
    try:
        assert session.loading.waiting and session.loading.counting
        assert session.assignment_progress() == (0, 2)
        hole = session.served_hole(0)
        assert hole is not None and session.catalog.queries[hole.query].ext_id == "q28"
        assert hole.pid in {row.pid for row in session.passages(hole.query)}
        session.grade(hole.query, hole.pid, 4)
        # Nothing waited for the runs: the load is still to come, untouched.
        assert session.loading.waiting and not session.loading.started
        session.ensure_runs()
        assert session.book.grade_of(hole.query, hole.pid) == 4
    finally:
        session.close()


def test_on_a_file_the_done_queries_wait_for_a_worker_not_the_first_paint(
    demo_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the Queries screen's first paint asks (the members, done unknown) reads no
    pool; a worker's read on its own connection lands the count; asked once only."""
    share = ["q24", "q26", "q27"]
    assign(demo_db, {ME: share})
    session = opened(demo_db)
    try:
        assert grade_whole(session, "q26") > 0  # before the queue exists: read from the file
        session.reload()
        reads: list[str] = []
        real = assignment_queue.done_queries

        def counted(*args: object, **kwargs: object) -> set[str]:
            reads.append("read")
            return real(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(assignment_queue, "done_queries", counted)
        assert session.assignment_standing() == (None, 3)
        assert reads == []
        wanted = session.assignment_to_read()
        assert wanted is not None
        assert session.assignment_to_read() is None  # one worker at a time
        queue, path = wanted
        landed = queue.read_aside(path)
        assert landed is not None and landed.done == {"q26"}
        assert session.land_assignment(landed)
        assert session.assignment_standing() == (1, 3) == session.assignment_progress()
        assert reads == ["read"]
        assert session.assignment_to_read() is None  # known: nothing to read
    finally:
        session.close()


def test_a_grade_made_while_the_worker_reads_is_not_lost_when_it_lands(demo_db: Path) -> None:
    assign(demo_db, {ME: ["q24", "q26"]})
    session = opened(demo_db)
    try:
        wanted = session.assignment_to_read()
        assert wanted is not None
        queue, path = wanted
        # The worker's snapshot begins before the grades that finish q24.
        early = queue.read_aside(path)
        assert early is not None and early.done == set()
        assert grade_whole(session, "q24") > 0
        assert session.land_assignment(early)
        assert session.assignment_progress() == (1, 2)
        # A read for an assignment replaced since (a reload) is dropped.
        session.reload()
        assert not session.land_assignment(early)
        assert session.assignment_standing() == (None, 2)
        assert session.assignment_progress() == (1, 2)  # read at once where needed
    finally:
        session.close()


def test_g_before_the_worker_lands_reads_the_done_queries_itself(demo_db: Path) -> None:
    share = ["q24", "q26"]
    assign(demo_db, {ME: share})
    session = opened(demo_db)
    try:
        assert grade_whole(session, "q24") > 0
        session.reload()
        assert session.assignment_standing() == (None, 2)
        hole = session.assignment_hole(0)
        assert hole is not None and session.catalog.queries[hole.query].ext_id == "q26"
        assert session.assignment_standing() == (1, 2)
    finally:
        session.close()


def test_an_assign_made_while_the_session_is_open_is_picked_up(demo_db: Path) -> None:
    # The tester's case: Bob has 20 queries; the lead assigns again, giving Bob 15 and
    # q07, his first, to Dave. Bob's open session learns it at the next g.
    covered = [f"q{i:02d}" for i in range(1, 31)]
    bobs = ["q07", *[q for q in covered if q != "q07"][:19]]
    assign(demo_db, {"bob": bobs, "carol": covered[20:]})
    session = opened(demo_db, "bob")
    try:
        assert session.assignment_progress() == (0, 20)
        assert session.assignment_changed() is None  # nothing new: no notice
        assign(demo_db, {"bob": bobs[1:16], "dave": ["q07"]})  # another connection
        assert session.assignment_progress() == (0, 20)  # not read again until asked
        assert session.assignment_changed() == 15
        assert session.assignment_progress() == (0, 15)
        q07 = session.catalog.query_by_ext("q07")
        assert q07 is not None
        hole = session.next_hole(q07)
        assert hole is not None
        assert session.catalog.queries[hole.query].ext_id == bobs[1]
        assert session.assignment_changed() is None  # told once
        # An assign that leaves Bob's share as it is changes nothing of his.
        assign(demo_db, {"bob": bobs[1:16], "dave": ["q07", "q30"]})
        assert session.assignment_changed() is None
        # A reload reads the assignment anew, and the change is still told after it.
        assign(demo_db, {"bob": bobs[1:3]})
        session.reload()
        assert session.assignment_progress() == (0, 2)
        assert session.assignment_changed() == 2
        # Taken away altogether: told too, as none.
        assign(demo_db, {"dave": ["q07"]})
        assert session.assignment_changed() == 0
        assert session.assignment_progress() is None
    finally:
        session.close()


def test_a_switch_of_annotator_is_no_change_of_assignment(demo_db: Path) -> None:
    assign(demo_db, {ME: ["q25"], "bob": ["q26", "q27"]})
    session = opened(demo_db)
    try:
        assert session.assignment_progress() == (0, 1)
        session.switch_annotator("bob")
        assert session.assignment_changed() is None
        assert session.assignment_progress() == (0, 2)
    finally:
        session.close()
