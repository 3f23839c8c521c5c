"""The grade event log: recording, undo and the current-grade cache.

The log is the only source of truth; ``current_grade`` is a cache of it. Most tests
therefore check both what ``record()`` answers and what the tables hold afterwards, and
the property test replays random histories three ways (``record`` as it goes,
``rebuild_current`` from the log, and a reference written here) and wants one answer.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from examples import examples
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from raglabel.errors import InputError
from raglabel.storage.grades import (
    GradeEvent,
    Recorded,
    append_many,
    event_row,
    rebuild_current,
    record,
    replay,
    undo_last,
)
from raglabel.storage.items import ensure_passages, ensure_queries
from raglabel.storage.project import Project

QUERIES = ("q1", "q2")
PASSAGES = ("d1", "d2", "d3")


def _seed(project: Project) -> None:
    with project.write():
        ensure_queries(project.conn, QUERIES)
        ensure_passages(project.conn, PASSAGES)


@pytest.fixture
def project() -> Iterator[Project]:
    with Project.memory() as opened:
        _seed(opened)
        yield opened


def grade(
    project: Project, value: int, annotator: str = "ann", query: str = "q1", passage: str = "d1"
) -> Recorded:
    return record(
        project, GradeEvent(query=query, passage=passage, annotator=annotator, grade=value)
    )


def act(
    project: Project,
    kind: str,
    annotator: str = "ann",
    query: str = "q1",
    passage: str = "d1",
    **extra: Any,
) -> Recorded:
    event = GradeEvent.model_validate(
        {"query": query, "passage": passage, "annotator": annotator, "kind": kind, **extra}
    )
    return record(project, event)


def events(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
    return conn.execute("SELECT * FROM event ORDER BY id").fetchall()


def current_rows(conn: sqlite3.Connection) -> list[tuple[int, ...]]:
    return conn.execute("SELECT * FROM current_grade ORDER BY 1, 2, 3").fetchall()


def standing(conn: sqlite3.Connection) -> dict[tuple[str, str, str], int]:
    """The current grades by external names: what a reader of the project sees."""
    rows = conn.execute(
        "SELECT q.ext_id, p.ext_id, a.name, c.grade FROM current_grade c"
        " JOIN query q ON q.id = c.query_id JOIN passage p ON p.id = c.passage_id"
        " JOIN annotator a ON a.id = c.annotator_id"
    )
    return {(q, p, a): g for q, p, a, g in rows}


# -- recording -------------------------------------------------------------------------


def test_record_returns_the_standing_grade_and_caches_it(project: Project) -> None:
    recorded = grade(project, 4)
    assert recorded == Recorded(event_id=1, query="q1", passage="d1", grade=4)
    assert standing(project.conn) == {("q1", "d1", "ann"): 4}
    (row,) = current_rows(project.conn)
    assert row[-2:] == (4, recorded.event_id)


def test_latest_grade_wins(project: Project) -> None:
    grade(project, 3)
    second = grade(project, 5)
    assert second.grade == 5
    (row,) = current_rows(project.conn)
    assert row[-2:] == (5, second.event_id)
    # The earlier grade stays in the log: the log is append-only.
    assert [e[5] for e in events(project.conn)] == [3, 5]


def test_clear_removes_the_current_grade(project: Project) -> None:
    grade(project, 3)
    cleared = act(project, "clear")
    assert cleared.grade is None
    assert current_rows(project.conn) == []
    assert [e[4] for e in events(project.conn)] == ["grade", "clear"]


def test_skip_and_flag_leave_the_grade_alone(project: Project) -> None:
    grade(project, 4)
    assert act(project, "skip", note="passage is cut off").grade == 4
    assert act(project, "flag").grade == 4
    assert act(project, "flag", note="duplicate of d2").grade == 4
    assert standing(project.conn) == {("q1", "d1", "ann"): 4}
    # On an ungraded item they do not invent a grade either.
    assert act(project, "skip", passage="d2", note="unsure").grade is None
    assert ("q1", "d2", "ann") not in standing(project.conn)


@pytest.mark.parametrize("note", [None, "", "   \n"])
def test_skip_needs_a_reason(note: str | None) -> None:
    with pytest.raises(ValidationError, match="skip needs a reason"):
        GradeEvent(query="q1", passage="d1", annotator="ann", kind="skip", note=note)


def test_grades_are_per_annotator_and_per_item(project: Project) -> None:
    grade(project, 2, annotator="alice")
    grade(project, 5, annotator="bob")
    grade(project, 1, annotator="alice", passage="d2")
    grade(project, 3, annotator="alice", query="q2")
    act(project, "clear", annotator="bob")
    assert standing(project.conn) == {
        ("q1", "d1", "alice"): 2,
        ("q1", "d2", "alice"): 1,
        ("q2", "d1", "alice"): 3,
    }


def test_event_columns_are_stored_as_given(project: Project) -> None:
    event = GradeEvent(
        query="q1",
        passage="d1",
        annotator="ann",
        grade=2,
        source="judge",
        model="judge-model-1",
        origin="app",
        shown_at="2024-01-01T00:00:00.000+00:00",
        graded_at="2024-01-01T00:00:05.000+00:00",
        active_ms=4200,
        accepted_suggestion=False,
    )
    record(project, event)
    row = project.conn.execute(
        "SELECT kind, grade, target, note, source, model, origin, shown_at, graded_at,"
        " active_ms, accepted_suggestion FROM event"
    ).fetchone()
    assert row == (
        "grade",
        2,
        None,
        None,
        "judge",
        "judge-model-1",
        "app",
        "2024-01-01T00:00:00.000+00:00",
        "2024-01-01T00:00:05.000+00:00",
        4200,
        0,
    )


def test_graded_at_defaults_to_now_in_utc(project: Project) -> None:
    grade(project, 3)
    (stamp,) = project.conn.execute("SELECT graded_at FROM event").fetchone()
    assert stamp.endswith("+00:00")


# -- undo ------------------------------------------------------------------------------


def test_successive_undos_walk_back_through_history(project: Project) -> None:
    first = grade(project, 3)
    second = grade(project, 5)
    undone = undo_last(project, "ann")
    assert undone is not None
    assert undone.grade == 3
    assert standing(project.conn) == {("q1", "d1", "ann"): 3}
    again = undo_last(project, "ann")
    assert again is not None
    assert again.grade is None
    assert current_rows(project.conn) == []
    targets = project.conn.execute(
        "SELECT target FROM event WHERE kind = 'undo' ORDER BY id"
    ).fetchall()
    assert targets == [(second.event_id,), (first.event_id,)]
    # Both grades reverted: nothing is left to undo, and nothing more is written.
    assert undo_last(project, "ann") is None
    assert len(events(project.conn)) == 4


def test_undo_of_a_clear_restores_the_grade(project: Project) -> None:
    grade(project, 4)
    act(project, "clear")
    restored = undo_last(project, "ann")
    assert restored is not None
    assert restored.grade == 4
    assert standing(project.conn) == {("q1", "d1", "ann"): 4}


def test_undo_reverts_the_latest_action_across_items(project: Project) -> None:
    grade(project, 4, passage="d1")
    grade(project, 2, passage="d2")
    undone = undo_last(project, "ann")
    assert undone is not None
    assert (undone.passage, undone.grade) == ("d2", None)
    assert standing(project.conn) == {("q1", "d1", "ann"): 4}


def test_undo_of_a_skip_or_flag_keeps_the_grade(project: Project) -> None:
    grade(project, 4)
    skipped = act(project, "skip", note="later")
    undone = undo_last(project, "ann")
    assert undone is not None
    assert undone.grade == 4
    (target,) = project.conn.execute("SELECT target FROM event WHERE kind = 'undo'").fetchone()
    assert target == skipped.event_id


def test_undo_never_touches_another_annotators_actions(project: Project) -> None:
    mine = grade(project, 3, annotator="alice")
    grade(project, 5, annotator="bob")
    grade(project, 1, annotator="bob", passage="d2")
    undone = undo_last(project, "alice")
    assert undone is not None
    (target,) = project.conn.execute(
        "SELECT target FROM event WHERE id = ?", (undone.event_id,)
    ).fetchone()
    assert target == mine.event_id
    assert standing(project.conn) == {("q1", "d1", "bob"): 5, ("q1", "d2", "bob"): 1}
    # Alice has nothing left; Bob's actions are still his to undo.
    assert undo_last(project, "alice") is None
    assert undo_last(project, "bob") is not None
    assert standing(project.conn) == {("q1", "d1", "bob"): 5}


def test_undo_with_nothing_to_undo(project: Project) -> None:
    assert undo_last(project, "nobody") is None
    assert events(project.conn) == []
    assert project.conn.execute("SELECT count(*) FROM annotator").fetchone() == (0,)


def _undo(project: Project, target: int, annotator: str = "ann", passage: str = "d1") -> Recorded:
    return act(project, "undo", annotator=annotator, passage=passage, target=target)


@dataclass
class Case:
    """A history, then one undo that must be refused."""

    build: Any  # (project) -> the undo to attempt, as (target, annotator, passage)
    message: str


def _other_item(project: Project) -> tuple[int, str, str]:
    target = grade(project, 3, passage="d2").event_id
    grade(project, 4, passage="d1")
    return target, "ann", "d1"


def _other_annotator(project: Project) -> tuple[int, str, str]:
    target = grade(project, 3, annotator="alice").event_id
    return target, "bob", "d1"


def _already_undone(project: Project) -> tuple[int, str, str]:
    target = grade(project, 3).event_id
    grade(project, 5)
    _undo(project, target)
    return target, "ann", "d1"


def _an_undo(project: Project) -> tuple[int, str, str]:
    grade(project, 3)
    undo = undo_last(project, "ann")
    assert undo is not None
    return undo.event_id, "ann", "d1"


def _unknown(project: Project) -> tuple[int, str, str]:
    grade(project, 3)
    return 999, "ann", "d1"


@pytest.mark.parametrize(
    "case",
    [
        Case(_other_item, "another item's or annotator's"),
        Case(_other_annotator, "another item's or annotator's"),
        Case(_already_undone, "already undone"),
        Case(_an_undo, "itself an undo"),
        Case(_unknown, "no event 999"),
    ],
    ids=["other-item", "other-annotator", "already-undone", "target-is-undo", "unknown"],
)
def test_bad_undo_is_refused_and_writes_nothing(project: Project, case: Case) -> None:
    target, annotator, passage = case.build(project)
    before = (
        events(project.conn),
        current_rows(project.conn),
        project.conn.execute("SELECT * FROM annotator ORDER BY id").fetchall(),
    )
    with pytest.raises(InputError, match=case.message):
        _undo(project, target, annotator=annotator, passage=passage)
    after = (
        events(project.conn),
        current_rows(project.conn),
        project.conn.execute("SELECT * FROM annotator ORDER BY id").fetchall(),
    )
    assert after == before
    assert not project.conn.in_transaction


@pytest.mark.parametrize(
    ("query", "passage", "message"),
    [("q9", "d1", "unknown query 'q9'"), ("q1", "d9", "unknown passage 'd9'")],
)
def test_unknown_query_or_passage_is_refused(
    project: Project, query: str, passage: str, message: str
) -> None:
    grade(project, 3)
    before = events(project.conn), current_rows(project.conn)
    with pytest.raises(InputError, match=message):
        grade(project, 4, annotator="newcomer", query=query, passage=passage)
    assert (events(project.conn), current_rows(project.conn)) == before
    # The annotator it would have created is rolled back with the rest.
    assert project.conn.execute("SELECT name FROM annotator").fetchall() == [("ann",)]
    assert not project.conn.in_transaction
    # The project is still usable after the refusal.
    assert grade(project, 2).grade == 2


# -- event validation ------------------------------------------------------------------

_BASE = {"query": "q1", "passage": "d1", "annotator": "ann"}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"grade": 0}, "greater than or equal to 1"),
        ({"grade": 6}, "less than or equal to 5"),
        ({"kind": "grade"}, "a grade event needs a grade"),
        ({"kind": "clear", "grade": 3}, "only a grade event has one"),
        ({"kind": "flag", "grade": 3}, "only a grade event has one"),
        ({"kind": "undo"}, "an undo names the event"),
        ({"grade": 3, "target": 1}, "only an undo does"),
        ({"grade": 3, "source": "judge"}, "judge events name their model"),
        ({"grade": 3, "model": "m"}, "only judge events do"),
        ({"grade": 3, "source": "robot"}, "source"),
        ({"kind": "rate", "grade": 3}, "kind"),
        ({"grade": 3, "active_ms": -1}, "greater than or equal to 0"),
        ({"grade": 3, "colour": "red"}, "Extra inputs"),
        ({"grade": 3, "annotator": ""}, "at least 1 character"),
        ({"grade": 3, "query": ""}, "at least 1 character"),
    ],
)
def test_invalid_events_are_rejected(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        GradeEvent.model_validate(_BASE | fields)


def test_valid_events_of_every_kind() -> None:
    for fields in (
        {"grade": 1},
        {"grade": 5, "source": "judge", "model": "m"},
        {"kind": "clear"},
        {"kind": "undo", "target": 7},
        {"kind": "skip", "note": "why"},
        {"kind": "flag"},
    ):
        GradeEvent.model_validate(_BASE | fields)


# -- durability ------------------------------------------------------------------------


def test_every_event_is_committed_before_record_returns(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    with Project.create(path) as project:
        _seed(project)
        other = sqlite3.connect(path)
        try:
            for value in (2, 4):
                recorded = grade(project, value)
                row = other.execute(
                    "SELECT kind, grade FROM event WHERE id = ?", (recorded.event_id,)
                ).fetchone()
                assert row == ("grade", value)
                assert other.execute("SELECT grade FROM current_grade").fetchall() == [(value,)]
            undone = undo_last(project, "ann")
            assert undone is not None
            assert other.execute(
                "SELECT kind FROM event WHERE id = ?", (undone.event_id,)
            ).fetchone() == ("undo",)
            assert other.execute("SELECT grade FROM current_grade").fetchall() == [(2,)]
            assert not project.conn.in_transaction
        finally:
            other.close()


# -- replay, rebuild and bulk append against a reference -------------------------------

ANNOTATORS = ("alice", "bob", "carol")
ITEMS = (("q1", "d1"), ("q1", "d2"), ("q2", "d1"))


@dataclass
class Reference:
    """The log as this test understands it: plain lists, no SQL, no cache."""

    log: list[dict[str, Any]] = field(default_factory=list)

    def undone(self) -> set[int]:
        return {e["target"] for e in self.log if e["kind"] == "undo"}

    def append(self, **event: Any) -> int:
        event["id"] = len(self.log) + 1
        self.log.append(event)
        return event["id"]

    def last_undoable(self, annotator: str) -> dict[str, Any] | None:
        undone = self.undone()
        mine = [
            e
            for e in self.log
            if e["annotator"] == annotator and e["kind"] != "undo" and e["id"] not in undone
        ]
        return mine[-1] if mine else None

    def undo_refused(self, target: int, annotator: str, item: tuple[str, str]) -> bool:
        if not 1 <= target <= len(self.log):
            return True
        event = self.log[target - 1]
        return (
            event["annotator"] != annotator
            or event["item"] != item
            or event["kind"] == "undo"
            or target in self.undone()
        )

    def grade_of(self, item: tuple[str, str], annotator: str) -> int | None:
        """Walk the item's own actions, keeping a stack of the grades they set."""
        undone = self.undone()
        value: int | None = None
        for event in self.log:
            if event["item"] != item or event["annotator"] != annotator:
                continue
            if event["id"] in undone or event["kind"] not in ("grade", "clear"):
                continue
            value = event["grade"] if event["kind"] == "grade" else None
        return value

    def grades(self) -> dict[tuple[str, str, str], int]:
        out = {}
        for item in ITEMS:
            for annotator in ANNOTATORS:
                value = self.grade_of(item, annotator)
                if value is not None:
                    out[(*item, annotator)] = value
        return out


action = st.one_of(
    st.tuples(st.just("grade"), st.integers(1, 5)),
    st.tuples(st.sampled_from(["clear", "flag", "undo_last"]), st.just(0)),
    st.tuples(st.just("skip"), st.just(0)),
    st.tuples(st.just("undo"), st.integers(0, 40)),
)
step = st.tuples(st.sampled_from(ANNOTATORS), st.sampled_from(ITEMS), action)


def _play(project: Project, steps: list[Any]) -> Reference:
    """Apply the steps through the public API, checking each answer against the reference."""
    ref = Reference()
    for annotator, item, (kind, value) in steps:
        query, passage = item
        if kind == "undo_last":
            target_event = ref.last_undoable(annotator)
            result = undo_last(project, annotator)
            if target_event is None:
                assert result is None
                continue
            ref.append(
                kind="undo",
                annotator=annotator,
                item=target_event["item"],
                grade=None,
                target=target_event["id"],
            )
            assert result is not None
            assert (result.query, result.passage) == target_event["item"]
            assert result.grade == ref.grade_of(target_event["item"], annotator)
            continue
        if kind == "undo":
            refused = ref.undo_refused(value, annotator, item)
            try:
                result = act(
                    project, "undo", annotator=annotator, query=query, passage=passage, target=value
                )
            except InputError:
                assert refused
                continue
            assert not refused
            ref.append(kind="undo", annotator=annotator, item=item, grade=None, target=value)
        else:
            extra: dict[str, Any] = {"grade": value} if kind == "grade" else {}
            if kind == "skip":
                extra["note"] = "not sure"
            result = act(project, kind, annotator=annotator, query=query, passage=passage, **extra)
            ref.append(
                kind=kind,
                annotator=annotator,
                item=item,
                grade=extra.get("grade"),
                target=None,
            )
        assert result.event_id == len(ref.log)
        assert result.grade == ref.grade_of(item, annotator)
    return ref


def _fresh() -> Project:
    project = Project.memory()
    _seed(project)
    return project


def _append_in_two(project: Project, annotators: list[Any], rows: list[Any], split: int) -> None:
    """``rows`` (with their annotators) appended in two transactions, cut at ``split``."""
    with project.write():
        project.conn.executemany("INSERT INTO annotator (id, name) VALUES (?, ?)", annotators)
        append_many(project.conn, rows[:split])
    with project.write():
        append_many(project.conn, rows[split:])


@examples(75)
@given(steps=st.lists(step, max_size=40), split=st.integers(0, 40))
def test_random_histories_agree_with_the_reference(steps: list[Any], split: int) -> None:
    with _fresh() as project:
        ref = _play(project, steps)
        conn = project.conn
        assert standing(conn) == ref.grades()
        assert len(events(conn)) == len(ref.log)

        cached = current_rows(conn)
        with project.write():
            rebuild_current(conn)
        assert current_rows(conn) == cached

        # replay() on each item's events, straight from the log.
        for q_id, p_id, a_id in conn.execute(
            "SELECT DISTINCT query_id, passage_id, annotator_id FROM event"
        ).fetchall():
            rows = conn.execute(
                "SELECT id, kind, grade, target FROM event"
                " WHERE query_id = ? AND passage_id = ? AND annotator_id = ? ORDER BY id",
                (q_id, p_id, a_id),
            ).fetchall()
            got = replay(rows)
            cache = conn.execute(
                "SELECT grade, event_id FROM current_grade"
                " WHERE query_id = ? AND passage_id = ? AND annotator_id = ?",
                (q_id, p_id, a_id),
            ).fetchone()
            assert got == (None if cache is None else tuple(cache))

        # The same rows appended in bulk (in two batches, so the second must update
        # items the first already settled) give the same cache.
        rows = conn.execute(
            "SELECT query_id, passage_id, annotator_id, kind, grade, target, note, source,"
            " model, origin, shown_at, graded_at, active_ms, accepted_suggestion"
            " FROM event ORDER BY id"
        ).fetchall()
        annotators = conn.execute("SELECT id, name FROM annotator ORDER BY id").fetchall()
    with _fresh() as bulk:
        _append_in_two(bulk, annotators, rows, split)
        assert current_rows(bulk.conn) == cached
        assert standing(bulk.conn) == ref.grades()


def test_replay_reference_cases() -> None:
    assert replay([]) is None
    assert replay([(1, "grade", 3, None)]) == (3, 1)
    assert replay([(1, "grade", 3, None), (2, "grade", 5, None)]) == (5, 2)
    assert replay([(1, "grade", 3, None), (2, "grade", 5, None), (3, "undo", None, 2)]) == (3, 1)
    assert replay([(1, "grade", 3, None), (2, "clear", None, None)]) is None
    assert replay([(1, "grade", 3, None), (2, "clear", None, None), (3, "undo", None, 2)]) == (3, 1)
    assert replay([(1, "grade", 3, None), (2, "skip", None, None), (3, "flag", None, None)]) == (
        3,
        1,
    )


def test_bulk_append_matches_recording_one_by_one() -> None:
    # A history with every kind of event, recorded one at a time...
    with _fresh() as one:
        grade(one, 3, annotator="alice")
        grade(one, 5, annotator="alice")
        grade(one, 2, annotator="bob")
        act(one, "clear", annotator="bob")
        grade(one, 4, annotator="alice", passage="d2")
        act(one, "skip", annotator="alice", passage="d2", note="long")
        undo_last(one, "alice")
        undo_last(one, "alice")
        act(one, "flag", annotator="bob", query="q2", passage="d3")
        grade(one, 1, annotator="bob", query="q2", passage="d3")
        rows = one.conn.execute(
            "SELECT query_id, passage_id, annotator_id, kind, grade, target, note, source,"
            " model, origin, shown_at, graded_at, active_ms, accepted_suggestion"
            " FROM event ORDER BY id"
        ).fetchall()
        annotators = one.conn.execute("SELECT id, name FROM annotator").fetchall()
        expected = current_rows(one.conn)
        # The two undos revert alice's skip and then her d2 grade, not her d1 grades.
        assert standing(one.conn) == {
            ("q1", "d1", "alice"): 5,
            ("q2", "d3", "bob"): 1,
        }
    # ...and all at once.
    with _fresh() as bulk:
        with bulk.write():
            bulk.conn.executemany("INSERT INTO annotator (id, name) VALUES (?, ?)", annotators)
            append_many(bulk.conn, rows)
        assert current_rows(bulk.conn) == expected
        assert len(events(bulk.conn)) == len(rows)


def test_rebuild_current_repairs_a_damaged_cache(project: Project) -> None:
    grade(project, 3)
    grade(project, 4, passage="d2")
    act(project, "clear", passage="d2")
    expected = current_rows(project.conn)
    with project.write():
        project.conn.execute("DELETE FROM current_grade")
        project.conn.execute("INSERT INTO current_grade VALUES (1, 2, 1, 5, 2)")
    with project.write():
        rebuild_current(project.conn)
    assert current_rows(project.conn) == expected


@examples(50)
@given(
    grades=st.lists(
        st.tuples(st.sampled_from(ANNOTATORS), st.sampled_from(ITEMS), st.integers(1, 5)),
        max_size=30,
    ),
    split=st.integers(0, 30),
)
def test_bulk_append_of_grades_only(grades: list[Any], split: int) -> None:
    # Imports of qrels are all grades, which append_many may settle without a replay;
    # the answer must still be each item's latest grade and the event that set it.
    with _fresh() as one:
        for annotator, (query, passage), value in grades:
            grade(one, value, annotator=annotator, query=query, passage=passage)
        rows = one.conn.execute(
            "SELECT query_id, passage_id, annotator_id, kind, grade, target, note, source,"
            " model, origin, shown_at, graded_at, active_ms, accepted_suggestion"
            " FROM event ORDER BY id"
        ).fetchall()
        annotators = one.conn.execute("SELECT id, name FROM annotator").fetchall()
        expected = current_rows(one.conn)
    with _fresh() as bulk:
        _append_in_two(bulk, annotators, rows, split)
        assert current_rows(bulk.conn) == expected
        # Mixed with a later clear, the same items take the general path and still agree.
        if rows:
            query_id, passage_id, annotator, *_ = rows[-1]
            clear = GradeEvent(query="-", passage="-", annotator="-", kind="clear")
            with bulk.write():
                append_many(
                    bulk.conn,
                    [event_row(clear, query_id, passage_id, annotator)],
                )
            assert (query_id, passage_id, annotator) not in {
                row[:3] for row in current_rows(bulk.conn)
            }
