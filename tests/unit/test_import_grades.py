"""Imported labels land as events whichever way the current grades are brought up to date:
an annotator's first events directly, later ones by replaying the items they touch."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from raglabel.storage.grades import GradeEvent, rebuild_current, record
from raglabel.storage.importer import ImportRequest, run_import
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


def steps_to_import(db: Path, qrels: Path, annotator: str) -> int:
    """What importing ``qrels`` into ``db`` costs SQLite, counted in its virtual machine's
    steps (hundreds of them) rather than timed: the count does not depend on the load."""
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0  # go on

    with Project.open(db) as project:
        project.conn.set_progress_handler(count, 100)
        run_import(project, ImportRequest(qrels=qrels, annotator=annotator))
    return steps


@pytest.mark.parametrize("annotator", ["newcomer", "ann"])
def test_a_small_import_costs_no_more_beside_a_long_log(tmp_path: Path, annotator: str) -> None:
    """Ten labels cost the same beside 200 older events or 5,000: the new events are
    read back by their ids, and the items they touch drive the replay's join. Both
    paths are covered: a newcomer's first events, and ann's, who has graded before."""
    few = tmp_path / "few.qrels"
    few.write_text("".join(f"q{i} 0 d{i} 2\nq{i} 0 new{i} 1\n" for i in range(5)))
    costs = []
    for size in (200, 5_000):
        log = tmp_path / f"log{size}.qrels"
        log.write_text("".join(f"q{i % 50} 0 d{i} 1\n" for i in range(size)))
        db = tmp_path / f"p{size}.db"
        with Project.create(db) as project:
            run_import(project, ImportRequest(qrels=log, annotator="ann"))
        costs.append(steps_to_import(db, few, annotator))
        copy = tmp_path / f"copy{size}.db"
        shutil.copyfile(db, copy)
        with Project.open(copy) as project, project.write():
            rebuild_current(project.conn)
        assert current(db) == current(copy)  # and the answer is still the log's
    small, large = costs
    assert large < 2 * small, costs
