"""Opening a query before the background read of candidates and grades is in: the
Grade screen reads that query's own pool and grades, shows what it shows once they are
in, and grades written meanwhile survive the counts landing."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from test_app import UNGRADED, screen_text
from textual.pilot import Pilot

from raglabel.session import loading
from raglabel.session.grading import GradingSession
from raglabel.session.options import AppOptions
from raglabel.storage.grades import GradeEvent, record
from raglabel.storage.project import Project
from raglabel.tui.app import GradingApp, create_app
from raglabel.tui.screens.grade import GradeScreen
from raglabel.tui.widgets.passage_list import PassageList
from raglabel.tui.widgets.passage_view import PassageView
from raglabel.tui.widgets.query_table import QueryTable

ME = "ann"
OTHER = "bob"


def _session(db: Path, *, blind: bool = True, background: bool = True) -> GradingSession:
    options = AppOptions(project=db, annotator=ME, blind=blind)
    return GradingSession.open(options, background=background)


def _shown(session: GradingSession, q: int) -> str:
    """What the Grade screen shows of query ``q``: its rows, panel, head and queue."""
    shown = (session.passages(q), session.panel(q), session.query_row(q), session.hole_here(q))
    return repr(shown)


def _other_grades(db: Path, q: int) -> None:
    """Another annotator's grades on query ``q``, some against the demo's own."""
    with Project.open(db) as project:
        qid = project.conn.execute("SELECT ext_id FROM query ORDER BY id").fetchall()[q][0]
        pids = project.conn.execute(
            "SELECT p.ext_id FROM candidate c JOIN passage p ON p.id = c.passage_id"
            " JOIN query q ON q.id = c.query_id WHERE q.ext_id = ? ORDER BY p.ext_id",
            (qid,),
        ).fetchall()
        for i, (pid,) in enumerate(pids[:6]):
            event = GradeEvent(
                query=qid, passage=pid, annotator=OTHER, kind="grade", grade=1 + i % 5
            )
            record(project, event)


@pytest.mark.parametrize("blind", [True, False])
def test_a_query_opened_before_the_counts_shows_what_it_shows_after(
    demo_db: Path, blind: bool
) -> None:
    queries = (0, 3, 19, 25)  # graded by the demo's annotator, and not
    for q in queries:
        _other_grades(demo_db, q)
    session = _session(demo_db, blind=blind)
    reference = _session(demo_db, blind=blind, background=False)
    try:
        before = {q: _shown(session, q) for q in queries}
        # Nothing waited for the counts: the thread was not even started.
        assert not session.counted and not session.loading.started
        assert before == {q: _shown(reference, q) for q in queries}
        session.ensure_runs()
        assert {q: _shown(session, q) for q in queries} == before
    finally:
        session.close()
        reference.close()


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """The background read holds its counts (read in its snapshot) until set: writes
    made meanwhile are not in them."""
    release = threading.Event()
    original = loading._read_counts

    def read_counts(*args: Any, **kwargs: Any) -> loading.Counted:
        found = original(*args, **kwargs)
        release.wait(30)
        return found

    monkeypatch.setattr(loading, "_read_counts", read_counts)
    return release


@pytest.mark.parametrize("blind", [True, False])
def test_writes_before_the_counts_land_are_kept_when_they_do(
    demo_db: Path, held: threading.Event, blind: bool
) -> None:
    _other_grades(demo_db, 2)
    session = _session(demo_db, blind=blind)
    try:
        session.start_runs()
        q = 2
        rows = session.passages(q)
        a, b, c = (row.pid for row in rows[:3])
        session.grade(q, a, 5)
        session.grade(q, b, 1)
        session.grade(q, b, 2)
        session.clear(q, c)  # a grade of the demo's annotator goes
        session.grade(25, session.passages(25)[0].pid, 4)
        session.flag(q, a, "check")
        session.undo()  # the flag
        session.undo()  # the grade on query 25
        assert not session.counts_ready
        before = {p: _shown(session, p) for p in (q, 25)}
        held.set()
        session.ensure_runs()
        after = {p: _shown(session, p) for p in (q, 25)}
        reference = _session(demo_db, blind=blind, background=False)
        try:
            assert after == before == {p: _shown(reference, p) for p in (q, 25)}
            assert repr(session.query_columns()) == repr(reference.query_columns())
            assert session.book.counts.tolist() == reference.book.counts.tolist()
            for mine, theirs in zip(
                session.book.run_grades, reference.book.run_grades, strict=True
            ):
                assert mine.tolist() == theirs.tolist()
            if not blind:
                assert session._own == reference._own
        finally:
            reference.close()
    finally:
        held.set()
        session.close()


def hold_counts(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Hold the background reads of candidates and grades before they begin, until the
    returned event is set."""
    begin = threading.Event()
    original = loading._read_counts

    def read_counts(*args: Any, **kwargs: Any) -> loading.Counted:
        begin.wait(30)
        return original(*args, **kwargs)

    monkeypatch.setattr(loading, "_read_counts", read_counts)
    return begin


def test_a_write_the_background_reads_saw_is_not_put_again_over_newer_ones(
    demo_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """This session grades a pair, another annotator grades it after, and only then do
    the background reads begin: they hold both, and what they resolve is what shows."""
    begin = hold_counts(monkeypatch)
    session = _session(demo_db, blind=False)
    try:
        session.start_runs()
        q = 2
        pid = session.passages(q)[0].pid
        session.grade(q, pid, 5)
        with Project.open(demo_db) as project:
            qid = session.catalog.queries[q].ext_id
            ext = session.catalog.passage_ext[pid]
            record(
                project, GradeEvent(query=qid, passage=ext, annotator=OTHER, kind="grade", grade=1)
            )
        begin.set()
        session.ensure_runs()
        reference = _session(demo_db, blind=False, background=False)
        try:
            assert _shown(session, q) == _shown(reference, q)
            assert session.book.grade_of(q, pid) == reference.book.grade_of(q, pid)
            assert session._own == reference._own
        finally:
            reference.close()
    finally:
        begin.set()
        session.close()


# -- the Grade screen kept across opens ---------------------------------------------------


async def _settled(app: GradingApp, pilot: Pilot[Any]) -> None:
    while not app.session.runs_scored:
        await pilot.pause(0.02)
    await pilot.pause()


async def _shown_after(db: Path, steps: list[str | int]) -> tuple[str, list[GradeScreen]]:
    """The screen's text after ``steps`` (a query index opens it, a string is keys),
    and every Grade screen that was on top meanwhile."""
    seen: list[GradeScreen] = []
    app = create_app(AppOptions(project=db, annotator=ME))
    async with app.run_test(size=(120, 32)) as pilot:
        await _settled(app, pilot)
        for step in steps:
            if isinstance(step, int):
                app.open_query(step)
                await pilot.pause()
            else:
                await pilot.press(*step.split())
            if isinstance(app.screen, GradeScreen):
                seen.append(app.screen)
        await pilot.pause()
        return screen_text(app), seen


@pytest.mark.parametrize(
    "before",
    [
        [0, "4 j 2 q"],  # graded, left with q
        [5, "3 q"],  # the same query: its save line goes as a new screen's would
        [UNGRADED, "s", "dup enter", "escape"],  # a skip's reason, left with Escape
        [3, "f", "enter", "j q"],  # a flag
    ],
)
async def test_a_reopened_grade_screen_shows_what_a_new_one_shows(
    demo_db: Path, before: list[str | int]
) -> None:
    q = 5
    fresh, _ = await _shown_after(demo_db, [*before, q])
    # The same file, opened anew: what a Grade screen built for q shows.
    again, _ = await _shown_after(demo_db, [q])
    assert fresh == again
    _, seen = await _shown_after(demo_db, [*before, q, "q", 7, "escape", q])
    assert len({id(screen) for screen in seen}) == 1  # one screen, filled anew each time


async def test_a_theme_chosen_while_the_grade_screen_was_away_reaches_it(demo_db: Path) -> None:
    app = create_app(AppOptions(project=demo_db, annotator=ME))
    async with app.run_test(size=(120, 32)) as pilot:
        await _settled(app, pilot)
        app.open_query(0)
        await pilot.pause()
        screen = app.screen
        dark = screen.query_one(PassageList).rich_style
        await pilot.press("q")
        app.open_query(1)  # pushed again, CSS unchanged: not restyled, the same look
        await pilot.pause()
        assert app.screen is screen and screen.query_one(PassageList).rich_style == dark
        await pilot.press("q")
        app.theme = "textual-light"
        await pilot.pause()
        app.open_query(2)
        await pilot.pause()
        assert app.screen is screen
        assert screen.query_one(PassageList).rich_style != dark
        assert (
            screen.query_one(PassageList).rich_style
            == app.screen_stack[-2].query_one(QueryTable).rich_style
        )  # both tables share DataTable's look, in the new theme


async def test_a_grade_screen_reopened_after_a_resize_shows_its_cursor(demo_db: Path) -> None:
    app = create_app(AppOptions(project=demo_db, annotator=ME))
    async with app.run_test(size=(160, 50)) as pilot:
        await _settled(app, pilot)
        q = 25
        app.open_query(q)
        await pilot.pause()
        last = app.screen.query_one(PassageList).order[-1]
        await pilot.press("q")
        # Smaller while the kept screen is off the stack: it is filled at its old size.
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        app.open_query(q, last)
        await pilot.pause()
        await pilot.pause()
        listing = app.screen.query_one(PassageList)
        assert listing.current == last
        row = listing.cursor_row + 1  # under the header line
        top = round(listing.scroll_y)
        assert top + 1 <= row < top + listing.scrollable_content_region.height


async def test_control_characters_in_ids_and_titles_reach_no_terminal(demo_db: Path) -> None:
    odd = "first line\nSECOND\tTAB \x1b[31mRED\r end"
    connection = sqlite3.connect(demo_db)
    with connection:
        connection.execute("UPDATE passage SET title = ?", (odd,))
    connection.close()
    app = create_app(AppOptions(project=demo_db, annotator=ME))
    async with app.run_test(size=(120, 32)) as pilot:
        await _settled(app, pilot)
        app.open_query(0)
        await pilot.pause()
        listing = app.screen.query_one(PassageList)
        drawn = [listing.render_line(y).text for y in range(listing.size.height)]
        assert any("first line SECOND TAB  [31mRED  end" in line for line in drawn)
        for line in drawn:
            assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in line), repr(line)
        view = app.screen.query_one(PassageView)
        title = str(view.border_title)  # (kept as markup)
        assert "first line SECOND" in title
        assert not any(ord(c) < 0x20 for c in title)


async def test_a_grade_made_after_the_background_snapshot_stays_on_an_early_screen(
    demo_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The background reads have begun (their snapshot is taken) when another window
    grades a passage of a query, and the query is opened after that: its early read
    shows the grade, which the counts read from the older snapshot lack. When they
    land, the grade stays, in the rows and in the counts."""
    begin = threading.Event()
    original = loading.last_event_id

    def snapshot_then_wait(conn: sqlite3.Connection) -> int:
        found = original(conn)
        begin.wait(30)
        return found

    monkeypatch.setattr(loading, "last_event_id", snapshot_then_wait)
    q = UNGRADED
    app = create_app(AppOptions(project=demo_db, annotator=ME))
    try:
        async with app.run_test(size=(120, 32)) as pilot:
            await pilot.pause()
            assert not app.session.counts_ready
            query = app.session.catalog.queries[q].ext_id
            with Project.open(demo_db) as project:
                (passage,) = project.conn.execute(
                    "SELECT p.ext_id FROM candidate c JOIN passage p ON p.id = c.passage_id"
                    " JOIN query q ON q.id = c.query_id WHERE q.ext_id = ?"
                    " ORDER BY p.ext_id LIMIT 1",
                    (query,),
                ).fetchone()
                record(
                    project,
                    GradeEvent(query=query, passage=passage, annotator=ME, grade=4),
                )
            app.open_query(q)
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, GradeScreen)
            (pid,) = [p for p in screen.rows if app.session.catalog.passage_ext[p] == passage]
            assert screen.rows[pid].grade == 4  # the early read sees it
            begin.set()
            while not app.session.counted:
                await pilot.pause(0.02)
            await pilot.pause()
            assert screen.rows[pid].grade == 4
            assert screen.query_one(PassageList).cells(pid)[0].plain == "4"
            assert app.session.book.grades[q].get(pid) == 4
            assert app.session.own_grade(q, pid) == 4
    finally:
        begin.set()


async def test_a_showing_grade_screen_takes_the_rows_the_counts_land_with(
    demo_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A query opened before the counts are in shows its own early read; another window
    of the same annotator grades a passage of it before the background reads begin.
    When the counts land, the showing screen's rows are those of the reads, as a screen
    opened now shows them, not the early read's."""
    begin = hold_counts(monkeypatch)
    q = UNGRADED
    app = create_app(AppOptions(project=demo_db, annotator=ME))
    try:
        async with app.run_test(size=(120, 32)) as pilot:
            await pilot.pause()
            assert not app.session.counts_ready
            app.open_query(q)
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, GradeScreen)
            pid = screen.query_one(PassageList).order[3]
            assert screen.rows[pid].grade is None
            with Project.open(demo_db) as project:
                record(
                    project,
                    GradeEvent(
                        query=app.session.catalog.queries[q].ext_id,
                        passage=app.session.catalog.passage_ext[pid],
                        annotator=ME,
                        kind="grade",
                        grade=4,
                    ),
                )
            begin.set()
            while not app.session.counted:
                await pilot.pause(0.02)
            await pilot.pause()
            assert app.screen is screen
            assert screen.rows[pid].grade == 4
            assert screen.query_one(PassageList).cells(pid)[0].plain == "4"
            landed = screen_text(app)
            await _settled(app, pilot)
            await pilot.press("q")
            app.open_query(q, screen.current)
            await pilot.pause()
            assert screen_text(app) == landed  # what the screen opened now shows
    finally:
        begin.set()


async def test_a_landing_between_a_push_and_its_mount_waits_for_the_mount(
    demo_db: Path,
) -> None:
    """The background reads may land in the moment a Grade screen is pushed but not yet
    composed: nothing is shown on it then, and its mounting shows the landed figures."""
    app = create_app(AppOptions(project=demo_db, annotator=ME))
    async with app.run_test(size=(120, 32)) as pilot:
        await _settled(app, pilot)
        app.open_query(UNGRADED)
        screen = app.screen
        assert isinstance(screen, GradeScreen) and not screen.is_mounted
        app._landed_on_screen()  # raised NoMatches: no metrics panel composed yet
        await pilot.pause()
        assert screen.is_mounted and screen.rows
