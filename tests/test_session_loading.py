"""The session's lazy names and its background reads keep one view of the file."""

from __future__ import annotations

from pathlib import Path

from raglabel.session.catalog import PassageNames
from raglabel.storage.grades import GradeEvent, record
from raglabel.storage.project import Project


def test_a_passage_met_outside_the_file_keeps_its_pid_once_the_file_holds_it() -> None:
    in_file: dict[str, int] = {}
    names = PassageNames(
        lambda rows: {row: ext for ext, row in in_file.items() if row in rows},
        lambda exts: {ext: in_file[ext] for ext in exts if ext in in_file},
    )
    outside = names.pid("p-new")
    assert outside < 0
    in_file["p-new"] = 7  # graded meanwhile: the file holds it as row 7
    # A pool read later names it by its row; the session still calls it by one pid.
    assert names.learn(7, "p-new") == outside
    assert names.pid("p-new") == outside
    assert names[7] == names[outside] == "p-new"


def test_a_snapshot_does_not_see_what_another_connection_commits(demo_db: Path) -> None:
    def graded(project: Project) -> int:
        return int(project.conn.execute("SELECT count(*) FROM event").fetchone()[0])

    with Project.open(demo_db) as writer, Project.reader(demo_db) as reader:
        with reader.snapshot():
            before = graded(reader)
            record(
                writer,
                GradeEvent(query="q21", passage="kb-0002", annotator="zoe", kind="grade", grade=4),
            )
            assert graded(reader) == before
        assert graded(reader) == before + 1
