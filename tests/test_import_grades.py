"""Imported labels land as events whichever way the current grades are brought up to date:
an annotator's first events directly, later ones by replaying the items they touch."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from raglabel.storage.grades import GradeEvent, rebuild_current, record
from raglabel.storage.project import Project

if TYPE_CHECKING:
    from cli_helpers import Cli


def current(db: Path) -> list[tuple[object, ...]]:
    with Project.open(db) as project:
        return project.conn.execute(
            "SELECT q.ext_id, p.ext_id, a.name, c.grade, c.event_id FROM current_grade c"
            " JOIN query q ON q.id = c.query_id JOIN passage p ON p.id = c.passage_id"
            " JOIN annotator a ON a.id = c.annotator_id ORDER BY 1, 2, 3"
        ).fetchall()


def rebuilt(db: Path) -> list[tuple[object, ...]]:
    with Project.open(db) as project, project.write():
        rebuild_current(project.conn)
    return current(db)


def test_first_and_later_imports_and_app_events_agree_with_the_log(
    cli: Cli, tmp_path: Path
) -> None:
    db = tmp_path / "p.db"
    assert cli("init", db)[0] == 0
    first, second = tmp_path / "a.qrels", tmp_path / "b.qrels"
    first.write_text("q1 0 d1 3\nq1 0 d2 0\nq2 0 d1 1\n")
    second.write_text("q1 0 d1 1\nq2 0 d3 2\nq3 0 d1 3\n")
    # Ann's first import (direct), Bob's first (direct, beside Ann's events).
    assert cli("import", db, "--qrels", first, "--annotator", "ann")[0] == 0
    assert cli("import", db, "--qrels", first, "--annotator", "bob")[0] == 0
    once = current(db)
    assert [row[:4] for row in once if row[2] == "ann"] == [
        ("q1", "d1", "ann", 5),
        ("q1", "d2", "ann", 2),
        ("q2", "d1", "ann", 3),
    ]
    assert once == rebuilt(db)
    # Ann clears one in the app; her next import replays what it touches.
    with Project.open(db) as project:
        record(project, GradeEvent(query="q1", passage="d2", annotator="ann", kind="clear"))
        record(project, GradeEvent(query="q2", passage="d1", annotator="ann", grade=1))
    assert cli("import", db, "--qrels", second, "--annotator", "ann")[0] == 0
    later = current(db)
    assert [row[:4] for row in later if row[2] == "ann"] == [
        ("q1", "d1", "ann", 3),  # the second file's label replaces the first's
        ("q2", "d1", "ann", 1),  # the app's grade stands: the file does not name it
        ("q2", "d3", "ann", 4),
        ("q3", "d1", "ann", 5),
    ]
    assert later == rebuilt(db)
