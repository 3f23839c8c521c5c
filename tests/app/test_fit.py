"""The app fits the terminals people have (issue 13): 80x24, 120x32 and 200x50.

Layout facts are asserted on the screen's text (the passage keeps 8 lines and the grade
keys show at 80x24; titles and run names are whole at 120x32; the metrics panel folds
and its key unfolds it), and every screen at the three sizes is compared against an SVG
snapshot (pytest-textual-snapshot, ``tests/app/__snapshots__/test_fit/``): a layout change
fails until the snapshots are rewritten with ``pytest tests/app/test_fit.py
--snapshot-update`` and the new SVGs reviewed. Then quitting, the Help screen's keys, the
review of skips and flags, and the search over the whole corpus.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from test_app import ME, UNGRADED, drive, events, open_query, screen_text
from textual.pilot import Pilot
from textual.widgets import DataTable, Input

from raglabel.session.options import AppOptions
from raglabel.storage.demo import build_demo
from raglabel.tui.app import GradingApp, create_app
from raglabel.tui.screens.grade import GradeScreen
from raglabel.tui.screens.help import HelpScreen
from raglabel.tui.screens.queries import QueriesScreen
from raglabel.tui.screens.review import ReviewScreen
from raglabel.tui.screens.search import SearchScreen
from raglabel.tui.widgets.metrics_panel import MetricsPanel
from raglabel.tui.widgets.passage_view import PassageView

SIZES = {"80x24": (80, 24), "120x32": (120, 32), "200x50": (200, 50)}


def passage_lines(text: str) -> list[str]:
    """The lines inside the passage's box (its border title names the passage)."""
    lines = text.splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("╭─ kb-"))
    bottom = next(i for i in range(top + 1, len(lines)) if lines[i].startswith("╰"))
    return [line.strip("│ ▁▂▃▄▅▆▇█") for line in lines[top + 1 : bottom]]


# -- layout ------------------------------------------------------------------------------


async def test_80x24_keeps_eight_lines_of_the_passage_and_the_grade_keys(db: Path) -> None:
    shot: dict[str, Any] = {}

    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        screen = await open_query(app, pilot, 0)
        await pilot.pause()
        shot["text"] = screen_text(app)
        shot["compact"] = screen.query_one(MetricsPanel).compact

    await drive(db, scenario, (80, 24))
    inside = [line for line in passage_lines(shot["text"]) if line.strip()]
    assert len(inside) >= 8, shot["text"]
    footer = shot["text"].splitlines()[-1]
    for key in ("1 junk", "2 weak", "3 partial", "4 high", "5 decisive", "? help"):
        assert key in footer
    # The panel is one line here, and still says where each run stands.
    assert shot["compact"]
    assert "m all metrics · RA-nWG@5 bm25 0.36  dense 0.68" in shot["text"]


async def test_120x32_shows_whole_titles_and_run_names(tmp_path: Path) -> None:
    # The four retrieval runs without the demo's two answer systems: six run columns
    # leave 120 columns too narrow for whole titles (the snapshots show that layout).
    db = tmp_path / "demo.db"
    build_demo(db, ME, answers=False)
    shot: dict[str, str] = {}

    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        shot["queries"] = screen_text(app)
        await open_query(app, pilot, 0)
        await pilot.pause()
        shot["grade"] = screen_text(app)
        shot["titles"] = "\n".join(
            f"{row.ext_id}  {row.title}" for row in app.session.passages(0) if row.title
        )

    await drive(db, scenario, (120, 32))
    for screen in ("queries", "grade"):
        header = next(line for line in shot[screen].splitlines() if " bm25 " in line)
        for name in ("bm25", "dense", "dense_rerank", "hybrid"):
            assert f" {name} " in header + " ", (screen, header)
        assert "…" not in header
    listed = shot["grade"].split("╭─")[0]
    shown = [line.split("  kb-")[1] for line in listed.splitlines() if "  kb-" in line]
    assert len(shown) >= 6
    whole = {"kb-" + line.split("kb-", 1)[1] for line in shot["titles"].splitlines()}
    for line in shown:
        assert "kb-" + line.rstrip(" ▁▂▃▄▅▆▇█") in whole, line
    # The query text runs to the edge of the Queries table.
    assert "How long does Vault keep deleted files on the Business" in shot["queries"]


async def test_metrics_key_folds_and_unfolds_the_panel(db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        screen = await open_query(app, pilot, 0)
        panel = screen.query_one(MetricsPanel)
        assert not panel.compact  # 200x50 has room for all of it
        await pilot.press("m")
        assert panel.compact and panel.size.height == 1
        await pilot.press("n")  # the choice holds on other queries and screens
        assert panel.compact
        await pilot.press("m")
        assert not panel.compact and panel.size.height > 5

    await drive(db, scenario, (200, 50))


async def test_metrics_key_is_remappable(db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        screen = await open_query(app, pilot, 0)
        panel = screen.query_one(MetricsPanel)
        assert panel.compact
        await pilot.press("m")
        assert panel.compact
        await pilot.press("t")
        assert not panel.compact

    await drive(db, scenario, (80, 24), keymap={"metrics": "t"})


# -- snapshots at three sizes ---------------------------------------------------------------


async def _ready(pilot: Pilot[Any]) -> None:
    app = pilot.app
    assert isinstance(app, GradingApp)
    while not app.session.runs_scored:
        await pilot.pause(0.02)
    await pilot.pause()


async def _queries(pilot: Pilot[Any]) -> None:
    await _ready(pilot)


async def _grade(pilot: Pilot[Any]) -> None:
    await _ready(pilot)
    assert isinstance(pilot.app, GradingApp)
    pilot.app.open_query(0)
    await pilot.pause()


async def _runs(pilot: Pilot[Any]) -> None:
    await _ready(pilot)
    await pilot.press("r")
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def _help(pilot: Pilot[Any]) -> None:
    await _ready(pilot)
    await pilot.press("question_mark")


async def _review(pilot: Pilot[Any]) -> None:
    await _grade(pilot)
    await pilot.press("s", *"duplicate of kb-0002", "enter")
    await pilot.press("f", *"outdated price", "enter")
    await pilot.press("v")


async def _search(pilot: Pilot[Any]) -> None:
    await _grade(pilot)
    await pilot.press("b")
    await pilot.pause()


SCENARIOS = {
    "queries": _queries,
    "grade": _grade,
    "runs": _runs,
    "help": _help,
    "review": _review,
    "search": _search,
}


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("screen", list(SCENARIOS))
def test_every_screen_at_every_size(
    demo_db: Path, snap_compare: Any, screen: str, size: str
) -> None:
    app = create_app(AppOptions(project=demo_db, annotator=ME))
    assert snap_compare(app, terminal_size=SIZES[size], run_before=SCENARIOS[screen])


# -- quitting and the Help screen ------------------------------------------------------------


async def test_q_on_the_queries_screen_quits_and_the_footer_says_so(db: Path) -> None:
    app = create_app(AppOptions(project=db, annotator=ME))
    async with app.run_test(size=(80, 24)) as pilot:
        await _ready(pilot)
        assert isinstance(app.screen, QueriesScreen)
        assert "q quit" in screen_text(app).splitlines()[-1]
        app.open_query(0)
        await pilot.pause()
        await pilot.press("q")  # from the Grade screen: back to the queries
        assert isinstance(app.screen, QueriesScreen) and app.is_running
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0 and not app.is_running


def test_label_says_the_grades_are_saved_on_exit(
    cli: Any, db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys
    import types

    fake = types.ModuleType("raglabel.tui.app")
    fake.__dict__["run_app"] = lambda options: 0
    monkeypatch.setitem(sys.modules, "raglabel.tui.app", fake)
    monkeypatch.setenv("RAGLABEL_ALLOW_NO_TTY", "1")
    code, _, err = cli("label", db, "--annotator", ME)
    assert code == 0
    assert err.splitlines()[-2:] == [
        "every grade was saved as you gave it",
        f"your grades are in {db}",
    ]


def test_empty_user_grades_as_annotator_and_says_how_to_choose(
    cli: Any, db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys
    import types

    started: list[AppOptions] = []
    fake = types.ModuleType("raglabel.tui.app")
    fake.__dict__["run_app"] = lambda options: started.append(options) or 0
    monkeypatch.setitem(sys.modules, "raglabel.tui.app", fake)
    monkeypatch.setenv("RAGLABEL_ALLOW_NO_TTY", "1")
    monkeypatch.setenv("USER", "")
    monkeypatch.delenv("RAGLABEL_ANNOTATOR", raising=False)
    code, _, err = cli("label", db)
    assert code == 0 and started[0].annotator == "annotator"
    assert "grading as 'annotator': $RAGLABEL_ANNOTATOR and $USER are empty" in err
    assert "--annotator NAME" in err
    # Said in the app too: the terminal's line shows only once the app has closed.
    (notice,) = started[0].notices
    assert notice in err


async def test_the_commands_notices_show_as_the_app_opens(db: Path) -> None:
    said = "grading as 'annotator': $RAGLABEL_ANNOTATOR and $USER are empty"
    app = create_app(AppOptions(project=db, annotator="annotator", notices=(said,)))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        shown = [(n.message, n.severity) for n in app._notifications]
        assert (said, "warning") in shown


async def test_keys_on_the_help_footer_never_act_below_it(db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        await open_query(app, pilot, UNGRADED)
        await pilot.press("4")  # something undo could revert
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        footer = screen_text(app).splitlines()[-1]
        assert "undo" not in footer and "runs" not in footer and "palette" not in footer
        await pilot.press("u", "r", "v", "ctrl+p")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("question_mark")
        assert isinstance(app.screen, GradeScreen)

    await drive(db, scenario, (80, 24))
    assert [r[2:4] for r in events(db)] == [("grade", 4)]


async def test_clear_on_an_ungraded_passage_writes_nothing(db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        screen = await open_query(app, pilot, UNGRADED)
        assert screen.current is not None and screen.rows[screen.current].grade is None
        await pilot.press("x")
        status = str(screen.query_one("#status").render())
        assert "Nothing to clear" in status

    await drive(db, scenario)
    assert events(db) == []


# -- skips, flags and their review ---------------------------------------------------------------


async def test_skip_reason_and_flag_note_show_with_the_passage(db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        screen = await open_query(app, pilot, UNGRADED)
        first = screen.current
        await pilot.press("f", *"price is from 2023", "enter")
        line = screen.query_one(PassageView).marks.plain
        assert "flagged: price is from 2023" in line
        await pilot.press("s", *"dup of kb-0002", "enter")
        await pilot.press("k")  # back to it: the skip moved on
        assert screen.current == first
        line = screen.query_one(PassageView).marks.plain
        assert "skipped: dup of kb-0002" in line and "flagged: price is from 2023" in line

    await drive(db, scenario)


async def test_review_lists_skips_and_flags_filters_and_opens_one(db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        screen = await open_query(app, pilot, UNGRADED)
        skipped = screen.current
        await pilot.press("s", *"dup of kb-0002", "enter")
        flagged = screen.current
        await pilot.press("f", "enter")  # a flag without a note
        await pilot.press("n")
        await pilot.press("f", *"wrong region", "enter")
        await pilot.press("q", "v")
        review = app.screen
        assert isinstance(review, ReviewScreen)
        table = review.query_one("#review", DataTable)
        assert table.row_count == 3
        notes = [str(table.get_row_at(i)[4]) for i in range(3)]
        assert notes == ["wrong region", "(no note)", "dup of kb-0002"]  # newest first
        await pilot.press("slash", *"skip")
        assert table.row_count == 1
        await pilot.press("enter", "enter")  # leave the box, open the highlighted one
        assert isinstance(app.screen, GradeScreen)
        assert (app.screen.qi, app.screen.current) == (UNGRADED, skipped)
        await pilot.press("escape")
        assert app.screen is review
        await pilot.press("escape")  # clears the filter first
        assert table.row_count == 3
        assert flagged is not None

    await drive(db, scenario)


# -- search over the whole corpus ----------------------------------------------------------------


def outside_pool(db: Path, query: str) -> tuple[str, str]:
    """A passage (id, a word of its title) no candidate of ``query`` is."""
    with sqlite3.connect(db) as conn:
        row = conn.execute(
            "SELECT p.ext_id, p.title FROM passage p WHERE p.title IS NOT NULL"
            " AND p.id NOT IN (SELECT c.passage_id FROM candidate c JOIN query q"
            " ON q.id = c.query_id WHERE q.ext_id = ?) ORDER BY p.id LIMIT 1",
            (query,),
        ).fetchone()
    return row[0], row[1]


async def test_search_finds_a_passage_no_run_retrieved_and_grades_it(db: Path) -> None:
    seen: dict[str, Any] = {}

    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        qid = app.session.catalog.queries[UNGRADED].ext_id
        passage, title = outside_pool(db, qid)
        seen["passage"], seen["query"] = passage, qid
        screen = await open_query(app, pilot, UNGRADED)
        await pilot.press("b", "slash")  # the hits have the focus: / goes to the words
        search = app.screen
        assert isinstance(search, SearchScreen)
        box = search.query_one("#search-box", Input)
        box.value = title
        await pilot.press("enter")
        hits = [hit.ext_id for hit in search.hits]
        assert passage in hits
        table = search.query_one("#hits", DataTable)
        table.move_cursor(row=hits.index(passage))
        assert str(table.get_row_at(hits.index(passage))[1]) == "new"
        await pilot.press("3")
        assert search.hits[hits.index(passage)].grade == 3
        await pilot.press("escape")
        assert app.screen is screen
        listed = {row.ext_id: row.grade for row in app.session.passages(UNGRADED)}
        assert listed[passage] == 3

    await drive(db, scenario)
    assert [r[1:4] for r in events(db)] == [(seen["passage"], "grade", 3)]
    with sqlite3.connect(db) as conn:
        # It joined the pool, and counts in the labels as any grade does.
        assert conn.execute(
            "SELECT count(*) FROM candidate c JOIN query q ON q.id = c.query_id"
            " JOIN passage p ON p.id = c.passage_id WHERE q.ext_id = ? AND p.ext_id = ?",
            (seen["query"], seen["passage"]),
        ).fetchone() == (1,)


async def test_enter_on_a_hit_opens_it_in_the_grade_screen(db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        qid = app.session.catalog.queries[UNGRADED].ext_id
        passage, title = outside_pool(db, qid)
        screen = await open_query(app, pilot, UNGRADED)
        await pilot.press("b", "slash")  # the hits have the focus: / goes to the words
        search = app.screen
        assert isinstance(search, SearchScreen)
        search.query_one("#search-box", Input).value = title
        await pilot.press("enter")
        hits = [hit.ext_id for hit in search.hits]
        search.query_one("#hits", DataTable).move_cursor(row=hits.index(passage))
        await pilot.press("enter")
        assert app.screen is screen
        assert screen.current is not None
        assert app.session.catalog.passage_ext[screen.current] == passage
        await pilot.press("5")

    await drive(db, scenario)
    assert [r[2:4] for r in events(db)] == [("grade", 5)]


@pytest.fixture
def db(demo_db: Path) -> Path:
    return demo_db
