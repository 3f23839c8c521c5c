"""A full disk and a read-only file: a clear message, nothing half-written, and the
grading app still there for reading."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from textual.pilot import Pilot

from raglabel.errors import StorageError
from raglabel.session.grading import GradingSession
from raglabel.session.options import AppOptions
from raglabel.storage import project as project_module
from raglabel.storage.grades import GradeEvent, record
from raglabel.storage.project import Project
from raglabel.tui.app import create_app
from raglabel.tui.screens.grade import GradeScreen
from raglabel.tui.screens.runs import RunsScreen
from raglabel.tui.widgets.status import SaveMark

if TYPE_CHECKING:
    from cli_helpers import Cli

ME = "ann"
UNGRADED = 25


def fill_to_the_brim(project: Project) -> int:
    """Cap the file at its present size, then grade until no grade fits any more (three
    refusals in a row: a refused write may leave a free page the next small one uses).
    Returns how many grades fitted."""
    pages = project.conn.execute("PRAGMA page_count").fetchone()[0]
    project.conn.execute(f"PRAGMA max_page_count = {pages}")
    fitted = refused = 0
    while refused < 3:
        try:
            record(
                project,
                GradeEvent(query="q25", passage="kb-0011", annotator="filler", grade=3),
            )
        except StorageError as exc:
            assert "full" in str(exc)
            refused += 1
        else:
            fitted += 1
            refused = 0
    return fitted


def events(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT count(*) FROM event").fetchone()[0])


def test_full_disk_refuses_whole_writes_and_says_so(
    demo_db: Path, assert_sound: Callable[[Path], None]
) -> None:
    with Project.open(demo_db) as project:
        fill_to_the_brim(project)
        before = events(demo_db)
        with pytest.raises(StorageError) as raised:
            record(project, GradeEvent(query="q25", passage="kb-0011", annotator=ME, grade=4))
        assert "nothing was saved" in str(raised.value) and "full" in str(raised.value)
        # Reading goes on as before.
        assert project.conn.execute("SELECT count(*) FROM query").fetchone()[0] == 30
    assert events(demo_db) == before
    assert_sound(demo_db)


def test_read_only_connection_refuses_with_a_clear_message(
    demo_db: Path, assert_sound: Callable[[Path], None]
) -> None:
    with Project.open(demo_db) as project:
        project.conn.execute("PRAGMA query_only = ON")
        with pytest.raises(StorageError, match="read-only"):
            record(project, GradeEvent(query="q25", passage="kb-0011", annotator=ME, grade=4))
    assert_sound(demo_db)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through file permissions")
def test_read_only_file_refuses_with_a_clear_message(demo_db: Path) -> None:
    demo_db.chmod(0o444)
    try:
        # Refused when opened to write, before a grade is taken (tests/e2e/test_read_only.py
        # runs this as another user, so it runs under root too).
        with pytest.raises(StorageError, match=f"{demo_db} is read-only"):
            Project.open(demo_db)
    finally:
        demo_db.chmod(0o644)


@pytest.fixture
def refusing(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Every connection the CLI opens from now on is read-only, as a file is that the
    user may not write (tests run as root here, for whom permissions mean nothing)."""
    real = project_module._connect

    def read_only(path: Path | str) -> sqlite3.Connection:
        conn = real(path)
        conn.execute("PRAGMA query_only = ON")
        return conn

    monkeypatch.setattr(project_module, "_connect", read_only)
    yield "read-only"


def test_cli_write_on_a_read_only_file_exits_1_and_changes_nothing(
    demo_db: Path, tmp_path: Path, cli: Cli, checksum: Callable[[Path], str], refusing: str
) -> None:
    before = checksum(demo_db)
    (tmp_path / "q.tsv").write_text("new1\ta new query\n")
    code, _, err = cli("import", demo_db, "--queries", tmp_path / "q.tsv")
    assert code == 1
    assert "raglabel import: error: nothing was saved:" in err and "read-only" in err
    assert "Traceback" not in err
    # Reading commands still work.
    code, _, err = cli("eval", demo_db, "--format", "json")
    assert code == 0, err
    assert checksum(demo_db) == before


async def test_app_on_a_full_disk_says_not_saved_and_stays_usable(
    demo_db: Path, assert_sound: Callable[[Path], None]
) -> None:
    options = AppOptions(project=demo_db, annotator=ME)
    project = Project.open(demo_db)
    fill_to_the_brim(project)
    before = events(demo_db)
    app = create_app(options, GradingSession.open(options, project))

    async def scenario(pilot: Pilot[Any]) -> None:
        app.open_query(UNGRADED)
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, GradeScreen)
        first = screen.current
        await pilot.press("4")
        status = str(screen.query_one(SaveMark).render())
        assert "NOT saved" in status and "full" in status
        assert screen.current == first  # nothing moved on: the grade is not in
        assert screen.rows[first].grade is None
        await pilot.press("j", "r")  # reading: the next passage, then the runs
        await pilot.pause()
        assert isinstance(app.screen, RunsScreen)

    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        while not app.session.runs_scored:
            await pilot.pause(0.02)
        await scenario(pilot)
    assert events(demo_db) == before
    assert_sound(demo_db)


def test_cli_import_on_a_full_disk_exits_1_and_changes_nothing(
    demo_db: Path,
    tmp_path: Path,
    *,
    cli: Cli,
    checksum: Callable[[Path], str],
    assert_sound: Callable[[Path], None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = project_module._connect

    def capped(path: Path | str) -> sqlite3.Connection:
        conn = real(path)
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages + 8}")
        return conn

    monkeypatch.setattr(project_module, "_connect", capped)
    before = checksum(demo_db)
    with (tmp_path / "p.tsv").open("w") as handle:
        for i in range(5000):
            handle.write(f"extra-{i}\t{'a passage that will not fit ' * 20}\n")
    code, _, err = cli("import", demo_db, "--passages", tmp_path / "p.tsv")
    assert code == 1
    assert "nothing was saved" in err and "full" in err and "Traceback" not in err
    monkeypatch.undo()
    assert checksum(demo_db) == before
    assert_sound(demo_db)
