"""The grading app driven key by key through Pilot, asserting on the project file's rows.

The app is built with ``create_app``, the factory ``raglabel label`` and ``demo`` use.
The last section is the judge inside the app: suggestions shown apart from grades, ``A``
with its confirmation, and a judge run for the open query in the background (against
the loopback chat-completions server) while grading goes on.
"""

from __future__ import annotations

import asyncio
import math
import sqlite3
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from textual import events as textual_events
from textual.command import CommandList
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Static

from raglabel.cli.main import main
from raglabel.formats.report import RunReport
from raglabel.metrics.config import MetricConfig
from raglabel.session.options import AppOptions
from raglabel.tui.app import GradingApp, create_app
from raglabel.tui.screens.adjudicate import AdjudicationScreen
from raglabel.tui.screens.confirm import ConfirmScreen
from raglabel.tui.screens.grade import AHEAD_AFTER_S, GradeScreen
from raglabel.tui.screens.help import HelpScreen
from raglabel.tui.screens.prompt import PromptScreen
from raglabel.tui.screens.queries import QueriesScreen
from raglabel.tui.screens.runs import RunsScreen, _cell
from raglabel.tui.screens.search import SearchScreen
from raglabel.tui.widgets.key_footer import KeyFooter
from raglabel.tui.widgets.passage_list import PassageList
from raglabel.tui.widgets.passage_view import PassageView
from raglabel.tui.widgets.query_table import QueryTable
from raglabel.tui.widgets.status import SaveMark

if TYPE_CHECKING:
    from chat_server import ChatServer

ME = "ann"  # the demo annotator (tests/conftest.py)

ROOT = Path(__file__).resolve().parents[2]
SIZE = (140, 40)
UNGRADED = 25  # the demo grades its first 20 queries only


@pytest.fixture
def db(demo_db: Path) -> Path:
    return demo_db


Scenario = Callable[[GradingApp, Pilot[Any]], Awaitable[None]]


async def drive(
    db: Path, scenario: Scenario, size: tuple[int, int] = SIZE, **options: Any
) -> GradingApp:
    app = create_app(AppOptions(project=db, annotator=ME, **options))
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        # The runs are read in the background; scenarios start once they are shown.
        while not app.session.runs_scored:
            await pilot.pause(0.02)
        await pilot.pause()
        await scenario(app, pilot)
    return app


async def open_query(app: GradingApp, pilot: Pilot[Any], q: int) -> GradeScreen:
    app.open_query(q)
    await pilot.pause()
    assert isinstance(app.screen, GradeScreen)
    return app.screen


def events(db: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT q.ext_id, p.ext_id, e.kind, e.grade, e.note, e.accepted_suggestion,"
            " e.shown_at IS NOT NULL, e.active_ms FROM event e"
            " JOIN query q ON q.id = e.query_id JOIN passage p ON p.id = e.passage_id"
            " WHERE e.origin = 'app' ORDER BY e.id"
        ).fetchall()


def add_suggestion(app: GradingApp, q: int, pid: int, **columns: object) -> None:
    """A judge suggestion for one pair, written straight into the app's project."""
    row = {"model": "judge-1", "created_at": "2026-11-23", **columns}
    app.session.project.conn.execute(
        f"INSERT INTO suggestion (query_id, passage_id, {', '.join(row)})"
        f" VALUES (?, (SELECT id FROM passage WHERE ext_id = ?), {', '.join('?' * len(row))})",
        (
            app.session.catalog.queries[q].row_id,
            app.session.catalog.passage_ext[pid],
            *row.values(),
        ),
    )


def status_text(screen: Any) -> str:
    return str(screen.query_one(SaveMark).render())


async def test_grade_key_saves_then_advances_to_next_ungraded(db: Path) -> None:
    seen: dict[str, Any] = {}

    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        screen = await open_query(app, pilot, UNGRADED)
        first = screen.current
        assert first is not None and screen.rows[first].grade is None
        await pilot.press("4")
        seen["first"] = app.session.catalog.passage_ext[first]
        seen["rows"] = events(db)  # committed before the screen moved on
        seen["moved_to"] = screen.current
        seen["grade_of_next"] = screen.rows[screen.current].grade if screen.current else None
        seen["status"] = status_text(screen)
        seen["table"] = str(screen.query_one(PassageList).cells(first)[0])

    app = await drive(db, scenario)
    (row,) = seen["rows"]
    assert row[:4] == (app.session.catalog.queries[UNGRADED].ext_id, seen["first"], "grade", 4)
    assert row[6] == 1 and row[7] is not None and row[7] >= 0  # shown_at and active time
    assert (
        seen["moved_to"] is not None
        and app.session.catalog.passage_ext[seen["moved_to"]] != seen["first"]
    )
    assert seen["grade_of_next"] is None
    assert "saved" in seen["status"] and "= 4" in seen["status"]
    assert seen["table"] == "4"


async def test_the_passage_a_grade_moves_on_to_is_wrapped_while_one_reads(db: Path) -> None:
    # Its wrap was a sixth of a grade's frame: done ahead, the frame only draws it.
    seen: dict[str, Any] = {}

    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        screen = await open_query(app, pilot, UNGRADED)
        view = screen.query_one(PassageView)
        first = screen.current
        assert first is not None
        await pilot.pause(AHEAD_AFTER_S + 0.2)
        target = screen._next_after(first)
        ahead = view._ahead
        assert target is not None and ahead is not None
        assert ahead.given[0] == app.session.passage(target)
        await pilot.press("3")
        seen["moved_to"], seen["target"] = screen.current, target
        seen["used"] = view._ahead is None
        # The lines drawn are those a wrap of the passage now would make.
        seen["lines"] = [strip.text for strip in view._lines]
        seen["fresh"] = [
            strip.text for strip in view._wrapped(view.marks, view.judge, view.body, view._width)
        ]
        seen["body"] = view.body.plain
        seen["text"] = app.session.passage(target).text

    await drive(db, scenario)
    assert seen["moved_to"] == seen["target"] and seen["used"]
    assert seen["lines"] == seen["fresh"] and seen["body"] == seen["text"]


@pytest.mark.parametrize("grade", [1, 2, 3, 4, 5])
async def test_every_grade_key(db: Path, grade: int) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        await open_query(app, pilot, UNGRADED)
        await pilot.press(str(grade))

    await drive(db, scenario)
    assert [r[2:4] for r in events(db)] == [("grade", grade)]


async def test_clear_undo_and_undo_across_queries(db: Path) -> None:
    seen: dict[str, Any] = {}

    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        screen = await open_query(app, pilot, UNGRADED)
        graded = screen.current
        await pilot.press("5")
        await pilot.press("k")  # back to the passage just graded
        assert screen.current == graded
        await pilot.press("x")
        assert screen.rows[graded].grade is None
        await pilot.press("n")  # another query
        assert screen.qi == UNGRADED + 1
        await pilot.press("u")  # undoes the clear, back on the first query
        seen["after_undo"] = (screen.qi, screen.current, screen.rows[graded].grade)
        seen["graded"] = graded

    await drive(db, scenario)
    assert [r[2:4] for r in events(db)] == [("grade", 5), ("clear", None), ("undo", None)]
    assert seen["after_undo"] == (UNGRADED, seen["graded"], 5)


async def test_moving_keys(db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        screen = await open_query(app, pilot, 0)
        table = screen.query_one(PassageList)
        start = table.cursor_row
        await pilot.press("j")
        assert table.cursor_row == start + 1
        await pilot.press("down", "k")
        assert table.cursor_row == start + 1
        await pilot.press("n")
        assert screen.qi == 1
        await pilot.press("p", "p")
        assert screen.qi == len(app.session.catalog.queries) - 1
        await pilot.press("q")
        assert isinstance(app.screen, QueriesScreen)

    await drive(db, scenario)
    assert events(db) == []


async def test_queue_key_goes_to_the_most_retrieved_hole(db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        screen = await open_query(app, pilot, 0)  # fully graded at K
        expected = app.session.next_hole(0)
        assert expected is not None and expected.query != 0
        await pilot.press("g")
        assert (screen.qi, screen.current) == (expected.query, expected.pid)

    await drive(db, scenario)


async def test_cycle_k_changes_panel_and_queries(db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        screen = await open_query(app, pilot, 0)
        await pilot.press("K")
        assert app.session.k == 10
        assert screen.query_one("#metrics").render() is not None
        assert "K=10" in str(screen.query_one("#query-head").render())
        await pilot.press("q")
        assert "K=10" in str(app.screen.query_one("#queries-head").render())

    await drive(db, scenario)


async def test_accept_records_an_accepted_suggestion(db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        pid = app.session.board.holes(UNGRADED, 5)[0].pid
        add_suggestion(app, UNGRADED, pid, grade=3, reason="partly")
        screen = await open_query(app, pilot, UNGRADED)
        screen.select(pid)
        await pilot.pause()
        await pilot.press("a")
        assert "= 3 (partial), the judge's suggestion accepted" in status_text(screen)

    await drive(db, scenario)
    (row,) = events(db)
    assert row[2:4] == ("grade", 3) and row[5] == 1


async def test_exporting_from_the_app_asks_before_replacing_a_file(db: Path) -> None:
    target = db.with_suffix(".qrels.txt")

    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        app.action_export()
        await pilot.pause()
        assert isinstance(app.screen, PromptScreen)
        await pilot.press("enter")  # the default: beside the project
        await app.workers.wait_for_complete()
        first = target.read_text()
        assert first.count("\n") == app.session.book.counts.sum() > 0
        target.write_text("mine\n")
        for answer in ("n", "y"):
            app.action_export()
            await pilot.pause()
            await pilot.press("enter")
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press(answer)
            await app.workers.wait_for_complete()
            assert target.read_text() == ("mine\n" if answer == "n" else first)

    await drive(db, scenario)


async def test_accept_without_suggestion_writes_nothing(db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        screen = await open_query(app, pilot, UNGRADED)
        await pilot.press("a")
        assert "No judge suggestion" in status_text(screen)

    await drive(db, scenario)
    assert events(db) == []


async def test_skip_asks_a_reason_and_typing_it_grades_nothing(db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        await open_query(app, pilot, UNGRADED)
        await pilot.press("s")
        assert isinstance(app.screen, PromptScreen)
        await pilot.press(*"dup of 12345", "enter")
        assert isinstance(app.screen, GradeScreen)

    await drive(db, scenario)
    assert [r[2:5] for r in events(db)] == [("skip", None, "dup of 12345")]


async def test_escape_cancels_a_skip(db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        await open_query(app, pilot, UNGRADED)
        await pilot.press("s", "4", "escape")
        assert isinstance(app.screen, GradeScreen)

    await drive(db, scenario)
    assert events(db) == []


async def test_flag_with_a_note(db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        screen = await open_query(app, pilot, UNGRADED)
        flagged = screen.current
        await pilot.press("f", *"outdated", "enter")
        assert screen.current == flagged and screen.rows[flagged].flagged

    await drive(db, scenario)
    assert [r[2:5] for r in events(db)] == [("flag", None, "outdated")]


async def test_filter_typing_never_grades(db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        assert isinstance(app.screen, QueriesScreen)
        await pilot.press("slash", *"q2", "5")
        await pilot.pause(0.4)  # applied as you type, after a short pause
        table = app.screen.query_one("#queries", QueryTable)
        assert table.row_count == 1  # q25
        await pilot.press("enter")
        assert table.row_count == 1 and table.has_focus
        await pilot.press("escape")
        assert table.row_count == len(app.session.catalog.queries)
        assert not app.screen.query_one("#filter", Input).display

    await drive(db, scenario)
    assert events(db) == []


async def test_sort_by_holes_puts_the_most_holes_first(db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        screen = app.screen
        assert isinstance(screen, QueriesScreen)
        await pilot.press("o", "o")  # file order -> progress -> holes
        holes = [row.holes for row in screen.rows()]
        assert holes == sorted(holes, reverse=True) and holes[0] > 0

    await drive(db, scenario)


async def test_enter_opens_a_query_and_grades_update_the_queries_screen(db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        table = app.screen.query_one("#queries", QueryTable)
        table.move_cursor(row=UNGRADED)
        await pilot.press("enter")
        assert isinstance(app.screen, GradeScreen) and app.screen.qi == UNGRADED
        await pilot.press("5", "q")
        assert isinstance(app.screen, QueriesScreen)
        progress = str(table.cells(UNGRADED)[1])
        row = app.session.query_row(UNGRADED)
        assert progress == f"{row.graded}/{row.candidates}" and row.graded == 1

    await drive(db, scenario)


@pytest.mark.parametrize(("threshold", "expected"), [(2, "2 or lower"), (1, "1 or lower")])
async def test_help_defines_the_panel_metrics_in_force(
    db: Path, threshold: int, expected: str
) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        await pilot.press("K", "question_mark")
        assert isinstance(app.screen, HelpScreen)
        shown = " ".join(str(static.content) for static in app.screen.query(Static))
        assert f"Harm@10: share of the top 10 graded {expected}" in shown
        assert "RA-nWG@10:" in shown and "Judged@10:" in shown

    await drive(db, scenario, config=MetricConfig(harm_threshold=threshold))


async def test_help_runs_and_palette(db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape", "r")
        assert isinstance(app.screen, RunsScreen)
        await app.workers.wait_for_complete()
        await pilot.pause()
        runs = app.screen.query_one("#standings", DataTable)
        assert runs.row_count == len(app.session.catalog.runs)
        await pilot.press("space", "down", "space", "c")
        await app.workers.wait_for_complete()
        await pilot.pause()
        divergent = app.screen.query_one("#divergent", DataTable)
        assert divergent.display and divergent.row_count > 0
        await pilot.press("enter")
        assert isinstance(app.screen, GradeScreen)
        await pilot.press("ctrl+p")
        assert type(app.screen).__name__ == "CommandPalette"

    await drive(db, scenario)


async def test_a_first_comparison_at_80x24_brings_its_queries_into_view(db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        await pilot.press("r")
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("space", "down", "space", "c")
        await app.workers.wait_for_complete()
        # The comparison's rows are drawn after its worker's message lands, which on a
        # busy host takes more than a frame or two: wait for them (at most 5 s).
        for _ in range(250):
            await pilot.pause(0.02)
            lines = screen_text(app).splitlines()
            if any("difference" in line and "text" in line for line in lines):
                break
        said = next(i for i, line in enumerate(lines) if " vs bm25 on RA-nWG@5" in line)
        header = next(i for i, line in enumerate(lines) if "difference" in line and "text" in line)
        assert said < header < len(lines) - 3  # the sentence, then rows of queries

    await drive(db, scenario, (80, 24))


async def test_remapped_keys(db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        await open_query(app, pilot, UNGRADED)
        await pilot.press("5")  # no longer bound
        await pilot.press("t")

    await drive(db, scenario, keymap={"grade_5": "t"})
    assert [r[2:4] for r in events(db)] == [("grade", 5)]


async def test_a_failed_write_is_shown_and_nothing_moves(db: Path) -> None:
    seen: dict[str, Any] = {}

    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        screen = await open_query(app, pilot, UNGRADED)
        before = screen.current
        app.session.project.conn.execute("PRAGMA query_only = ON")
        await pilot.press("3")
        seen["status"] = status_text(screen)
        seen["same"] = screen.current == before and screen.rows[before].grade is None
        app.session.project.conn.execute("PRAGMA query_only = OFF")

    await drive(db, scenario)
    assert "NOT saved" in seen["status"] and seen["same"]
    assert events(db) == []


async def test_adjudication_view_sets_a_final_grade(db: Path) -> None:
    from raglabel.storage.grades import GradeEvent, record
    from raglabel.storage.project import Project

    with Project.open(db) as project:
        row = project.conn.execute(
            "SELECT q.ext_id, p.ext_id, c.grade FROM current_grade c JOIN query q ON"
            " q.id = c.query_id JOIN passage p ON p.id = c.passage_id WHERE c.grade >= 4 LIMIT 1"
        ).fetchone()
        record(project, GradeEvent(query=row[0], passage=row[1], annotator="bob", grade=1))

    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        screen = app.screen
        assert isinstance(screen, AdjudicationScreen)
        assert [type(s).__name__ for s in app.screen_stack[1:]] == [
            "QueriesScreen",
            "AdjudicationScreen",
        ], "pushed once, not again when the runs are in"
        assert screen.query_one(DataTable).row_count == 1
        query = app.session.catalog.queries[app.session.catalog.query_by_ext(row[0]) or 0]
        assert f"{row[0]} {query.text}" in screen_text(app)  # the question being judged
        await pilot.press("3", "u")  # undone, and the lead stays on the disagreements
        assert app.screen is screen and "undo:" in status_text(screen)
        assert str(screen.query_one(DataTable).get_row_at(0)[-1]) == "·"
        await pilot.press("3")

    await drive(db, scenario, blind=False, adjudicate=True)
    with sqlite3.connect(db) as conn:
        final = conn.execute(
            "SELECT a.name, e.grade FROM event e JOIN annotator a ON a.id = e.annotator_id"
            " WHERE e.origin = 'adjudication'"
        ).fetchall()
        undone = conn.execute(
            "SELECT t.origin FROM event e JOIN event t ON t.id = e.target WHERE e.kind = 'undo'"
        ).fetchall()
    assert final == [(ME, 3), (ME, 3)] and undone == [("adjudication",)]


# -- snapshots ---------------------------------------------------------------------------


def screen_text(app: GradingApp) -> str:
    """The screen as plain text, as a terminal of SIZE would show it."""
    import io

    from rich.console import Console

    width, height = app.size
    console = Console(
        width=width,
        height=height,
        file=io.StringIO(),
        record=True,
        legacy_windows=False,
        color_system=None,
    )
    console.print(app.screen._compositor.render_update(full=True))
    return "\n".join(line.rstrip() for line in console.export_text().splitlines()) + "\n"


async def _runs(app: GradingApp, pilot: Pilot[Any]) -> None:
    await pilot.press("r")
    await app.workers.wait_for_complete()
    await pilot.pause()


async def _grade(app: GradingApp, pilot: Pilot[Any]) -> None:
    await open_query(app, pilot, 0)


async def _help(app: GradingApp, pilot: Pilot[Any]) -> None:
    await pilot.press("question_mark")


async def _queries(app: GradingApp, pilot: Pilot[Any]) -> None:
    await pilot.pause()


@pytest.mark.parametrize(
    ("name", "scenario", "size"),
    [
        ("queries", _queries, SIZE),
        ("grade", _grade, SIZE),
        ("grade-narrow", _grade, (100, 30)),
        ("runs", _runs, SIZE),
        ("help", _help, SIZE),
    ],
)
async def test_screen_snapshots(
    db: Path, name: str, scenario: Scenario, size: tuple[int, int]
) -> None:
    """Each screen at 140x40 (the Grade screen also at 100x30) against
    tests/snapshots/NAME.txt.

    RAGLABEL_UPDATE_SNAPSHOTS=1 rewrites them after a deliberate change of layout.
    """
    import os

    shot: dict[str, str] = {}

    async def capture(app: GradingApp, pilot: Pilot[Any]) -> None:
        await scenario(app, pilot)
        await pilot.pause()
        shot["text"] = screen_text(app)

    await drive(db, capture, size)
    path = ROOT / "tests" / "snapshots" / f"{name}.txt"
    if os.environ.get("RAGLABEL_UPDATE_SNAPSHOTS") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(shot["text"], encoding="utf-8")
    assert path.is_file(), f"no snapshot {path}; run with RAGLABEL_UPDATE_SNAPSHOTS=1"
    assert shot["text"] == path.read_text(encoding="utf-8")


# -- layering ----------------------------------------------------------------------------


def test_widgets_are_handed_their_data() -> None:
    # What a widget may import is the layer contract's (pyproject.toml); reaching
    # for the app would reach the project file all the same.
    for path in (ROOT / "raglabel" / "tui" / "widgets").glob("*.py"):
        source = path.read_text(encoding="utf-8")
        assert "self.app" not in source and ".project" not in source, path


async def test_screens_below_show_grades_made_above_and_q_goes_home(db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        first = await open_query(app, pilot, UNGRADED)
        pid = first.current
        assert pid is not None
        await pilot.press("r")
        await app.workers.wait_for_complete()
        app.open_query(UNGRADED, pid)  # as Enter on a divergent query does
        await pilot.pause()
        second = app.screen
        assert isinstance(second, GradeScreen) and second is not first
        await pilot.press("5", "escape")
        assert isinstance(app.screen, RunsScreen)
        await app.workers.wait_for_complete()
        await pilot.press("escape")
        assert app.screen is first and first.rows[pid].grade == 5
        await pilot.press("r")
        await app.workers.wait_for_complete()
        await pilot.press("q")
        assert isinstance(app.screen, QueriesScreen)

    await drive(db, scenario)
    assert [r[2:4] for r in events(db)] == [("grade", 5)]


async def test_a_key_bar_asked_to_redraw_after_its_screen_left_does_nothing(db: Path) -> None:
    # The bar redraws after a refresh; a second Escape can pop its screen first. That
    # once crashed the app (NoScreen) in CI, one run in many: here the order is forced.
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        first = await open_query(app, pilot, UNGRADED)
        await pilot.press("r")
        await app.workers.wait_for_complete()
        app.open_query(UNGRADED)  # a second Grade screen: the kept one is on the stack
        await pilot.pause()
        bar = app.screen.query_one(KeyFooter)
        await pilot.press("escape")
        await pilot.pause()
        assert not bar.is_attached
        await bar.recompose()
        await pilot.press("escape")
        assert app.screen is first

    await drive(db, scenario)


async def test_reports_finishing_while_the_runs_screen_is_taken_apart_are_dropped(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The order forced: the Runs screen's widgets are gone (its own unmount has not run,
    # so its worker still counts) when the figures thread hands over its result.
    import raglabel.tui.screens.runs as runs_module

    release, handed = threading.Event(), threading.Event()
    compute = runs_module.run_reports

    def held(inputs: Any) -> Any:
        release.wait(10)
        return compute(inputs)

    async def unmounting(self: RunsScreen) -> None:
        release.set()
        await asyncio.sleep(0.5)  # the hand-over lands meanwhile

    monkeypatch.setattr(runs_module, "run_reports", held)
    monkeypatch.setattr(RunsScreen, "on_unmount", unmounting, raising=False)
    call_from_thread = GradingApp.call_from_thread

    def handing(app: GradingApp, *args: Any, **kwargs: Any) -> Any:
        try:
            return call_from_thread(app, *args, **kwargs)
        finally:
            handed.set()

    monkeypatch.setattr(GradingApp, "call_from_thread", handing)

    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        await pilot.press("r")
        await pilot.pause()
        await pilot.press("escape")
        while not handed.is_set():
            await pilot.pause(0.02)
        await pilot.pause(0.6)
        assert app.is_running and isinstance(app.screen, QueriesScreen)

    await drive(db, scenario)


async def test_figures_of_a_superseded_worker_are_not_shown(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # K changes while the first figures are computed: those, finishing last, are stale.
    import raglabel.tui.screens.runs as runs_module

    release, calls = threading.Event(), [0]
    compute = runs_module.run_reports

    def first_held(inputs: Any) -> Any:
        calls[0] += 1
        if calls[0] == 1:
            release.wait(10)
            return {}  # were it shown, the standings would be emptied
        return compute(inputs)

    monkeypatch.setattr(runs_module, "run_reports", first_held)

    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        await pilot.press("r")
        await pilot.pause()
        await pilot.press("K")
        while calls[0] < 2:
            await pilot.pause(0.02)
        await pilot.pause(0.2)
        standings = app.screen.query_one("#standings", DataTable)
        assert standings.row_count == len(app.session.catalog.runs)
        release.set()
        await app.workers.wait_for_complete()
        await pilot.pause(0.2)
        assert standings.row_count == len(app.session.catalog.runs)

    await drive(db, scenario)


async def test_what_lands_on_a_grade_screen_not_built_yet_waits_for_its_mount(
    db: Path,
) -> None:
    # A judge thread finishing, or the app-wide undo key typed ahead, just as a Grade
    # screen is pushed: its widgets do not exist yet, and it reads the session as it mounts.
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        first = await open_query(app, pilot, UNGRADED)
        pid = first.current
        await pilot.press("3", "r")
        await app.workers.wait_for_complete()
        app.open_query(UNGRADED + 1)  # a second Grade screen: the kept one is below
        second = app.screen
        assert isinstance(second, GradeScreen) and not second.is_mounted
        app.judging = "q"
        app._judge_progress(UNGRADED, "judge: asking")
        app._judge_done(UNGRADED, None, "the endpoint went away")
        app.action_undo()
        app.set_k(app.session.k)
        app.action_reload()
        await pilot.pause()
        assert second.is_mounted and app.screen is second
        # It opens on the passage undone, as a Grade screen pushed by the undo would.
        assert second.qi == UNGRADED and second.current == pid
        assert pid is not None and second.rows[pid].grade is None

    await drive(db, scenario)
    assert [r[2:4] for r in events(db)] == [("grade", 3), ("undo", None)]


async def test_the_palette_offers_the_commands_of_the_screen_it_was_opened_from(
    db: Path,
) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        await open_query(app, pilot, UNGRADED)
        await pilot.press("ctrl+p")
        await pilot.press(*"judge")
        shown: list[str] = []
        for _ in range(100):
            await pilot.pause(0.02)
            options = app.screen.query_one(CommandList).options
            shown = [str(option.prompt).split("\n")[0] for option in options]
            if shown:
                break
        qid = app.session.catalog.queries[UNGRADED].ext_id
        assert f"Judge query {qid}" in shown

    await drive(db, scenario)


def type_ahead(app: GradingApp, *keys: str) -> None:
    """Keys queued at once, as a fast typist's terminal delivers them: none is handled
    before the next arrives (Pilot's press waits for the app between keys)."""
    for key in keys:
        app.post_message(textual_events.Key(key, key))


async def test_a_grade_typed_right_after_a_move_or_an_undo_goes_to_the_cursors_passage(
    db: Path,
) -> None:
    names: list[str] = []

    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        screen = await open_query(app, pilot, UNGRADED)
        order = screen.query_one(PassageList).order
        names.extend(app.session.catalog.passage_ext[pid] for pid in order)
        assert screen.current == order[0]
        type_ahead(app, "j", "2")
        await pilot.pause(0.2)
        type_ahead(app, "u", "3", "k", "k", "5")
        await pilot.pause(0.2)
        assert screen.current == screen.query_one(PassageList).current

    await drive(db, scenario)
    # j: the second passage; the undo brings the cursor back to it; the 3 moves on to the
    # third, and k k from there is the first.
    assert [r[1:4] for r in events(db)] == [
        (names[1], "grade", 2),
        (names[1], "undo", None),
        (names[1], "grade", 3),
        (names[0], "grade", 5),
    ]


@given(st.lists(st.floats(0.0, 1.0), min_size=3, max_size=3))
def test_a_runs_cell_prints_an_interval_that_holds_its_printed_mean(
    values: list[float],
) -> None:
    low, mean, high = sorted(values)
    report = RunReport(mean={"m": mean}, valid={"m": 1}, ci={"m": (low, high)})
    shown, interval = str(_cell(report, "m")).split(" ")
    start, end = (float("0" + bound) for bound in interval.split("-"))
    assert start <= float(shown) <= end
    assert start <= low + 1e-9 and high - 1e-9 <= end and end - start <= high - low + 0.02
    # Float noise in a bound is not widened into another hundredth.
    noisy = RunReport(mean={"m": 1.0}, valid={"m": 1}, ci={"m": (0.29, 1.0000000000000002)})
    assert str(_cell(noisy, "m")) == "1.000 .29-1.00"


async def test_a_grade_typed_right_after_enter_on_the_queries_grades_there(db: Path) -> None:
    names: list[str] = []

    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        for _ in range(UNGRADED):
            await pilot.press("down")
        type_ahead(app, "enter", "3")  # the Grade screen built for the first time
        await pilot.pause(0.3)
        assert isinstance(app.screen, GradeScreen)
        names.append(app.session.catalog.passage_ext[app.screen.query_one(PassageList).order[0]])
        await pilot.press("escape", "down")
        type_ahead(app, "enter", "4")  # the kept one, filled anew
        await pilot.pause(0.3)
        assert isinstance(app.screen, GradeScreen)
        names.append(app.session.catalog.passage_ext[app.screen.query_one(PassageList).order[0]])

    await drive(db, scenario)
    assert [r[1:4] for r in events(db)] == [(names[0], "grade", 3), (names[1], "grade", 4)]


async def test_keys_typed_ahead_of_the_review_and_search_screens_act_there(db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        type_ahead(app, "v", "question_mark")  # Help over the Review, not "?" in its filter
        await pilot.pause(0.3)
        assert [type(s).__name__ for s in app.screen_stack[-2:]] == ["ReviewScreen", "HelpScreen"]
        await pilot.press("escape", "escape")
        screen = await open_query(app, pilot, UNGRADED)
        type_ahead(app, "b", "3")  # the first hit graded, not the 3 dropped
        await pilot.pause(0.3)
        search = app.screen
        assert isinstance(search, SearchScreen) and search.hits
        seen["first hit"] = search.hits[0].ext_id
        assert screen.qi == UNGRADED
        # The 3 typed ahead is replayed once the hits land; on a busy host that can be
        # after the pause above: wait for its grade (at most 5 s) before the app closes.
        for _ in range(250):
            if events(db):
                break
            await pilot.pause(0.02)

    seen: dict[str, str] = {}
    await drive(db, scenario)
    assert [r[1:4] for r in events(db)] == [(seen["first hit"], "grade", 3)]


async def test_runs_load_in_the_background_and_fill_the_queries(db: Path) -> None:
    app = create_app(AppOptions(project=db, annotator=ME))
    assert not app.session.runs_scored, "create_app reads the runs in the background"
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        while not app.session.runs_scored:
            await pilot.pause(0.02)
        await pilot.pause()
        table = app.screen.query_one("#queries", QueryTable)
        row = app.session.query_row(0)
        assert row.scored
        assert str(table.cells(0)[3]).strip() == f"{row.ra_nwg[0]:.3f}"


async def test_queries_table_holds_every_query_and_says_no_more(db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        table = app.screen.query_one("#queries", QueryTable)
        assert table.row_count == 30
        head = str(app.screen.query_one("#queries-head").render())
        assert "showing" not in head and "filter" not in head
        await pilot.press("slash", *"q0", "enter")
        await pilot.pause(0.3)
        assert table.row_count == 9  # q01-q09
        head = str(app.screen.query_one("#queries-head").render())
        assert "filter 'q0': 9 of 30" in head and "showing" not in head

    await drive(db, scenario)


# -- the judge in the app ---------------------------------------------------------------


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
        line = app.screen.query_one(PassageView).judge.plain
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


async def test_every_sort_and_filter_orders_as_row_by_row_sorting_would(db: Path) -> None:
    # The screen sorts arrays; this is the plain Python sort of row objects it replaced.
    def expected(rows: list[Any], sort: int, needle: str) -> list[int]:
        rows = [r for r in rows if needle in r.ext_id.casefold() or needle in r.text.casefold()]
        if sort == 1:
            rows.sort(key=lambda r: (r.graded / r.candidates if r.candidates else 1.0, r.index))
        elif sort == 2:
            rows.sort(key=lambda r: (-r.holes, r.index))
        elif sort >= 3:

            def score(r: Any) -> float:
                value = r.ra_nwg[sort - 3] if sort - 3 < len(r.ra_nwg) else math.nan
                return math.inf if math.isnan(value) else value

            rows.sort(key=lambda r: (score(r), r.index))
        return [r.index for r in rows]

    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        screen = app.screen
        assert isinstance(screen, QueriesScreen)
        await pilot.press("enter", "1", "2", "5", "q")  # some progress to sort by
        for needle in ("", "q0", "zzz"):
            screen.text_filter = needle
            for sort in range(len(screen.sort_names())):
                screen.sort = sort
                every = app.session.query_rows()
                assert screen.order() == expected(every, sort, needle)

    await drive(db, scenario)
