"""The answer criteria in the app's Runs view (issue 14, item 4): on the demo project,
with judge answers added, the view's figures are ``raglabel eval DB --answers --format
json``'s for the same file; a grade given in the Answers view changes them; a project
without answer systems has no key for them; and snapshots of the view at 80x24, 120x32
and 200x50 (``tests/app/__snapshots__/test_runs_answers/``; rewrite them with
``--snapshot-update`` after a deliberate layout change and review the SVGs).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from answers_project import add_judgments
from test_app import drive, screen_text
from textual.pilot import Pilot
from textual.widgets import Static

from raglabel.session.answer_figures import AnswerFigure
from raglabel.session.options import AppOptions
from raglabel.storage.answer_items import answer_items
from raglabel.storage.demo import build_demo
from raglabel.tui.app import GradingApp, create_app
from raglabel.tui.screens.answers import AnswersScreen
from raglabel.tui.screens.runs import RunsScreen
from raglabel.tui.widgets.answer_figures import AnswerFigureTable

if TYPE_CHECKING:
    from cli_helpers import Cli

ME = "ann"
SIZES = {"80x24": (80, 24), "120x32": (120, 32), "200x50": (200, 50)}


def judge_demo(db: Path) -> None:
    """Judge answers for the demo's faithfulness and relevancy: grounded mostly 5,
    embellished mostly 2, two models on some samples, and one failure."""
    conn = sqlite3.connect(db)
    try:
        items = answer_items(conn)
    finally:
        conn.close()
    rows: list[tuple[str, str, str, str, int, int | None, str]] = []
    for n, item in enumerate(items):
        if not item.answer.strip():
            continue
        good = item.system == "grounded"
        rows.append(
            (item.system, item.sample_id, "faithfulness", "m1", 0, 5 if good else 2 + n % 2, "r")
        )
        if n % 3 == 0:
            rows.append(
                (item.system, item.sample_id, "faithfulness", "m2", 0, 4 if good else 1, "r")
            )
        relevancy = None if n == 4 else 4 + n % 2
        rows.append((item.system, item.sample_id, "answer_relevancy", "m1", 0, relevancy, "r"))
    add_judgments(db, rows)


@pytest.fixture(scope="module")
def judged_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("runs_answers") / "demo.db"
    build_demo(path, ME)
    judge_demo(path)
    return path


@pytest.fixture
def db(judged_template: Path, tmp_path: Path) -> Path:
    path = tmp_path / "demo.db"
    shutil.copy(judged_template, path)
    return path


def eval_answers(cli: Cli, db: Path) -> dict[str, Any]:
    code, out, err = cli("eval", db, "--answers", "--format", "json")
    assert code == 0, err
    answers: dict[str, Any] = json.loads(out)["answers"]
    return answers


def eval_child(db: Path) -> dict[str, Any]:
    argv = [sys.executable, "-m", "raglabel", "eval", str(db), "--answers", "--format", "json"]
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    answers: dict[str, Any] = json.loads(done.stdout)["answers"]
    return answers


async def open_answer_figures(app: GradingApp, pilot: Pilot[Any]) -> RunsScreen:
    await pilot.press("r")
    await app.workers.wait_for_complete()
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, RunsScreen)
    if not screen.answers_shown:
        await pilot.press("t")
    await app.workers.wait_for_complete()
    await pilot.pause()
    assert screen.answers_shown and screen.answer_rows is not None
    return screen


def shown(screen: RunsScreen) -> dict[tuple[str, str], AnswerFigure]:
    assert screen.answer_rows is not None
    return {(row.system, row.criterion): row for row in screen.answer_rows}


def cells(screen: RunsScreen) -> dict[tuple[str, str], list[str]]:
    """The table's text per (system, criterion), row by row as shown."""
    table = screen.query_one(AnswerFigureTable)
    rows = screen.answer_rows
    assert rows is not None
    return {
        (row.system, row.criterion): [cell.plain for cell in table.get_row(str(i))]
        for i, row in enumerate(rows)
    }


def assert_same_as_eval(screen: RunsScreen, report: dict[str, Any]) -> None:
    figures = shown(screen)
    assert set(figures) == {(s, c) for s, criteria in report.items() for c in criteria}
    text = cells(screen)
    for (system, criterion), row in figures.items():
        expected = report[system][criterion]
        for grader in ("human", "judge"):
            summary = getattr(row.figures, grader)
            want = expected[grader]
            assert summary.mean == want["mean"], (system, criterion, grader)
            assert summary.valid == want["valid"]
            assert summary.na == want["na"]
            assert summary.pass_rate == want["pass_rate"]
            assert (list(summary.ci) if summary.ci else None) == want["ci"]
        assert (row.figures.corrected is None) == (expected["corrected"] is None)
        # What the table shows is that number, and NA (never 0) where there is none.
        places = 1 if criterion == "ctx_rank_prec" else 2
        human, judge = expected["human"], expected["judge"]
        _, _, people, _, people_counts, model, model_counts, _ = text[system, criterion]
        for mean, cell in ((human["mean"], people), (judge["mean"], model)):
            assert cell.split()[0] == ("NA" if mean is None else f"{mean:.{places}f}")
        assert people_counts == f"{human['valid']}/{sum(human['na'].values())}"
        assert model_counts == f"{judge['valid']}/{sum(judge['na'].values())}"


async def test_runs_view_shows_the_figures_of_eval_answers(db: Path, cli: Cli) -> None:
    report = eval_answers(cli, db)
    # The judge answered about two criteria: both graders' means are there to compare.
    assert report["grounded"]["faithfulness"]["judge"]["mean"] is not None
    assert any(s["answer_relevancy"]["judge"]["na"].get("judge_failed") for s in report.values())
    assert report["grounded"]["context_recall"]["judge"]["mean"] is None
    shot: dict[str, str] = {}

    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        screen = await open_answer_figures(app, pilot)
        assert_same_as_eval(screen, report)
        shot["text"] = screen_text(app)
        detail = str(screen.query_one("#answer-detail", Static).render())
        shot["detail"] = detail

    await drive(db, scenario, (120, 32))
    assert "embellished · faithfulness (pass at 3 or more)" in shot["detail"]
    assert "retrieval: RA-nWG@5" in shot["detail"]
    assert "t answer stats" in shot["text"]


async def test_grading_an_answer_changes_the_runs_view(db: Path, cli: Cli) -> None:
    before = eval_answers(cli, db)
    seen: dict[str, Any] = {}

    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        screen = await open_answer_figures(app, pilot)
        seen["before"] = {key: row.figures.human.mean for key, row in shown(screen).items()}
        await pilot.press("escape", "w")  # the Answers view of the highlighted query
        await pilot.pause()
        answers = app.screen
        assert isinstance(answers, AnswersScreen)
        seen["graded"] = (answers.current, answers.criterion)
        await pilot.press("1")  # the demo's hand grades are mostly 4 and 5
        await pilot.pause()
        screen = await open_answer_figures(app, pilot)  # the view opens as it was left
        seen["after"] = {key: row.figures.human.mean for key, row in shown(screen).items()}
        # The grade is committed: eval on the file (in a child process, as the app
        # holds this process's output) agrees with the view, row by row.
        seen["eval"] = eval_child(db)
        assert_same_as_eval(screen, seen["eval"])

    await drive(db, scenario, (120, 32))
    after = seen["eval"]
    (system, _), criterion = seen["graded"]
    assert seen["before"][system, criterion] == before[system][criterion]["human"]["mean"]
    assert seen["after"][system, criterion] == after[system][criterion]["human"]["mean"]
    assert seen["after"][system, criterion] != seen["before"][system, criterion]


async def test_a_project_without_answer_systems_has_no_answer_key(tmp_path: Path) -> None:
    db = tmp_path / "plain.db"
    build_demo(db, ME, answers=False)

    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        await pilot.press("r")
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        assert "answer stats" not in screen_text(app)
        await pilot.press("t")
        await app.workers.wait_for_complete()
        assert not screen.answers_shown and screen.answer_rows is None
        assert screen.query_one("#standings").display

    await drive(db, scenario, (120, 32))


async def test_the_key_toggles_back_to_the_runs_and_is_remappable(db: Path) -> None:
    async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
        await pilot.press("r")
        await app.workers.wait_for_complete()
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        await pilot.press("t")  # remapped away: nothing happens
        assert not screen.answers_shown
        await pilot.press("T")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert screen.answers_shown and screen.query_one(AnswerFigureTable).row_count == 8
        assert not screen.query_one("#chart").display
        await pilot.press("T")
        assert not screen.answers_shown and screen.query_one("#chart").display

    await drive(db, scenario, (120, 32), keymap={"answer_figures": "T"})


# -- snapshots at three sizes -----------------------------------------------------------------


async def _figures(pilot: Pilot[Any]) -> None:
    app = pilot.app
    assert isinstance(app, GradingApp)
    while not app.session.runs_scored:
        await pilot.pause(0.02)
    await pilot.pause()
    await pilot.press("r")
    await app.workers.wait_for_complete()
    await pilot.press("t")
    await app.workers.wait_for_complete()
    await pilot.press("down", "down", "down")  # grounded's ranking precision in detail
    await pilot.pause()


@pytest.mark.parametrize("size", list(SIZES))
def test_answer_figures_at_every_size(db: Path, snap_compare: Any, size: str) -> None:
    app = create_app(AppOptions(project=db, annotator=ME))
    assert snap_compare(app, terminal_size=SIZES[size], run_before=_figures)
