"""One event model for the grades of passages and of answers: the same rules, the same
undo, whichever kind of target (a passage, or an answer's criterion) an event is about."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from answers_project import build
from pydantic import ValidationError

from raglabel.errors import InputError
from raglabel.storage.answers import record_answer, undo_last_answer
from raglabel.storage.events import (
    ANSWER_LOG,
    PASSAGE_LOG,
    AnswerTarget,
    Event,
    EventKind,
    PassageTarget,
    last_undoable,
    latest_kind,
    values,
)
from raglabel.storage.grades import GradeEvent, record, undo_last
from raglabel.storage.project import Project

PASSAGE = PassageTarget("q1", "d1")
ANSWER = AnswerTarget("alpha", "q1", "faithfulness")

# (kind, fields, the rule it breaks), each broken the same way on either target kind.
BROKEN: list[tuple[EventKind, dict[str, object], str]] = [
    ("grade", {}, "a grade event needs a grade 1-5"),
    ("clear", {"grade": 3}, "only a grade event has one"),
    ("grade", {"grade": 6}, "grade 6 is not 1-5"),
    ("undo", {}, "an undo names the event it reverts"),
    ("clear", {"undoes": 4}, "and only an undo does"),
    ("grade", {"grade": 2, "annotator": "  "}, "an annotator needs a name"),
    ("grade", {"grade": 2, "active_ms": -1}, "active time cannot be negative"),
]


@pytest.mark.parametrize(("kind", "fields", "rule"), BROKEN)
def test_both_target_kinds_keep_one_set_of_rules(
    kind: EventKind, fields: dict[str, object], rule: str
) -> None:
    said = []
    for target in (PASSAGE, ANSWER):
        event = Event(target, **{"annotator": "ann", **fields}, kind=kind)  # type: ignore[arg-type]
        problem = event.problem()
        assert problem is not None and rule in problem
        with pytest.raises(InputError, match=rule):
            event.check()
        said.append(problem)
    assert said[0] == said[1]


def test_a_passage_events_file_line_keeps_the_same_rules() -> None:
    # Only what pydantic does not already refuse by type: the log's own rules.
    passage_only = [("grade", {"grade": 2, "source": "judge"}, "judge events name their model")]
    for kind, fields, rule in BROKEN[:2] + BROKEN[3:6] + passage_only:
        line = {"query": "q1", "passage": "d1", "annotator": "ann", "kind": kind}
        named = {"target" if key == "undoes" else key: value for key, value in fields.items()}
        with pytest.raises(ValidationError, match=rule):
            GradeEvent.model_validate(line | named)


def test_each_target_kind_refuses_what_it_has_no_place_for() -> None:
    cases = [
        (Event(ANSWER, "ann", "skip", note="off topic"), "an answer event is a grade"),
        (Event(ANSWER, "ann", "grade", grade=3, note="n"), "belong to passage events"),
        (Event(ANSWER, "ann", "clear", unsupported=((0, 2),)), "go with a grade"),
        (Event(AnswerTarget("alpha", "q1", "tone"), "ann", "clear"), "unknown criterion"),
        (Event(PASSAGE, "ann", "grade", grade=3, unsupported=((0, 2),)), "belong to an answer"),
        (Event(PASSAGE, "ann", "skip"), "a skip needs a reason"),
        (Event(PASSAGE, "ann", "grade", grade=2, source="judge"), "judge events name their model"),
        # The answer log keeps no source: a judge's grade would be replayed as a person's.
        (
            Event(ANSWER, "ann", "grade", grade=2, source="judge", model="m"),
            "a judge's answers go to the judgment store",
        ),
    ]
    for event, rule in cases:
        assert rule in (event.problem() or ""), event


def test_a_row_holds_the_events_fields_in_its_logs_columns() -> None:
    passage = values(
        PASSAGE_LOG,
        Event(PASSAGE, "ann", "grade", grade=4, graded_at="t", accepted_suggestion=True),
        (1, 2, 3),
    )
    columns = (*PASSAGE_LOG.item, *PASSAGE_LOG.columns)
    assert dict(zip(columns, passage, strict=True)) == {
        "query_id": 1,
        "passage_id": 2,
        "annotator_id": 3,
        "kind": "grade",
        "grade": 4,
        "target": None,
        "note": None,
        "source": "human",
        "model": None,
        "origin": None,
        "shown_at": None,
        "graded_at": "t",
        "active_ms": None,
        "accepted_suggestion": True,
    }
    answer = values(
        ANSWER_LOG,
        Event(ANSWER, "ann", "undo", undoes=7, graded_at="t"),
        (1, "q1", "faithfulness", 3),
    )
    assert answer[4:] == ("undo", None, None, 7, None, None, "t", None)
    spans = values(ANSWER_LOG, Event(ANSWER, "ann", "grade", grade=2, unsupported=((0, 5),)), ())
    assert spans[2] == "[[0, 5]]" and spans[6]  # stamped now when it has no time


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    with Project.open(build(tmp_path)) as opened:
        yield opened


def test_undo_weighs_both_logs_by_when_their_latest_action_was_made(project: Project) -> None:
    conn = project.conn
    assert latest_kind(conn, "ann") is None
    record(project, Event(PASSAGE, "ann", "grade", grade=3, graded_at="2026-01-01T10:00:00Z"))
    assert latest_kind(conn, "ann") == "passage"
    answer = record_answer(
        project, Event(ANSWER, "ann", "grade", grade=4, graded_at="2026-01-01T10:00:01Z")
    )
    assert latest_kind(conn, "ann") == "answer"
    undoable = last_undoable(conn, "answer", "ann")
    assert undoable is not None
    assert (undoable.event_id, undoable.target) == (answer.event_id, ANSWER)
    assert undo_last_answer(project, "ann") is not None
    assert latest_kind(conn, "ann") == "passage"
    passage = last_undoable(conn, "passage", "ann")
    assert passage is not None and passage.target == PASSAGE
    assert undo_last(project, "ann") is not None
    assert latest_kind(conn, "ann") is None
    assert latest_kind(conn, "somebody else") is None


def test_an_event_goes_only_to_its_own_targets_log(project: Project) -> None:
    with pytest.raises(InputError, match="answer log"):
        record(project, Event(ANSWER, "ann", "grade", grade=4))
    with pytest.raises(InputError, match="grade log"):
        record_answer(project, Event(PASSAGE, "ann", "grade", grade=4))
    # An undo names an event of its own log, about the same target and annotator.
    done = record(project, Event(PASSAGE, "ann", "grade", grade=4))
    with pytest.raises(InputError, match=f"no answer event {done.event_id}"):
        record_answer(project, Event(ANSWER, "ann", "undo", undoes=done.event_id))
    with pytest.raises(InputError, match="another item's or annotator's"):
        record(project, Event(PASSAGE, "bob", "undo", undoes=done.event_id))
    with closing(sqlite3.connect(str(project.path))) as check:
        assert check.execute("SELECT count(*) FROM answer_event").fetchone()[0] == 0
        assert check.execute("SELECT count(*) FROM event").fetchone()[0] == 1
