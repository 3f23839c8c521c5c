"""The empty_project fixture (tests/conftest.py) is a copy of a template rather than a
project made by Project.create for each test: the copy must be exactly what create makes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from raglabel.storage.project import Project

#: The header fields and settings SQLite keeps in the file itself.
PRAGMAS = ("application_id", "user_version", "journal_mode", "page_size", "auto_vacuum")


def _described(path: Path) -> tuple[dict[str, object], list[str]]:
    """The file's header fields, and its schema and rows as SQL."""
    conn = sqlite3.connect(path)
    try:
        pragmas = {name: conn.execute(f"PRAGMA {name}").fetchone()[0] for name in PRAGMAS}
        return pragmas, list(conn.iterdump())
    finally:
        conn.close()


def test_the_empty_project_is_what_create_makes(empty_project: Path, tmp_path: Path) -> None:
    fresh = tmp_path / "fresh.db"
    Project.create(fresh).close()
    copy, made = _described(empty_project), _described(fresh)
    assert copy == made
    assert made[0]["journal_mode"] == "wal"
    assert any(line.startswith("CREATE TABLE") for line in made[1])


def test_each_test_gets_its_own_copy(empty_project: Path, empty_project_template: Path) -> None:
    with Project.open(empty_project) as project, project.write():
        project.conn.execute("INSERT INTO query (ext_id, text) VALUES ('q1', 'a query')")
    assert _described(empty_project) != _described(empty_project_template)
    assert empty_project.parent != empty_project_template.parent
