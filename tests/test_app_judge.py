"""The judge inside the grading app: suggestions shown apart from grades, ``A`` with its
confirmation, and a judge run for the open query in the background (against the
loopback chat-completions server) while grading goes on."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from test_app import ME, UNGRADED, add_suggestion, drive, events, open_query, status_text
from textual.pilot import Pilot
from textual.widgets import Static

from raglabel.cli.main import main
from raglabel.tui.app import GradingApp
from raglabel.tui.screens.confirm import ConfirmScreen
from raglabel.tui.screens.grade import GradeScreen

if TYPE_CHECKING:
    from chat_server import ChatServer


def human_rows(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM current_grade").fetchone()[0])


async def suggest_all(db: Path, server: ChatServer, qid: str) -> None:
    """``raglabel judge`` for one query, in a thread: it runs an event loop of its own."""
    args = ["judge", str(db), "--base-url", server.base_url, "--model", "m", "--query", qid]
    assert await asyncio.to_thread(main, args) == 0


@pytest.fixture
def server(chat_server: type[ChatServer]) -> Any:
    with chat_server() as srv:
        yield srv


async def test_accept_all_asks_first_and_no_writes_nothing(
    demo_db: Path, server: ChatServer
) -> None:
    before = human_rows(demo_db)

    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        await suggest_all(demo_db, server, app.session.catalog.queries[UNGRADED].ext_id)
        await open_query(app, pilot, UNGRADED)
        await pilot.press("A")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("1")  # a grading key must not reach the screen below
        await pilot.press("n")
        assert isinstance(app.screen, GradeScreen)

    await drive(demo_db, scenario)
    assert events(demo_db) == []
    assert human_rows(demo_db) == before


async def test_accept_all_grades_only_what_the_annotator_left_open(
    demo_db: Path, server: ChatServer
) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        qid = app.session.catalog.queries[UNGRADED].ext_id
        await suggest_all(demo_db, server, qid)
        screen = await open_query(app, pilot, UNGRADED)
        first = screen.current
        await pilot.press("5")  # the annotator's own grade stays as it is
        await pilot.press("A")
        await pilot.press("y")
        assert isinstance(app.screen, GradeScreen)
        assert "accepted" in status_text(screen)
        rows = {r.pid: r for r in app.session.passages(UNGRADED)}
        assert first is not None and rows[first].own == 5
        assert all(
            r.own == r.suggestion.grade for r in rows.values() if r.pid != first and r.suggestion
        )

    await drive(demo_db, scenario)
    written = events(demo_db)
    assert written[0][2:4] == ("grade", 5) and written[0][5] is None
    assert len(written) > 1
    assert all(row[2] == "grade" and row[5] == 1 for row in written[1:])


async def test_suggestion_shows_its_reason_and_flag(demo_db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        pid = app.session.board.holes(UNGRADED, 5)[0].pid
        add_suggestion(
            app,
            UNGRADED,
            pid,
            grade=4,
            reason="names the cause",
            low=3,
            high=5,
            answers=3,
            flagged="addresses the grader",
        )
        app.open_query(UNGRADED, pid)
        await pilot.pause()
        line = str(app.screen.query_one("#passage-judge", Static).render())
        assert "judge suggests 4" in line and "3-5" in line
        assert "names the cause" in line and "check by hand: addresses the grader" in line

    await drive(demo_db, scenario)


async def test_judge_key_runs_the_judge_in_the_background(
    demo_db: Path, server: ChatServer
) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        # The CLI's first run sets up how the app asks (one other query, so this one
        # still has everything to ask).
        await suggest_all(demo_db, server, app.session.catalog.queries[UNGRADED + 1].ext_id)
        server.latency = 0.05
        screen = await open_query(app, pilot, UNGRADED)
        assert all(r.suggestion is None for r in app.session.passages(UNGRADED))
        await pilot.press("J")
        await pilot.press("3")  # grading goes on while the judge works
        for _ in range(300):
            if app.judging is None:
                break
            await pilot.pause(0.05)
        assert app.judging is None
        await pilot.pause()
        progress = str(screen.query_one("#judge-progress", Static).render())
        assert "new suggestions" in progress and "0 failed" in progress
        rows = app.session.passages(UNGRADED)
        assert all(r.suggestion is not None for r in rows)
        # The grade typed while the judge worked stands, whatever the judge said.
        assert [r.own for r in rows if r.own is not None] == [3]

    await drive(demo_db, scenario)
    assert [row[2:4] for row in events(demo_db)] == [("grade", 3)]


async def test_judge_key_without_a_setup_says_how(demo_db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        await open_query(app, pilot, UNGRADED)
        await pilot.press("J")
        await pilot.pause()
        assert app.judging is None
        messages = [n.message for n in app._notifications]
        assert any("raglabel judge DB --base-url URL" in m for m in messages)

    await drive(demo_db, scenario)
    assert ME  # the demo annotator graded nothing here through the app
