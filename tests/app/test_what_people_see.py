"""What a person sees (issue 26): the query's words beside six runs at 80x24, whole titles
on a wide Grade screen, a screenshot that is saved and says where, and a comparison
with no values that says why, in the app and in ``eval --compare``."""

from __future__ import annotations

import io
import re
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from rich.console import Console
from test_app import ME, drive, open_query, screen_text
from textual.pilot import Pilot
from textual.widgets import Static

from raglabel.session.options import AppOptions
from raglabel.storage.demo import build_demo
from raglabel.tui.app import GradingApp, create_app
from raglabel.tui.screens.help import HelpScreen, key_table
from raglabel.tui.screens.queries import QueriesScreen
from raglabel.tui.screens.runs import RunsScreen
from raglabel.tui.widgets.passage_list import PassageList
from raglabel.tui.widgets.query_table import TEXT_LEAST, QueryTable

if TYPE_CHECKING:
    from cli_helpers import Cli

SIX_RUNS = ["bm25", "dense", "dense_rerank", "hybrid", "grounded", "embellished"]


@pytest.fixture
def db(demo_db: Path) -> Path:
    return demo_db


def table_lines(app: GradingApp) -> list[str]:
    """The Queries table's lines on screen, its header first."""
    lines = screen_text(app).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(" query  progress"))
    return [lines[start], *(line for line in lines[start:] if re.match(r" q\d+ ", line))]


def head_text(app: GradingApp) -> str:
    return " ".join(str(app.screen.query_one("#queries-head", Static).render()).split())


# -- the Queries screen at 80x24 with six runs --------------------------------------------------


async def test_80x24_with_six_runs_shows_thirty_characters_of_each_query(db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        assert app.session.catalog.run_names == SIX_RUNS
        table = app.screen.query_one(QueryTable)
        queries = app.session.catalog.queries
        for line, query in zip(table_lines(app)[1:], queries, strict=False):
            # Each row ends with the query's own words, at least TEXT_LEAST of them.
            assert query.text[:TEXT_LEAST] in line, (line, query.text)
        header = table_lines(app)[0].split()
        assert header[:3] == ["query", "progress", "holes"] and header[-1] == "text"
        assert 1 <= len(header) - 4 < len(SIX_RUNS)  # some run columns, not all six
        shown = table.runs_shown
        assert shown == list(range(len(shown)))
        assert f"of runs 1-{len(shown)} of 6 (c: more)" in head_text(app)

    await drive(db, scenario, (80, 24))


async def test_the_run_columns_key_turns_the_page_then_hides_them(db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        table = app.screen.query_one(QueryTable)
        first = table.runs_shown
        row = app.session.query_row(0)
        seen: list[int] = []
        while table.first_run is not None:
            shown = table.runs_shown
            seen += shown
            # The scores under each header are the runs' own.
            cells = [str(cell).strip() for cell in table.cells(0)[3:-1]]
            assert cells == [f"{row.ra_nwg[run]:.3f}" for run in shown]
            await pilot.press("c")
        assert seen == list(range(6))  # every run, a page at a time, once
        assert table.runs_shown == []
        assert "hidden (c shows them)" in head_text(app)
        assert table_lines(app)[0].split() == ["query", "progress", "holes", "text"]
        await pilot.press("c")
        assert table.runs_shown == first

    await drive(db, scenario, (80, 24))


async def test_sorting_by_a_folded_run_brings_its_column_into_view(db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        table = app.screen.query_one(QueryTable)
        assert 5 not in table.runs_shown
        await pilot.press(*"o" * 8)  # file order, progress, holes, then runs 0-4, 5
        screen = app.screen
        assert isinstance(screen, QueriesScreen)
        assert screen.sort_names()[screen.sort] == "RA-nWG of embellished"
        assert 5 in table.runs_shown
        assert "embe" in table_lines(app)[0]

    await drive(db, scenario, (80, 24))


async def test_wide_enough_every_run_has_its_column_and_the_key_hides_them(db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        table = app.screen.query_one(QueryTable)
        assert table.runs_shown == list(range(6))
        assert "of runs" not in head_text(app) and "hidden" not in head_text(app)
        await pilot.press("c")
        assert table.runs_shown == []
        await pilot.press("c")
        assert table.runs_shown == list(range(6))

    await drive(db, scenario, (140, 40))


async def test_the_run_columns_key_is_remappable_and_in_the_help(db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        table = app.screen.query_one(QueryTable)
        first = table.runs_shown
        await pilot.press("c")
        assert table.runs_shown == first  # no longer bound
        assert "(e: more)" in head_text(app)
        await pilot.press("e")
        assert table.runs_shown != first
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        console = Console(width=120, file=io.StringIO(), record=True, color_system=None)
        console.print(key_table(app.screen.keymap))
        helped = console.export_text()
        assert re.search(r"\be\s+│\s+run_columns\s+│\s+queries: next runs' columns, or", helped)

    await drive(db, scenario, (80, 24), keymap={"run_columns": "e"})


# -- the Grade screen from 160 columns -------------------------------------------------------------


def shown_titles(app: GradingApp) -> list[str]:
    """The passage cells the list shows, as drawn (one per row on screen)."""
    table = app.screen.query_one(PassageList)
    lines = screen_text(app).splitlines()
    region = table.region
    cells = []
    for y in range(region.y + 1, region.y + region.height):
        line = lines[y][region.x : region.x + region.width]
        if "  kb-" in line:
            cells.append("kb-" + line.split("  kb-", 1)[1].rstrip(" ▁▂▃▄▅▆▇█"))
    return cells


def whole_cells(app: GradingApp, query: int) -> set[str]:
    return {f"{row.ext_id}  {row.title}" for row in app.session.passages(query) if row.title}


async def test_at_200_columns_the_list_grows_so_titles_show_whole(db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        # q01, and q17 with the demo's longest title (89 columns with its id).
        for query in (0, 16):
            await open_query(app, pilot, query)
            await pilot.pause()
            table = app.screen.query_one(PassageList)
            assert table.size.width > 100  # half of 200 would cut them
            shown = shown_titles(app)
            assert len(shown) >= 20
            whole = whole_cells(app, query)
            for cell in shown:
                assert cell in whole, cell
            # The passage and the metrics beside it keep their room.
            assert app.size.width - table.outer_size.width >= 64

    await drive(db, scenario, (200, 50))


async def test_at_160_columns_with_four_runs_the_titles_show_whole(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    build_demo(db, ME, answers=False)

    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        await open_query(app, pilot, 0)
        await pilot.pause()
        table = app.screen.query_one(PassageList)
        assert table.outer_size.width > 80
        shown = shown_titles(app)
        assert len(shown) >= 20
        whole = whole_cells(app, 0)
        for cell in shown:
            assert cell in whole, cell

    await drive(db, scenario, (160, 40))


async def test_below_160_columns_the_list_keeps_half(db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        await open_query(app, pilot, 0)
        await pilot.pause()
        assert app.screen.query_one(PassageList).outer_size.width == 150 // 2

    await drive(db, scenario, (150, 40))


# -- the palette's screenshot ---------------------------------------------------------------------


async def test_the_screenshot_goes_to_the_current_folder_without_downloads(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"  # no Downloads folder in it
    here = tmp_path / "here"
    home.mkdir()
    here.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.delenv("XDG_DOWNLOAD_DIR", raising=False)
    monkeypatch.chdir(here)
    said: list[str] = []

    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        await pilot.press("ctrl+p", *"screenshot")
        await pilot.pause(0.3)
        await pilot.press("enter")
        for _ in range(100):
            await pilot.pause(0.05)
            said[:] = [n.message for n in app._notifications if n.title == "Screenshot"]
            if said:
                break

    await drive(db, scenario, (100, 30))
    saved = list(here.glob("*.svg"))
    assert len(saved) == 1 and saved[0].read_text(encoding="utf-8").startswith("<svg")
    assert not (home / "Downloads").exists()
    assert said == [f"Screenshot saved to {saved[0].resolve()}"]


async def test_a_screenshot_that_cannot_be_written_says_where_and_why(
    db: Path, tmp_path: Path
) -> None:
    said: list[str] = []
    missing = tmp_path / "gone"

    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        app.deliver_screenshot(path=str(missing))
        for _ in range(100):
            await pilot.pause(0.05)
            said[:] = [n.message for n in app._notifications if n.title == "Screenshot"]
            if said:
                break

    await drive(db, scenario, (100, 30))
    assert said == [f"Screenshot NOT saved in {missing}: No such file or directory"]


# -- a comparison with no values -----------------------------------------------------------------


async def drive_as(annotator: str, db: Path, scenario: Any) -> None:
    """``drive``, grading as someone with no grades in the demo."""
    app = create_app(AppOptions(project=db, annotator=annotator))
    async with app.run_test(size=(120, 40)) as pilot:
        while not app.session.runs_scored:
            await pilot.pause(0.02)
        await pilot.pause()
        await scenario(app, pilot)


async def compare_first_two(app: GradingApp, pilot: Pilot[Any]) -> str:
    await pilot.press("r")
    await app.workers.wait_for_complete()
    await pilot.pause()
    assert isinstance(app.screen, RunsScreen)
    await pilot.press("space", "down", "space", "c")
    await app.workers.wait_for_complete()
    await pilot.pause()
    return " ".join(str(app.screen.query_one("#duel", Static).render()).split())


async def test_a_comparison_before_any_grade_says_there_are_none(db: Path) -> None:
    said: dict[str, Any] = {}

    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        said["duel"] = await compare_first_two(app, pilot)
        said["table"] = app.screen.query_one("#divergent").display
        # The Runs screen itself: the runs by name, and why there are no means yet.
        said["chart"] = str(app.screen.query_one("#chart", Static).render())

    await drive_as("newcomer", db, scenario)
    assert said["duel"] == (
        "dense vs bm25 on RA-nWG@5: nothing to compare. "
        "No query has grades in view yet: grade some passages first."
    )
    assert not said["table"]
    assert said["chart"].startswith("No query has grades in view yet (by newcomer)")


async def test_a_comparison_where_every_value_is_na_says_so(db: Path) -> None:
    said: dict[str, str] = {}

    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        # One passage graded junk: no passage is useful, so RA-nWG is NA on that query.
        await open_query(app, pilot, 0)
        await pilot.press("1", "q")
        said["duel"] = await compare_first_two(app, pilot)

    await drive_as("newcomer", db, scenario)
    assert said["duel"].endswith(
        "nothing to compare. RA-nWG@5 is NA for both runs on every one of the 1 graded query."
    )


def test_eval_compare_says_why_a_comparison_has_no_values(cli: Cli, tmp_path: Path) -> None:
    # No grade reaches 5 (3 under the default map): N-Recall5 is NA on every query.
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 2\nq1 0 d2 0\nq2 0 d3 2\n")
    runs = []
    for name, lines in (("a", "q1 Q0 d1 1 3 a\nq2 Q0 d3 1 1 a\n"), ("b", "q2 Q0 d3 1 3 b\n")):
        path = tmp_path / f"{name}.run"
        path.write_text(lines)
        runs.append(path)
    metrics = ["--metrics", "n_recall_5@5,ndcg@5", "--compare"]
    for fmt in ("table", "markdown"):
        code, out, err = cli("eval", "--qrels", qrels, "--run", *runs, *metrics, "--format", fmt)
        assert code == 0, err
        assert "n_recall_5@5, b vs a: nothing to compare: it is NA for both on every query" in out
        assert "ndcg@5, b vs a" not in out  # that one has values


# -- the Runs screen: one interval, read alike in its chart and its table ---------------------


def runs_screen_lines(app: GradingApp) -> tuple[dict[str, str], list[str]]:
    """The chart's interval text by run, and the runs' table lines as on screen."""
    lines = screen_text(app).splitlines()
    chart = {}
    for line in lines:
        found = re.match(r" (\S+) +[█├─┤ ]+ (\d\.\d{3}) (\[\d\.\d\d, \d\.\d\d\])$", line)
        if found:
            chart[found.group(1)] = f"{found.group(2)} {found.group(3)}"
    head = next(i for i, line in enumerate(lines) if line.startswith("  run "))
    table = [lines[head]]
    for line in lines[head + 1 :]:
        if not line.startswith("    "):
            break
        table.append(line)
    return chart, table


@pytest.mark.parametrize("size", [(80, 24), (120, 32), (200, 50)])
async def test_runs_chart_and_table_show_the_same_interval_and_no_cut_value(
    db: Path, size: tuple[int, int]
) -> None:
    shown: dict[str, Any] = {}

    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        await pilot.press("r")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, RunsScreen)
        shown["reports"] = app.screen.latest
        shown["chart"], shown["table"] = runs_screen_lines(app)

    await drive(db, scenario, size)
    reports, chart, table = shown["reports"], shown["chart"], shown["table"]
    assert set(chart) == set(SIX_RUNS)
    rows = [line for line in table[1:] if line.split()[:1] and line.split()[0] in chart]
    assert len(rows) == len(SIX_RUNS)
    for line in rows:
        run, mean, interval = line.split()[:3]
        # The chart said [0.629, 0.852] where the table said .62-.86: now both say the
        # same bounds, rounded outwards, so each holds the mean beside it.
        low, high = interval.split("-")
        assert chart[run] == f"{mean} [{float(low):.2f}, {float(high):.2f}]", (line, chart[run])
        ci = reports[run].ci["ra_nwg"]
        assert float(low) <= ci[0] and ci[1] <= float(high)
        assert float(low) <= float(mean) <= float(high)
        # Every cell whole: a mean and its interval, the last one too (not ".49-.7").
        cells = line.split()[1:]
        assert len(cells) % 2 == 0, line
        for mean_cell, interval_cell in zip(cells[::2], cells[1::2], strict=True):
            assert re.fullmatch(r"\d\.\d{3}", mean_cell), line
            assert re.fullmatch(r"(\.\d\d|1\.00)-(\.\d\d|1\.00)", interval_cell), line
    headers = table[0].split()
    assert len(headers) == len(rows[0].split()[1:]) // 2 + 1  # no header without its column
    if size[0] >= 200:
        assert headers[-1] == "nDCG"  # wide enough for all nine


# -- a cut title says it is cut -----------------------------------------------------------------


@pytest.mark.parametrize("size", [(80, 24), (120, 32), (150, 40)])
async def test_a_cut_title_on_the_grade_screen_ends_with_an_ellipsis(
    db: Path, size: tuple[int, int]
) -> None:
    seen: dict[str, Any] = {}

    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        await open_query(app, pilot, 16)  # q17 has the demo's longest title
        await pilot.pause()
        seen["shown"] = shown_titles(app)
        seen["whole"] = whole_cells(app, 16)

    await drive(db, scenario, size)
    shown, whole = seen["shown"], seen["whole"]
    assert len(shown) >= 5
    cut = [cell for cell in shown if cell not in whole]
    assert cut  # narrower than the titles: some are cut
    for cell in cut:
        # Cut where the column ends, and said so: never a whole-looking "...deleted-file wind".
        assert cell.endswith("\u2026"), cell
        assert any(title.startswith(cell[:-1]) for title in whole), cell


async def test_a_cut_title_in_search_results_ends_with_an_ellipsis(db: Path) -> None:
    seen: dict[str, list[str]] = {}

    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        await open_query(app, pilot, 0)
        await pilot.press("b")
        await pilot.pause()
        lines = screen_text(app).splitlines()
        seen["cells"] = [
            line.split("  kb-", 1)[1].split("  ", 1)[1].split("  ")[0]
            for line in lines
            if "  kb-" in line and "  " in line.split("  kb-", 1)[1]
        ]

    await drive(db, scenario, (200, 50))
    with sqlite3.connect(db) as conn:
        seen["titles"] = [title for (title,) in conn.execute("SELECT title FROM passage")]
    cells, titles = seen["cells"], seen["titles"]
    # "Enterprise: change the deleted-file wind" was the first 40 characters, no mark.
    long = [cell for cell in cells if cell not in titles]
    assert long, cells
    for cell in long:
        assert cell.endswith("\u2026") and len(cell) == 40, cell
        assert any(title.startswith(cell[:-1]) for title in titles), cell
