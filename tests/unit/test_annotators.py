"""A new person's name is checked once, where people are created (storage/annotators.py),
whichever door they come by: a grade, an answer grade, a qrels import under
``--annotator``, an invite, an assignment. A judge's own events and people the project
already knows keep their names."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from raglabel.errors import UsageError
from raglabel.storage.annotators import refuse_names
from raglabel.storage.grades import GradeEvent, record
from raglabel.storage.invites import add_invite
from raglabel.storage.project import Project

if TYPE_CHECKING:
    from cli_helpers import Cli


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    with Project.create(tmp_path / "p.db") as created:
        with created.write():
            created.conn.execute("INSERT INTO query (ext_id, text) VALUES ('q1', 'a question')")
            created.conn.executemany(
                "INSERT INTO passage (ext_id, text) VALUES (?, ?)",
                [("d1", "one"), ("d2", "two")],
            )
            created.conn.execute(
                "INSERT INTO suggestion (query_id, passage_id, model, grade, created_at)"
                " VALUES (1, 1, 'GPT-4o', 4, '2026-11-28T00:00:00.000Z')"
            )
        record(created, GradeEvent(query="q1", passage="d1", annotator="Alice", grade=3))
        yield created


def _grade(name: str) -> Callable[[Project], object]:
    return lambda p: record(p, GradeEvent(query="q1", passage="d2", annotator=name, grade=2))


def _invite(name: str) -> Callable[[Project], object]:
    return lambda p: add_invite(p, name)


@pytest.mark.parametrize("door", [_grade, _invite], ids=["grade", "invite"])
@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("humans", "raglabel agree gives that name its own raters"),
        ("Judge", "raglabel agree gives that name its own raters"),
        ("judge (2 models)", "raglabel agree gives that name its own raters"),
        ("gpt-4O", "the judge model 'GPT-4o' of this project has that name"),
        ("alice", "the project has annotator 'Alice', the same name in another case"),
        (" bob", "a name has no space at either end"),
    ],
)
def test_a_misleading_new_name_is_refused_at_every_door(
    project: Project,
    door: Callable[[str], Callable[[Project], object]],
    name: str,
    says: str,
) -> None:
    before = project.conn.execute("SELECT count(*) FROM annotator").fetchone()
    with pytest.raises(UsageError, match=says.replace("(", r"\(").replace(")", r"\)")):
        door(name)(project)
    assert project.conn.execute("SELECT count(*) FROM annotator").fetchone() == before


def test_known_people_and_a_judges_own_events_keep_their_names(project: Project) -> None:
    record(project, GradeEvent(query="q1", passage="d2", annotator="Alice", grade=5))
    add_invite(project, "Alice")
    judged = GradeEvent(
        query="q1", passage="d2", annotator="judge", grade=4, source="judge", model="GPT-4o"
    )
    assert record(project, judged).event_id > 0
    record(project, GradeEvent(query="q1", passage="d2", annotator="bob", grade=1))
    names = [n for (n,) in project.conn.execute("SELECT name FROM annotator ORDER BY name")]
    assert names == ["Alice", "bob", "judge"]


def test_a_qrels_import_under_a_reserved_name_writes_nothing(tmp_path: Path, cli: Cli) -> None:
    db = tmp_path / "q.db"
    qrels = tmp_path / "q.qrels"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\n", encoding="utf-8")
    assert cli("init", db)[0] == 0
    code, _, err = cli("import", db, "--qrels", qrels, "--annotator", "humans")
    assert code == 2
    assert "annotator 'humans': raglabel agree gives that name its own raters" in err
    code, _out, err = cli("export", db, "--qrels", tmp_path / "out.qrels")
    assert code == 0, err
    assert (tmp_path / "out.qrels").read_text(encoding="utf-8") == ""


@pytest.mark.parametrize(
    ("names", "pair"),
    [
        # Neither is stored: the message names the two given, no stored annotator.
        (["bob", "dave", "Dave"], "'dave' and 'Dave'"),
        # The project's 'Alice' is neither spelling given here.
        (["alice", "ALICE"], "'alice' and 'ALICE'"),
        # One of them stored: still the two given that clash.
        (["Alice", "alice"], "'Alice' and 'alice'"),
    ],
)
def test_two_spellings_of_one_name_in_one_command_are_named_as_such(
    project: Project, names: list[str], pair: str
) -> None:
    with pytest.raises(UsageError) as raised:
        refuse_names(project.conn, names)
    message = str(raised.value)
    assert message.startswith(f"annotators {pair}: both are named here, the same name in two")
    assert "the project has" not in message
