"""The Queries screen's virtual table (issue 16): every query of the filter and order is
reachable, only the rows on screen are built, and a sort never waits for the data read
in the background: it answers at once and sorts again when the data lands.

A project of 700 queries (more than the 500 rows the DataTable used to hold) is built
once from the demo's passages and one run ranking one to three of them per query.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from test_app import ME, screen_text
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widgets import Input

from raglabel.cli.main import main
from raglabel.session import loading
from raglabel.session.grading import QueryRow
from raglabel.session.options import AppOptions
from raglabel.tui import query_filter
from raglabel.tui.app import GradingApp, create_app
from raglabel.tui.query_filter import QueryFilter
from raglabel.tui.screens.grade import GradeScreen
from raglabel.tui.screens.queries import QueriesScreen
from raglabel.tui.widgets.format import short_runs
from raglabel.tui.widgets.passage_list import PassageList
from raglabel.tui.widgets.query_table import QueryTable

DEMO = Path(__file__).resolve().parents[2] / "fixtures" / "demo"
MANY = 700


@pytest.fixture(scope="module")
def many_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("many")
    passages = [
        json.loads(line)["id"]
        for line in (DEMO / "passages.jsonl").read_text(encoding="utf-8").splitlines()[:50]
    ]
    queries = folder / "queries.jsonl"
    run = folder / "bm25.run"
    with queries.open("w", encoding="utf-8") as q_out, run.open("w", encoding="utf-8") as r_out:
        for i in range(MANY):
            qid = f"q{i + 1:04d}"
            q_out.write(json.dumps({"id": qid, "text": f"question number {i + 1}"}) + "\n")
            for rank in range(1, 2 + i % 3):  # one to three passages: holes differ
                pid = passages[(i + rank) % len(passages)]
                r_out.write(f"{qid} Q0 {pid} {rank} {10 - rank} bm25\n")
    db = folder / "many.db"
    assert main(["init", str(db)]) == 0
    args = ["import", str(db), "--queries", str(queries), "--passages"]
    assert main([*args, str(DEMO / "passages.jsonl"), "--run", f"bm25={run}"]) == 0
    return db


@pytest.fixture
def many_db(many_template: Path, tmp_path: Path) -> Path:
    db = tmp_path / "many.db"
    db.write_bytes(many_template.read_bytes())
    return db


async def _ready(pilot: Pilot[Any]) -> None:
    app = pilot.app
    assert isinstance(app, GradingApp)
    while not app.session.runs_scored:
        await pilot.pause(0.02)
    await pilot.pause()


def _table(app: App[Any]) -> QueryTable:
    return app.screen.query_one("#queries", QueryTable)


def _on_screen(table: QueryTable) -> bool:
    """The cursor's row is between the header and the bottom edge."""
    line = table.cursor_row + 1 - round(table.scroll_y)
    return 1 <= line < table.scrollable_content_region.height


async def test_every_query_is_reachable_by_the_cursor_keys(many_db: Path) -> None:
    app = create_app(AppOptions(project=many_db, annotator=ME))
    async with app.run_test(size=(80, 24)) as pilot:
        await _ready(pilot)
        table = _table(app)
        assert table.row_count == MANY
        assert "showing" not in str(app.screen.query_one("#queries-head").render())
        await pilot.press("ctrl+end")
        assert table.current == MANY - 1 and _on_screen(table)
        assert f"q{MANY:04d}" in screen_text(app)
        await pilot.press("up", "k")
        assert table.current == MANY - 3 and _on_screen(table)
        await pilot.press("j")
        assert table.current == MANY - 2
        await pilot.press("ctrl+home")
        assert table.current == 0 and round(table.scroll_y) == 0
        for _ in range(100):
            await pilot.press("pagedown")
            if table.cursor_row > 500:
                break
        assert table.cursor_row > 500 and _on_screen(table)
        past = table.cursor_row
        assert f"q{past + 1:04d}" in screen_text(app)
        await pilot.press("pageup")
        assert table.cursor_row < past and _on_screen(table)
        chosen = table.current
        await pilot.press("enter")
        assert isinstance(app.screen, GradeScreen) and app.screen.qi == chosen


async def test_a_grade_past_row_500_updates_its_row(many_db: Path) -> None:
    app = create_app(AppOptions(project=many_db, annotator=ME))
    async with app.run_test(size=(120, 32)) as pilot:
        await _ready(pilot)
        table = _table(app)
        table.move_cursor(row=600)
        assert "0/" in str(table.cells(600)[1])
        await pilot.press("enter")
        assert isinstance(app.screen, GradeScreen) and app.screen.qi == 600
        await pilot.press("5", "q")
        assert isinstance(app.screen, QueriesScreen)
        row = app.session.query_row(600)
        assert str(table.cells(600)[1]) == f"{row.graded}/{row.candidates}"
        assert row.graded == 1 and table.current == 600


async def test_the_filter_finds_queries_anywhere_and_says_how_many(many_db: Path) -> None:
    app = create_app(AppOptions(project=many_db, annotator=ME))
    async with app.run_test(size=(80, 24)) as pilot:
        await _ready(pilot)
        table = _table(app)
        await pilot.press("slash", *"Q000", "enter")  # case-folded
        wanted = [f"q{n:04d}" for n in range(1, 10)]
        assert [table.row_at(i).ext_id for i in range(table.row_count)] == wanted
        assert "filter 'Q000': 9 of 700" in str(app.screen.query_one("#queries-head").render())
        await pilot.press("slash", *"number 69", "enter")
        assert [table.row_at(i).ext_id for i in range(table.row_count)] == [
            "q0069",
            *(f"q{n:04d}" for n in range(690, 700)),
        ]
        await pilot.press("escape")
        assert table.row_count == MANY
        assert not app.screen.query_one("#filter", Input).display


def _hold_the_runs(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """The background read hands over the candidates and grades, then holds the runs
    until the returned event is set: a big project's slow read, on demand."""
    gate = threading.Event()
    read = loading._read_pools_and_runs

    def held(*args: Any, **kwargs: Any) -> Any:
        loaded = read(*args, **kwargs)
        gate.wait(30)
        return loaded

    monkeypatch.setattr(loading, "_read_pools_and_runs", held)
    return gate


async def test_a_sort_before_the_runs_are_in_answers_at_once_then_sorts_again(
    demo_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = _hold_the_runs(monkeypatch)
    app = create_app(AppOptions(project=demo_db, annotator=ME))
    try:
        async with app.run_test(size=(120, 32)) as pilot:
            screen = app.screen
            assert isinstance(screen, QueriesScreen)
            for _ in range(500):
                if app.session.counted:
                    break
                await pilot.pause(0.02)
            assert app.session.counted and not app.session.runs_ready
            table = _table(app)
            table.move_cursor(row=4)
            await pilot.press("o", "o")  # file order -> progress -> holes
            assert screen.sort == 2 and not app.session.runs_scored
            head = str(screen.query_one("#queries-head").render())
            assert "sorted by holes (file order until the runs are read" in head
            assert " · holes … · " in head  # unknown, not 0
            assert screen.order() == list(range(30)) and table.current == 4
            await pilot.press("g")  # the queue needs the runs: said, not waited for
            assert app.screen is screen and not app.session.runs_scored

            gate.set()
            while not app.session.runs_scored:
                await pilot.pause(0.02)
            await pilot.pause()
            rows = app.session.query_rows()
            by_holes = sorted(range(30), key=lambda q: (-rows[q].holes, q))
            assert by_holes != list(range(30))
            assert screen.order() == by_holes
            assert [table.row_at(i).index for i in range(table.row_count)] == by_holes
            assert table.current == 4 and _on_screen(table)
            head = str(screen.query_one("#queries-head").render())
            assert "until" not in head and f" · holes {sum(r.holes for r in rows)} · " in head
    finally:
        gate.set()


async def test_progress_sort_before_the_counts_waits_for_nothing(
    demo_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Nothing at all comes back until the test says so: counts and runs both held.
    gate = threading.Event()
    read = loading._read_pools_and_runs

    def held(*args: Any, **kwargs: Any) -> Any:
        gate.wait(30)
        return read(*args, **kwargs)

    monkeypatch.setattr(loading, "_read_pools_and_runs", held)
    app = create_app(AppOptions(project=demo_db, annotator=ME))
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            screen = app.screen
            assert isinstance(screen, QueriesScreen)
            await pilot.pause()
            await pilot.press("o")
            assert screen.sort == 1 and not app.session.counted
            head = str(screen.query_one("#queries-head").render())
            assert "file order until the candidates and grades are read" in head
            assert screen.order() == list(range(30))
            gate.set()
            while not app.session.runs_scored:
                await pilot.pause(0.02)
            await pilot.pause()
            rows = app.session.query_rows()

            def done(q: int) -> float:
                return rows[q].graded / rows[q].candidates if rows[q].candidates else 1.0

            assert screen.order() == sorted(range(30), key=lambda q: (done(q), q))
    finally:
        gate.set()


# -- the widget alone ---------------------------------------------------------------------


class _Host(App[None]):
    def __init__(self, rows: list[QueryRow]) -> None:
        super().__init__()
        self.rows = rows
        self.opened: list[int] = []

    def compose(self) -> ComposeResult:
        yield QueryTable(["a", "b"], 5, lambda q: self.rows[q], id="t")

    def on_query_table_opened(self, message: QueryTable.Opened) -> None:
        self.opened.append(message.query)


async def test_a_new_order_keeps_the_cursor_on_its_query_and_its_line() -> None:
    rows = [QueryRow(i, f"q{i:04d}", f"text {i}", 1, 10, 2, (0.5, 0.25)) for i in range(1000)]
    app = _Host(rows)
    async with app.run_test(size=(80, 20)) as pilot:
        table = app.query_one(QueryTable)
        table.show(range(1000), current=700)
        await pilot.pause()
        assert table.current == 700 and _on_screen(table)
        line = table.cursor_row - round(table.scroll_y)
        table.show(range(999, -1, -1), current=700)  # re-sorted: 700 is row 299 now
        await pilot.pause()
        assert table.current == 700 and table.cursor_row == 299
        assert table.cursor_row - round(table.scroll_y) == line
        # Enter is the Queries screen's key (it opens at once); a click selects here.
        table.action_select_cursor()
        await pilot.pause()
        assert app.opened == [700]
        table.show([5, 3, 1], current=700)  # filtered out: the first row
        assert table.current == 5 and round(table.scroll_y) == 0
        table.show([], current=5)
        assert table.current is None and table.row_count == 0
        table.action_select_cursor()
        await pilot.press("down")
        assert app.opened == [700]


async def test_a_smaller_terminal_keeps_the_cursor_on_screen() -> None:
    rows = [QueryRow(i, f"q{i:04d}", f"text {i}", 1, 10, 2, (0.5, 0.25)) for i in range(1000)]
    app = _Host(rows)
    async with app.run_test(size=(80, 40)) as pilot:
        table = app.query_one(QueryTable)
        table.show(range(1000))
        await pilot.pause()
        table.move_cursor(row=35)  # near the bottom of 40 lines
        await pilot.pause()
        assert round(table.scroll_y) == 0 and _on_screen(table)
        await pilot.resize_terminal(80, 12)
        await pilot.pause()
        assert table.cursor_row == 35 and _on_screen(table)
        await pilot.press("down")
        assert table.current == 36 and _on_screen(table)


async def test_a_click_moves_the_cursor_and_a_second_click_opens() -> None:
    rows = [QueryRow(i, f"q{i:04d}", f"text {i}", 1, 10, 2, (0.5, 0.25)) for i in range(100)]
    app = _Host(rows)
    async with app.run_test(size=(80, 20)) as pilot:
        table = app.query_one(QueryTable)
        table.show(range(99, -1, -1))
        await pilot.pause()
        await pilot.click(QueryTable, offset=(3, 0))  # the header: nothing
        assert table.cursor_row == 0 and app.opened == []
        await pilot.click(QueryTable, offset=(3, 4))  # the fourth row
        assert table.current == 96 and app.opened == []
        await pilot.click(QueryTable, offset=(3, 4))
        assert app.opened == [96]


async def test_a_query_text_is_shown_as_written_not_as_markup() -> None:
    rows = [QueryRow(0, "q[b]1", "is [red]this[/red] red?", 0, 0, 0, (0.5, 0.25))]
    app = _Host(rows)
    async with app.run_test(size=(80, 10)) as pilot:
        app.query_one(QueryTable).show([0])
        await pilot.pause()
        text = screen_text(app)
        assert "q[b]1" in text and "is [red]this[/red] red?" in text


async def test_control_characters_in_a_query_reach_the_screen_as_spaces() -> None:
    rows = [QueryRow(0, "q1", "line one\nline two\tand\x1b[31m red", 0, 0, 0, (0.5, 0.25))]
    app = _Host(rows)
    async with app.run_test(size=(80, 10)) as pilot:
        table = app.query_one(QueryTable)
        table.show([0])
        await pilot.pause()
        painted = "".join(segment.text for segment in table.render_line(1))
        assert not any(ord(char) < 0x20 or 0x7F <= ord(char) < 0xA0 for char in painted)
        assert "line one line two and [31m red" in painted


# -- snapshots --------------------------------------------------------------------------------


async def _at_the_end(pilot: Pilot[Any]) -> None:
    await _ready(pilot)
    await pilot.press("ctrl+end", "up")


@pytest.mark.parametrize("size", [(80, 24), (120, 32)], ids=["80x24", "120x32"])
def test_the_last_rows_of_700(many_db: Path, snap_compare: Any, size: tuple[int, int]) -> None:
    app = create_app(AppOptions(project=many_db, annotator=ME))
    assert snap_compare(app, terminal_size=size, run_before=_at_the_end)


# -- the filter ------------------------------------------------------------------------------


@pytest.mark.parametrize("dense", [query_filter.DENSE, 3])
def test_the_filter_matches_as_testing_each_query_would(
    dense: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 3 makes common words leave the joined-text search early for the one-by-one test.
    monkeypatch.setattr(query_filter, "DENSE", dense)
    words = ["Vault", "backup", "ÉTÉ", "straße", "file", "q1", "", "[b]"]
    ids = [f"Q{i:03d}" for i in range(300)]
    texts = [" ".join(words[(i * j) % len(words)] for j in range(i % 5)) for i in range(300)]
    found = QueryFilter(ids, texts)
    for needle in ["", "q", "Q00", "q299", "vault", "VAULT b", "été", "STRASSE", "ß", "e f", "zz"]:
        folded = needle.casefold()
        expected = [
            q for q in range(300) if folded in ids[q].casefold() or folded in texts[q].casefold()
        ]
        assert found.matching(needle).tolist() == expected, needle
    # No match across the id and the text, nor across two queries.
    assert found.matching("Q000\x00").tolist() == []
    assert QueryFilter(["ab", "cd"], ["", ""]).matching("bc").tolist() == []


async def test_the_grade_screen_does_not_wait_for_the_runs(
    demo_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A query opened before the runs are in: the queue key picks this query's hole and K
    says it must wait, neither freezing the screen until the runs are read."""
    gate = _hold_the_runs(monkeypatch)
    app = create_app(AppOptions(project=demo_db, annotator=ME))
    try:
        async with app.run_test(size=(120, 32)) as pilot:
            for _ in range(500):
                if app.session.counted:
                    break
                await pilot.pause(0.02)
            await pilot.press("down", "down", "enter")  # the demo's third query has holes
            screen = app.screen
            assert isinstance(screen, GradeScreen) and not app.session.runs_ready
            assert screen.qi == 2
            k = app.session.k
            hole = app.session.hole_here(screen.qi)
            await pilot.press("g", "K")
            assert app.screen is screen and not app.session.runs_ready and app.session.k == k
            assert hole is not None
            assert screen.query_one(PassageList).current == hole.pid
    finally:
        gate.set()


def test_run_names_cut_alike_keep_their_ends() -> None:
    names = ["bm25", "dense", "dense_rerank", "hybrid"]
    assert short_runs(names, [4, 4, 4, 4]) == ["bm25", "d…se", "d…nk", "hyb…"]
    assert short_runs(names, [9, 9, 9, 9]) == ["bm25", "dense", "dense_re…", "hybrid"]
    assert short_runs(names, [4, 5, 6, 4]) == ["bm25", "dense", "dense…", "hyb…"]
    for width in range(0, 14):
        cut = short_runs(names, [width] * 4)
        assert all(len(label) <= width for label in cut)
        if width >= 3:
            assert len(set(cut)) == 4, cut
    # Alike at both ends too: numbered.
    middle = ["dense_a_rerank", "dense_b_rerank", "bm25"]
    assert short_runs(middle, [4, 4, 4]) == ["de…1", "de…2", "bm25"]
    assert short_runs(middle, [14, 14, 14]) == middle
