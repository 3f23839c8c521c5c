"""The Runs screen's estimates (issue 29, section 4), through Pilot on the project of
tests/estimate_project.py: ``e`` steps from people's grades in view to the judge's
labels and to the judge-corrected estimate, whose figures and settling words are
``raglabel eval DB --estimate judge|corrected --format json``'s at the app's K; the
estimate is computed on a worker thread; without what it stands on the screen says why
in one line, with the command that supplies it; and a snapshot at 80x24
(``tests/app/__snapshots__/test_runs_estimate/``; rewrite with ``--snapshot-update``
after a deliberate layout change and review the SVG).
"""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from estimate_project import build
from test_app import screen_text
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from raglabel.session import run_estimates
from raglabel.session.options import AppOptions
from raglabel.tui.app import GradingApp, create_app
from raglabel.tui.screens import runs as runs_screen
from raglabel.tui.screens.runs import RunsScreen
from raglabel.tui.widgets.run_chart import RunChart

if TYPE_CHECKING:
    from cli_helpers import Cli

ME = "alice"


async def ready(pilot: Pilot[Any]) -> None:
    app = pilot.app
    assert isinstance(app, GradingApp)
    await pilot.pause()
    while not app.session.runs_scored:
        await pilot.pause(0.02)
    await pilot.pause()


async def settle(pilot: Pilot[Any]) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def open_runs(pilot: Pilot[Any], presses: int = 0) -> RunsScreen:
    await ready(pilot)
    await pilot.press("r")
    await settle(pilot)
    for _ in range(presses):
        await pilot.press("e")
        await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, RunsScreen)
    return screen


def chart(screen: RunsScreen) -> str:
    return str(screen.query_one("#chart", RunChart).render())


def duel(screen: RunsScreen) -> str:
    return str(screen.query_one("#duel", Static).render())


def ra_nwg_cells(screen: RunsScreen) -> dict[str, str]:
    table = screen.query_one("#standings", DataTable)
    out = {}
    for row in range(table.row_count):
        cells = table.get_row_at(row)
        out[str(cells[0]).strip()] = str(cells[1])
    return out


def shown_proc(screen: RunsScreen) -> dict[str, str]:
    """The %PROC column, by run."""
    table = screen.query_one("#standings", DataTable)
    return {
        str(table.get_row_at(row)[0]).strip(): str(table.get_cell_at((row, 3)))
        for row in range(table.row_count)
    }


def cell(mean: float, ci: list[float]) -> str:
    # The table's form (tui/widgets/format.py): 3 decimals, the interval rounded out to 2.
    low = math.floor(round(ci[0] * 100, 7)) / 100
    high = math.ceil(round(ci[1] * 100, 7)) / 100
    return f"{mean:.3f} {low:.2f}-{high:.2f}".replace(" 0.", " .").replace("-0.", "-.")


def eval_json(cli: Cli, db: Path, *args: str) -> dict[str, Any]:
    code, out, err = cli("eval", db, "--metrics", "ra_nwg@5", "--format", "json", *args)
    assert code == 0, err
    report: dict[str, Any] = json.loads(out)
    return report


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return build(tmp_path).db


async def test_e_steps_through_the_estimates_with_evals_figures(
    project: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    judge = eval_json(cli, project, "--estimate", "judge", "--ci")
    corrected = eval_json(cli, project, "--estimate", "corrected", "--compare")
    threads: list[str] = []
    real = run_estimates.estimate_figures

    def recorded(ask: run_estimates.EstimateAsk) -> Any:
        threads.append(threading.current_thread().name)
        return real(ask)

    monkeypatch.setattr(runs_screen, "estimate_figures", recorded)
    app = create_app(AppOptions(project=project, annotator=ME))
    async with app.run_test(size=(120, 32)) as pilot:
        screen = await open_runs(pilot)
        assert app.session.k == 5
        assert "on the grades in view" in screen_text(app)
        await pilot.press("e")
        await settle(pilot)
        assert app.runs_estimate == "judge"
        assert "on the judge's labels" in screen_text(app)
        assert "95% bootstrap interval" in chart(screen)
        shown = ra_nwg_cells(screen)
        for run, figures in judge["runs"].items():
            want = cell(figures["mean"]["ra_nwg@5"], figures["ci"]["ra_nwg@5"])
            assert shown[run] == want, run
        # Marking and comparing act on the grades in view: not offered here.
        assert "compare marked" not in screen_text(app).splitlines()[-1]

        await pilot.press("e")
        await settle(pilot)
        assert app.runs_estimate == "corrected"
        assert "95% normal interval" in chart(screen)
        shown = ra_nwg_cells(screen)
        for run, figures in corrected["runs"].items():
            want = cell(figures["mean"]["ra_nwg@5"], figures["ci"]["ra_nwg@5"])
            assert shown[run] == want, run
        text = duel(screen)
        assert "judge on 20 queries, people on 12 complete of 14 drawn" in text
        words = {"settled", "not within the undrawn queries", "more queries to settle"}
        for c in corrected["compare"]:
            low, high = c["ci"]
            pair = f"{c['run']} - {c['baseline']}"
            line = next(ln for ln in text.splitlines() if ln.strip().startswith(pair))
            assert f"{c['mean_difference']:+.3f} [{low:+.3f}, {high:+.3f}]" in line
            settle_n = c["queries_to_settle"]
            if settle_n == 0:
                assert line.endswith("settled")
            elif settle_n is None:
                assert line.endswith("not within the undrawn queries")
            else:
                assert line.endswith(f"{settle_n} more queries to settle")
            assert any(line.endswith(w) for w in words)
        assert text.endswith("\n%PROC: a ratio of means, not estimated judge-corrected (NA)")
        assert shown_proc(screen) == {"bm25": "NA", "dense": "NA", "hybrid": "NA"}
        assert {c["queries_to_settle"] for c in corrected["compare"]} & {0}

        await pilot.press("e")
        await settle(pilot)
        assert app.runs_estimate == "human"
        assert duel(screen) == ""
        assert "on the grades in view" in screen_text(app)
    # Both estimates ran on a worker thread, never on the app's.
    assert len(threads) == 2
    assert threading.main_thread().name not in threads


async def test_the_choice_holds_when_the_screen_opens_again(project: Path) -> None:
    app = create_app(AppOptions(project=project, annotator=ME))
    async with app.run_test(size=(120, 32)) as pilot:
        screen = await open_runs(pilot, presses=2)
        assert "95% normal interval" in chart(screen)
        await pilot.press("escape")
        await pilot.press("r")
        await settle(pilot)
        assert isinstance(app.screen, RunsScreen)
        assert "95% normal interval" in chart(app.screen)


async def test_figures_of_an_estimate_left_behind_never_land(
    project: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    judge = eval_json(cli, project, "--estimate", "judge", "--ci")
    release = threading.Event()
    real = runs_screen.run_reports

    def held(inputs: Any) -> Any:
        # People's figures stay on their way until the judge's are on the screen.
        assert release.wait(10)
        return real(inputs)

    monkeypatch.setattr(runs_screen, "run_reports", held)
    app = create_app(AppOptions(project=project, annotator=ME))
    async with app.run_test(size=(120, 32)) as pilot:
        await ready(pilot)
        await pilot.press("r", "e")
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        while "95% bootstrap interval" not in chart(screen):
            await pilot.pause(0.02)
        release.set()
        await settle(pilot)
        assert app.runs_estimate == "judge"
        assert "95% bootstrap interval" in chart(screen)
        shown = ra_nwg_cells(screen)
        for run, figures in judge["runs"].items():
            assert shown[run] == cell(figures["mean"]["ra_nwg@5"], figures["ci"]["ra_nwg@5"])


@pytest.mark.parametrize(
    ("made", "presses", "line"),
    [
        (
            {"draw_sample": False},
            2,
            "No judge-corrected estimate: no audit sample: raglabel audit {db} --sample 40",
        ),
        ({"judge": False}, 1, "No judge's estimate: no judge labels: raglabel judge {db}"),
        (
            {"complete": 8},
            2,
            "No judge-corrected estimate: 8 of 14 drawn queries complete at depth 5, 10"
            " needed: grade 2 more drawn queries in full",
        ),
        (
            {"complete": 4, "incomplete": 0},
            2,
            "No judge-corrected estimate: 4 of 14 drawn queries complete at depth 5, 10"
            " needed: grade 6 more drawn queries in full",
        ),
    ],
)
async def test_without_what_it_stands_on_the_screen_says_why_in_one_line(
    tmp_path: Path, made: dict[str, Any], presses: int, line: str
) -> None:
    db = build(tmp_path, **made).db
    app = create_app(AppOptions(project=db, annotator=ME))
    async with app.run_test(size=(200, 50)) as pilot:
        screen = await open_runs(pilot, presses=presses)
        assert chart(screen) == line.format(db=db)
        assert duel(screen) == ""


async def test_a_draw_too_small_to_finish_says_to_draw_more(tmp_path: Path) -> None:
    from raglabel.storage.audit import draw
    from raglabel.storage.project import Project

    db = build(tmp_path, draw_sample=False).db
    with Project.open(db) as project:
        draw(project, 6, 5)
    app = create_app(AppOptions(project=db, annotator=ME))
    async with app.run_test(size=(200, 50)) as pilot:
        screen = await open_runs(pilot, presses=2)
        assert chart(screen) == (
            "No judge-corrected estimate: 0 of 6 drawn queries complete at depth 5, 10"
            f" needed: raglabel audit {db} --sample 4, then grade 10 more drawn queries"
            " in full"
        )


async def test_at_80x24_every_pair_shows_whole(project: Path) -> None:
    app = create_app(AppOptions(project=project, annotator=ME))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_runs(pilot, presses=2)
        screen.query_one("#duel", Static).scroll_visible(top=True, animate=False)
        await pilot.pause()
        text = screen_text(app)
        for pair in ("dense - bm25", "hybrid - bm25", "hybrid - dense"):
            line = next(ln for ln in text.splitlines() if pair in ln)
            assert line.rstrip().endswith(("settled", "undrawn queries", "to settle")), line


def test_corrected_at_80x24(project: Path, snap_compare: Any) -> None:
    async def corrected(pilot: Pilot[Any]) -> None:
        assert isinstance(pilot.app, GradingApp)
        pilot.app.runs_estimate = "corrected"  # as left when the screen was last open
        await open_runs(pilot)

    app = create_app(AppOptions(project=project, annotator=ME))
    assert snap_compare(app, terminal_size=(80, 24), run_before=corrected)
