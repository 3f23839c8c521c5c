"""The grading app with an assignment (issue 30), through Pilot: ``g`` serves the
annotator's assigned queries first, in their order; the Queries screen lists only them
with ``y`` (remappable) and says how far the annotator is; the status line says
``your assignment: N of M queries done``, counted anew when a grade finishes a query, in
a browser tab's locked app as in ``raglabel label``; snapshots at 80x24, 120x32 and
200x50 (``tests/app/__snapshots__/test_assignment_app/``). Without an assignment
nothing of it shows."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Static

from raglabel.session.assignment_queue import AssignmentQueue, DoneRead
from raglabel.session.grading import GradingSession
from raglabel.session.options import AppOptions
from raglabel.storage.assignments import done_queries, record
from raglabel.storage.audit import draw
from raglabel.storage.project import Project
from raglabel.tui import app as app_module
from raglabel.tui.app import GradingApp, create_app
from raglabel.tui.screens.grade import GradeScreen
from raglabel.tui.screens.queries import QueriesScreen
from raglabel.tui.widgets.query_table import QueryTable
from raglabel.tui.widgets.status import SaveMark

ME = "ann"  # the demo annotator (tests/conftest.py)
SIZE = (140, 40)
SHARE = ["q27", "q22"]  # Ann's, in serving order (not file order)
SIZES = {"80x24": (80, 24), "120x32": (120, 32), "200x50": (200, 50)}


def assign(db: Path, shares: dict[str, list[str]]) -> None:
    with Project.open(db) as project:
        record(project, shares, overlap=1, seed=None, audit=False)


@pytest.fixture
def db(demo_db: Path) -> Path:
    assign(demo_db, {ME: SHARE, "bob": ["q01", "q02"]})
    return demo_db


def status(screen: GradeScreen) -> str:
    return str(screen.query_one(SaveMark).render())


def head(screen: QueriesScreen) -> str:
    return str(screen.query_one("#queries-head", Static).render())


def listed(screen: QueriesScreen) -> list[str]:
    table = screen.query_one(QueryTable)
    return [table.row_at(position).ext_id for position in range(table.row_count)]


def done(app: GradingApp) -> int:
    """How many of Ann's queries the file says she has done (not the session's count)."""
    return len(done_queries(app.session.project.conn, ME, 20))


async def ready(app: GradingApp, pilot: Pilot[Any]) -> None:
    """The runs read and scored, and the worker's count of the assignment landed."""
    await pilot.pause()
    while not app.session.runs_scored or _counting(app):
        await pilot.pause(0.02)
    await pilot.pause()


def _counting(app: GradingApp) -> bool:
    standing = app.session.assignment_standing()
    return standing is not None and standing[0] is None


async def test_the_first_paint_leaves_the_count_to_a_worker(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Queries screen paints without reading which assigned queries are done (the
    pools of the whole share); a worker reads them on its own connection, and the header
    says the count once it lands, nobody pressing a key."""
    asides: list[str] = []
    here: list[str] = []
    real_aside = AssignmentQueue.read_aside
    real_read = AssignmentQueue.read

    def aside(self: AssignmentQueue, path: Path) -> DoneRead | None:
        asides.append(threading.current_thread().name)
        return real_aside(self, path)

    def read(self: AssignmentQueue, conn: sqlite3.Connection) -> None:
        if not self.known:
            here.append(threading.current_thread().name)
        real_read(self, conn)

    monkeypatch.setattr(AssignmentQueue, "read_aside", aside)
    monkeypatch.setattr(AssignmentQueue, "read", read)
    app = create_app(AppOptions(project=db, annotator=ME))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        screen = app.screen
        assert isinstance(screen, QueriesScreen)
        assert "your assignment: 0 of 2 queries done" in head(screen)
        assert len(asides) == 1 and asides[0] != threading.main_thread().name
        assert here == []  # nothing read it on the app's thread


async def test_g_serves_the_assignment_first_and_the_status_counts_it(db: Path) -> None:
    app = create_app(AppOptions(project=db, annotator=ME))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        ext = [q.ext_id for q in app.session.catalog.queries]
        app.open_query(ext.index("q25"))  # unassigned, with holes of its own
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, GradeScreen)
        assert status(screen) == "your assignment: 0 of 2 queries done"
        await pilot.press("g")
        await pilot.pause()
        visited: list[str] = []
        while (expected := app.session.assignment_hole(screen.qi)) is not None:
            assert (screen.qi, screen.current) == (expected.query, expected.pid)
            if not visited or visited[-1] != ext[screen.qi]:
                visited.append(ext[screen.qi])
            await pilot.press("3")
            await pilot.pause()
            # Counted anew with the grade that finishes a query, before any other key.
            assert status(screen).endswith(f"your assignment: {done(app)} of 2 queries done")
            await pilot.press("g")
            await pilot.pause()
        assert visited == SHARE
        assert done(app) == 2
        assert status(screen) == "your assignment: 2 of 2 queries done"
        # Done, the queue goes on as it always did.
        expected = app.session.next_hole(screen.qi)
        await pilot.press("g")
        await pilot.pause()
        assert expected is not None and (screen.qi, screen.current) == (
            expected.query,
            expected.pid,
        )


async def test_the_status_line_keeps_the_assignment_before_the_audit(db: Path) -> None:
    with Project.open(db) as project:
        draw(project, 2, seed=5)
    app = create_app(AppOptions(project=db, annotator=ME))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        app.open_query(0)
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, GradeScreen)
        assert status(screen) == "your assignment: 0 of 2 queries done · audit 0/2 complete"


async def test_g_on_the_queries_screen_opens_the_assignment(db: Path) -> None:
    app = create_app(AppOptions(project=db, annotator=ME))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await pilot.press("g")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, GradeScreen)
        assert app.session.catalog.queries[screen.qi].ext_id == SHARE[0]
        served = app.session.assignment_hole(screen.qi)
        assert served is not None and screen.current == served.pid


async def test_g_serves_the_assignment_before_the_runs_are_read(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = GradingSession.open(AppOptions(project=db, annotator=ME), background=True)
    # The runs never come in: a big project's would still be on their way.
    monkeypatch.setattr(session, "start_runs", lambda: None)
    app = create_app(session.options, session)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert not session.runs_scored
        await pilot.press("g")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, GradeScreen)
        assert session.catalog.queries[screen.qi].ext_id == SHARE[0]
        assert not session.runs_scored


async def test_y_lists_only_the_assignment_and_back(db: Path) -> None:
    app = create_app(AppOptions(project=db, annotator=ME))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        screen = app.screen
        assert isinstance(screen, QueriesScreen)
        everything = listed(screen)
        assert len(everything) == 30
        assert "your assignment: 0 of 2 queries done (y: only those)" in head(screen)
        await pilot.press("y")
        # Listed in the chosen sort (file order here), not the serving order.
        assert listed(screen) == ["q22", "q27"]
        assert "your assignment: 0 of 2 queries done, only those shown (y: all)" in head(screen)
        # With the words filter too: both must hold.
        await pilot.press("slash", *"q2", "enter")
        await pilot.pause()
        assert listed(screen) == ["q22", "q27"]
        await pilot.press("escape")
        await pilot.press("y")
        assert listed(screen) == everything
        assert "(y: only those)" in head(screen)


async def test_an_assignment_taken_away_takes_its_filter_with_it(db: Path) -> None:
    app = create_app(AppOptions(project=db, annotator=ME))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        screen = app.screen
        assert isinstance(screen, QueriesScreen)
        await pilot.press("y")
        assert listed(screen) == ["q22", "q27"]
        assign(db, {"bob": ["q22"]})  # the lead assigns again, without Ann
        app.action_reload()
        await pilot.pause()
        assert len(listed(screen)) == 30
        assert "assignment" not in head(screen)
        # y asks for a filter again, and there is none to give.
        await pilot.press("y")
        assert len(listed(screen)) == 30
        notes = [str(n.message) for n in app._notifications]
        assert (
            f"No queries are assigned to ann; the lead gives some with raglabel assign {db}"
            " --annotators A,B --overlap K (their names, and how many of them grade each"
            " query)."
        ) in notes


async def test_the_filter_key_is_remappable(db: Path) -> None:
    app = create_app(AppOptions(project=db, annotator=ME, keymap={"mine": "z"}))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        screen = app.screen
        assert isinstance(screen, QueriesScreen)
        await pilot.press("y")
        assert len(listed(screen)) == 30
        await pilot.press("z")
        assert listed(screen) == ["q22", "q27"]
        assert "(z: all)" in head(screen)


async def test_without_an_assignment_nothing_of_it_shows(demo_db: Path) -> None:
    assign(demo_db, {"bob": ["q25"]})  # someone else's
    app = create_app(AppOptions(project=demo_db, annotator=ME))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        screen = app.screen
        assert isinstance(screen, QueriesScreen)
        assert "assignment" not in head(screen)
        await pilot.press("y")
        assert len(listed(screen)) == 30
        notes = [str(n.message) for n in app._notifications]
        assert (
            f"No queries are assigned to ann; the lead gives some with raglabel assign {demo_db}"
            " --annotators A,B --overlap K (their names, and how many of them grade each"
            " query)."
        ) in notes
        await pilot.press("g")
        await pilot.pause()
        grade = app.screen
        assert isinstance(grade, GradeScreen)
        assert status(grade) == ""
        expected = app.session.next_hole(0)
        assert expected is not None and (grade.qi, grade.current) == (
            expected.query,
            expected.pid,
        )


async def test_a_browser_tabs_locked_app_says_the_same(db: Path) -> None:
    # How raglabel serve starts the app of a tab opened by an invite for bob.
    app = create_app(AppOptions(project=db, annotator="bob", locked=True))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        screen = app.screen
        assert isinstance(screen, QueriesScreen)
        assert "your assignment: 0 of 2 queries done" in head(screen)
        await pilot.press("g")
        await pilot.pause()
        grade = app.screen
        assert isinstance(grade, GradeScreen)
        assert app.session.catalog.queries[grade.qi].ext_id == "q01"
        assert status(grade) == "your assignment: 0 of 2 queries done"


# -- snapshots -------------------------------------------------------------------------


async def _graded(pilot: Pilot[Any]) -> None:
    """The first assigned pair served by g and graded: the status line keeps the count
    and says the grade was saved."""
    app = pilot.app
    assert isinstance(app, GradingApp)
    await ready(app, pilot)
    await pilot.press("g")
    await pilot.pause()
    await pilot.press("3")
    await pilot.pause()


async def _mine(pilot: Pilot[Any]) -> None:
    app = pilot.app
    assert isinstance(app, GradingApp)
    await ready(app, pilot)
    await pilot.press("y")
    await pilot.pause()


SCENARIOS = {"grade": _graded, "queries": _mine}


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("screen", list(SCENARIOS))
def test_the_assignment_at_every_size(db: Path, snap_compare: Any, screen: str, size: str) -> None:
    app = create_app(AppOptions(project=db, annotator=ME))
    assert snap_compare(app, terminal_size=SIZES[size], run_before=SCENARIOS[screen])


@contextlib.asynccontextmanager
async def bobs_queries(
    db: Path,
) -> AsyncIterator[tuple[GradingApp, Pilot[Any], QueriesScreen]]:
    """Bob's app on its first screen, the Queries screen, with everything read."""
    app = create_app(AppOptions(project=db, annotator="bob"))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        screen = app.screen
        assert isinstance(screen, QueriesScreen)
        yield app, pilot, screen


async def test_an_assign_by_the_lead_reaches_an_open_app_at_g(db: Path) -> None:
    # The tester's case: Bob's app is open on his 2 queries; the lead assigns again (a
    # record() on a connection of this test's, as another process would), giving q01,
    # Bob's first, to Dave. At the next g Bob's app says so, counts the new share and
    # serves from it.
    async with bobs_queries(db) as (app, pilot, screen):
        assert "your assignment: 0 of 2 queries done" in head(screen)
        assign(db, {ME: SHARE, "bob": ["q02", "q03", "q04"], "dave": ["q01"]})
        await pilot.press("g")
        await pilot.pause()
        grade = app.screen
        assert isinstance(grade, GradeScreen)
        assert app.session.catalog.queries[grade.qi].ext_id == "q02"
        assert status(grade).endswith("your assignment: 0 of 3 queries done")
        notes = [str(n.message) for n in app._notifications]
        assert notes.count("your assignment changed: now 3 queries") == 1
        # On the Grade screen too, and told once only.
        assign(db, {ME: SHARE, "bob": ["q03"]})
        await pilot.press("g")
        await pilot.pause()
        assert app.session.catalog.queries[grade.qi].ext_id == "q03"
        assert status(grade).endswith("your assignment: 0 of 1 query done")
        notes = [str(n.message) for n in app._notifications]
        assert notes.count("your assignment changed: now 1 query") == 1
        assert notes.count("your assignment changed: now 3 queries") == 1


async def test_an_assign_by_the_lead_reaches_an_open_app_by_itself(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No key pressed: the app looks for a new assign every ASSIGN_CHECK_S (10 s; a tenth
    # of a second here), on the Queries screen and on the Grade screen alike.
    monkeypatch.setattr(app_module, "ASSIGN_CHECK_S", 0.1)
    async with bobs_queries(db) as (app, pilot, screen):
        assign(db, {ME: SHARE, "bob": ["q02", "q03", "q04"]})
        await pilot.pause(0.5)
        assert "your assignment: 0 of 3 queries done" in head(screen)
        notes = [str(n.message) for n in app._notifications]
        assert notes == ["your assignment changed: now 3 queries"]
        app.open_query(2, None)
        await pilot.pause()
        grade = app.screen
        assert isinstance(grade, GradeScreen)
        assign(db, {ME: SHARE, "bob": ["q03"]})
        await pilot.pause(0.5)
        assert status(grade).endswith("your assignment: 0 of 1 query done")
        notes = [str(n.message) for n in app._notifications]
        assert notes == [
            "your assignment changed: now 3 queries",
            "your assignment changed: now 1 query",
        ]


async def test_the_reload_command_tells_of_a_new_assignment(db: Path) -> None:
    async with bobs_queries(db) as (app, pilot, screen):
        assign(db, {ME: SHARE, "bob": ["q05", "q06", "q07", "q08"]})
        app.action_reload()
        await ready(app, pilot)
        assert "your assignment: 0 of 4 queries done" in head(screen)
        notes = [str(n.message) for n in app._notifications]
        assert notes == ["your assignment changed: now 4 queries"]


async def test_the_empty_view_hint_knows_people_an_assign_created(db: Path) -> None:
    # Bob has an assignment and no grade: no typo to catch, so no hint.
    app = create_app(AppOptions(project=db, annotator="bob"))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        assert [str(n.message) for n in app._notifications] == []
    # A name nobody has: the hint names those with grades and those with an assignment.
    app = create_app(AppOptions(project=db, annotator="bbo"))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        notes = [str(n.message) for n in app._notifications]
        assert notes == [
            "No grades by 'bbo' yet. Annotators in this file (with grades or an assignment):"
            " ann, bob (switch with ctrl+p)."
        ]


def test_one_query_is_one_query() -> None:
    from raglabel.tui.widgets.status import assignment_text

    assert assignment_text(0, 1) == "your assignment: 0 of 1 query done"
    assert assignment_text(1, 2) == "your assignment: 1 of 2 queries done"
