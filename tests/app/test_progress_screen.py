"""The lead's Progress screen through Pilot (issue 30, section 2), on a team at work
(tests/progress_project.py): the key opens it for a lead only, it shows the figures of
``raglabel progress`` and follows grades made in other processes, its key is remappable,
and keys act while a read is on its way. Snapshots at 80x24, 120x32 and 200x50
(``tests/app/__snapshots__/test_progress_screen/``; rewrite them with ``--snapshot-update``
after a deliberate layout change and look at the SVGs)."""

from __future__ import annotations

import random
import re
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
from progress_project import DEPTH, LEAD, build_team, expected
from test_app import screen_text
from textual.pilot import Pilot
from textual.widgets import DataTable

from raglabel.analysis.progress import Progress
from raglabel.session.options import AppOptions
from raglabel.session.team_progress import ProgressRequest, read_progress
from raglabel.storage.assignments import record as assign
from raglabel.storage.audit import pooled
from raglabel.storage.demo import build_demo
from raglabel.storage.grades import GradeEvent, record
from raglabel.storage.project import Project
from raglabel.tui.app import GradingApp, create_app
from raglabel.tui.screens import progress as screen_module
from raglabel.tui.screens.progress import ProgressScreen, alpha_cell
from raglabel.tui.screens.queries import QueriesScreen

SIZES = {"80x24": (80, 24), "120x32": (120, 32), "200x50": (200, 50)}
#: The app's cutoffs: its deepest is the depth a query is done to, the team's DEPTH.
CUTOFFS = tuple(range(1, DEPTH + 1))


@pytest.fixture(scope="module")
def team_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_team(tmp_path_factory.mktemp("team") / "team.db").db


@pytest.fixture
def db(team_template: Path, tmp_path: Path) -> Path:
    path = tmp_path / "team.db"
    shutil.copy(team_template, path)
    return path


def lead_app(db: Path, **options: Any) -> GradingApp:
    given = {"blind": False, "cutoffs": CUTOFFS, **options}
    return create_app(AppOptions(project=db, annotator=LEAD, **given))


async def opened(app: GradingApp, pilot: Pilot[Any], key: str = "P") -> ProgressScreen:
    await pilot.pause()
    await pilot.press(key)
    await pilot.pause()
    assert isinstance(app.screen, ProgressScreen)
    await app.workers.wait_for_complete()
    await pilot.pause()
    return app.screen


def table_rows(screen: ProgressScreen, table_id: str) -> list[list[str]]:
    table = screen.query_one(table_id, DataTable)
    return [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]


def shown_row(name: str, figures: dict[str, Any]) -> list[str]:
    """An annotator's row as the screen should show it, from the expected document."""

    def num(value: float | None, digits: int) -> str:
        return "NA" if value is None else f"{value:.{digits}f}"

    defined = [f"{other} {a:.2f}" for other, a in figures["alpha_with"].items() if a is not None]
    alphas = " · ".join(defined) or "-"
    return [
        name,
        str(figures["assigned"]),
        str(figures["done"]),
        str(figures["grades"]),
        num(figures["grades_per_hour"], 1),
        num(figures["median_active_s"], 1),
        alphas,
    ]


async def test_the_lead_sees_every_annotator_with_the_figures_of_raglabel_progress(
    tmp_path: Path,
) -> None:
    team = build_team(tmp_path / "team.db")
    want = expected(team)
    app = lead_app(team.db)
    async with app.run_test(size=(200, 50)) as pilot:
        screen = await opened(app, pilot)
        assert table_rows(screen, "#progress-annotators") == [
            shown_row(name, figures) for name, figures in want["annotators"].items()
        ]
        open_queries = [[q, f"{c['done']} of {c['assigned']}"] for q, c in want["queries"].items()]
        assert table_rows(screen, "#progress-queries") == [
            row for row in open_queries if not row[1].startswith("2 ")
        ]
        text = screen_text(app)
        assert "5 annotators · 6 queries assigned, 1 done by all their annotators" in text
        assert "1 pair to adjudicate" in text
        assert f"done: every passage a run ranks in its top {DEPTH} graded" in text
        await pilot.press("escape")
        assert isinstance(app.screen, QueriesScreen)


def pool(db: Path, query: str) -> list[str]:
    """The passages a stored run ranks within the top DEPTH for ``query``."""
    with Project.open_read(db) as project:
        row = project.conn.execute("SELECT id FROM query WHERE ext_id = ?", (query,)).fetchone()
        return sorted(pooled(project.conn, [row[0]], DEPTH)[row[0]])


def row_of(screen: ProgressScreen, name: str) -> list[str]:
    return next(r for r in table_rows(screen, "#progress-annotators") if r[0] == name)


async def test_the_figures_follow_grades_made_in_another_process(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(screen_module, "REFRESH_S", 0.1)
    app = lead_app(db)
    async with app.run_test(size=(120, 32)) as pilot:
        screen = await opened(app, pilot)
        assert row_of(screen, "carol")[2] == "1"
        # carol finishes q24 in her own app: another connection, as another process.
        with Project.open(db) as elsewhere:
            for passage in pool(db, "q24"):
                event = GradeEvent(
                    query="q24", passage=passage, annotator="carol", grade=3, origin="app"
                )
                record(elsewhere, event)
        for _ in range(100):
            await pilot.pause(0.05)
            if row_of(screen, "carol")[2] == "2":
                break
        assert row_of(screen, "carol")[2] == "2"
        assert ["q24", "1 of 2"] in table_rows(screen, "#progress-queries")


async def test_only_a_lead_has_the_key(db: Path) -> None:
    blind = create_app(AppOptions(project=db, annotator="alice", cutoffs=CUTOFFS))
    async with blind.run_test(size=(120, 32)) as pilot:
        await pilot.pause()
        await pilot.press("P")
        await pilot.pause()
        assert isinstance(blind.screen, QueriesScreen)
        assert "progress" not in screen_text(blind).splitlines()[-1]
    # --adjudicate makes a lead too (and opens on the disagreements).
    adjudicating = lead_app(db, adjudicate=True)
    async with adjudicating.run_test(size=(200, 50)) as pilot:
        await opened(adjudicating, pilot)
        assert "P progress" in screen_text(adjudicating).splitlines()[-1]


async def test_the_key_is_remappable(db: Path) -> None:
    app = lead_app(db, keymap={"progress": "z"})
    async with app.run_test(size=(120, 32)) as pilot:
        await pilot.pause()
        await pilot.press("P")
        await pilot.pause()
        assert isinstance(app.screen, QueriesScreen)
        await opened(app, pilot, "z")


async def test_keys_act_while_a_read_is_on_its_way(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    reads: list[Path] = []

    def slow(request: ProgressRequest) -> Progress:
        reads.append(request.path)
        release.wait(10)
        return read_progress(request)

    monkeypatch.setattr(screen_module, "read_progress", slow)
    app = lead_app(db)
    async with app.run_test(size=(120, 32)) as pilot:
        await pilot.pause()
        await pilot.press("P")
        await pilot.pause()
        assert isinstance(app.screen, ProgressScreen) and reads == [db]
        assert "reading the project" in screen_text(app)
        # The read holds its thread, not the keys: back to the queries at once.
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, QueriesScreen)
        release.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, QueriesScreen)


async def _progress(pilot: Pilot[Any]) -> None:
    app = pilot.app
    assert isinstance(app, GradingApp)
    await opened(app, pilot)


@pytest.mark.parametrize("size", list(SIZES))
def test_the_progress_screen_at_every_size(db: Path, snap_compare: Any, size: str) -> None:
    assert snap_compare(lead_app(db), terminal_size=SIZES[size], run_before=_progress)


def test_alphas_go_on_as_many_lines_as_keep_them_within_the_room() -> None:
    alphas: dict[str, float | None] = {"bob": 0.5, "carol": None, "dave": -0.25, "erin": 1.0}
    assert str(alpha_cell(alphas)) == "bob 0.50 · dave -0.25 · erin 1.00"
    assert str(alpha_cell(alphas, room=33)) == "bob 0.50 · dave -0.25 · erin 1.00"  # it fits
    # Wider than the room: in columns, names padded alike and alphas right-aligned.
    assert str(alpha_cell(alphas, room=23)) == "bob   0.50 · dave -0.25\nerin  1.00"
    assert str(alpha_cell(alphas, room=22)) == "bob   0.50\ndave -0.25\nerin  1.00"
    assert str(alpha_cell(alphas, room=5)) == "bob   0.50\ndave -0.25\nerin  1.00"
    # The table's longest name pads every row's alike.
    assert (
        str(alpha_cell(alphas, room=26, name_width=5)) == "bob    0.50 · dave  -0.25\nerin   1.00"
    )
    assert str(alpha_cell({"bob": None})) == "-"


async def test_five_annotators_alphas_fit_80_columns(tmp_path: Path) -> None:
    # Four others' alphas on one line need about 50 columns beside the figures' 50:
    # at 80 the alpha column ran off the right edge, to be scrolled to.
    db = tmp_path / "five.db"
    build_demo(db, "ann", answers=False)
    team = ["alice", "bob", "carol", "dave", "erin-marie"]
    rng = random.Random(5)
    with Project.open(db) as project:
        assign(project, {name: ["q21"] for name in team}, overlap=5, seed=None, audit=False)
        row = project.conn.execute("SELECT id FROM query WHERE ext_id = 'q21'").fetchone()[0]
        passages = sorted(pooled(project.conn, [row], DEPTH)[row])
        for name in team:
            for passage in passages:
                event = GradeEvent(
                    query="q21", passage=passage, annotator=name, grade=rng.randint(1, 5)
                )
                record(project, event)
    app = lead_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await opened(app, pilot)
        table = screen.query_one("#progress-annotators", DataTable)
        assert table.virtual_size.width <= table.scrollable_content_region.width
        pieces: set[str] = set()
        for name in team:
            cell = row_of(screen, name)[-1]
            others = dict(pair.split() for pair in re.split(r" · |\n", cell))
            assert sorted(others) == sorted(set(team) - {name}), cell
            assert all(re.fullmatch(r"-?\d\.\d\d", alpha) for alpha in others.values())
            assert "\n" in cell  # four pairs do not fit one line at 80 columns
            pieces.update(re.split(r" · |\n", cell))
        # In columns across the table: every name padded to the longest, every alpha alike.
        assert len({len(piece) for piece in pieces}) == 1, pieces
