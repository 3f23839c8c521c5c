"""Resolved labels: one grade per pair from several annotators' grades (median, max or min,
or one annotator's), optionally filled in with the judge's suggestions."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from examples import examples
from hypothesis import given
from hypothesis import strategies as st

from raglabel.errors import UsageError
from raglabel.storage.adjudication import adjudicate
from raglabel.storage.grades import GradeEvent, record, undo_last
from raglabel.storage.items import ensure_passages, ensure_queries, names_of_rows
from raglabel.storage.labels import (
    LabelChoice,
    own_grade_rows,
    own_grades,
    resolve,
    resolved_grade_rows,
    resolved_grades,
    resolved_labels,
    settle,
    settled_columns,
)
from raglabel.storage.policies import POLICIES, Policy
from raglabel.storage.project import Project


@pytest.mark.parametrize(
    ("grades", "median", "high", "low"),
    [
        ([4], 4, 4, 4),
        ([2, 4], 2, 4, 2),
        ([4, 2], 2, 4, 2),
        ([1, 3, 5], 3, 5, 1),
        ([5, 1, 3], 3, 5, 1),
        ([1, 2, 4, 5], 2, 5, 1),
        ([5, 5, 1, 1], 1, 5, 1),
        ([2, 2, 3], 2, 3, 2),
    ],
)
def test_resolve(grades: list[int], median: int, high: int, low: int) -> None:
    assert resolve(grades) == median
    assert resolve(grades, "median") == median
    assert resolve(grades, "max") == high
    assert resolve(grades, "min") == low


def test_resolve_needs_a_grade() -> None:
    with pytest.raises(ValueError, match="no grades"):
        resolve([])


def _labels(conn: sqlite3.Connection, choice: LabelChoice) -> dict[tuple[str, str], int]:
    qrels = resolved_labels(conn, choice).qrels
    return {(q, p): g for q, p, g in zip(qrels.qids, qrels.docids, qrels.grades, strict=True)}


@pytest.fixture
def graded() -> Iterator[Project]:
    """Alice, bob and carol's grades for three pairs, beside a cleared and an undone one."""
    with Project.memory() as project:
        with project.write():
            ensure_queries(project.conn, ("q1", "q2"))
            ensure_passages(project.conn, ("d1", "d2", "d3"))
        for annotator, query, passage, value in [
            ("alice", "q1", "d1", 2),
            ("bob", "q1", "d1", 4),
            ("alice", "q1", "d2", 1),
            ("bob", "q1", "d2", 3),
            ("carol", "q1", "d2", 5),
            ("bob", "q2", "d3", 5),
        ]:
            record(
                project,
                GradeEvent(query=query, passage=passage, annotator=annotator, grade=value),
            )
        # Cleared and undone grades must not count.
        record(project, GradeEvent(query="q1", passage="d1", annotator="carol", grade=1))
        record(project, GradeEvent(query="q1", passage="d1", annotator="carol", kind="clear"))
        record(project, GradeEvent(query="q2", passage="d3", annotator="alice", grade=1))
        undo_last(project, "alice")
        yield project


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("median", {("q1", "d1"): 2, ("q1", "d2"): 3, ("q2", "d3"): 5}),
        ("max", {("q1", "d1"): 4, ("q1", "d2"): 5, ("q2", "d3"): 5}),
        ("min", {("q1", "d1"): 2, ("q1", "d2"): 1, ("q2", "d3"): 5}),
    ],
)
def test_resolved_labels_by_policy(
    graded: Project, policy: Any, expected: dict[tuple[str, str], int]
) -> None:
    resolved = resolved_labels(graded.conn, LabelChoice(policy=policy))
    assert _labels(graded.conn, LabelChoice(policy=policy)) == expected
    assert resolved.human == 3
    assert resolved.judge_filled == 0
    assert policy in resolved.source
    assert "judge" not in resolved.source


def test_resolved_labels_of_one_annotator(graded: Project) -> None:
    assert _labels(graded.conn, LabelChoice(annotator="alice")) == {
        ("q1", "d1"): 2,
        ("q1", "d2"): 1,
    }
    resolved = resolved_labels(graded.conn, LabelChoice(annotator="bob", policy="min"))
    assert resolved.human == 3
    assert "'bob'" in resolved.source
    # Carol graded and then cleared d1: only her d2 grade stands.
    assert _labels(graded.conn, LabelChoice(annotator="carol")) == {("q1", "d2"): 5}


def test_unknown_annotator_is_a_usage_error(graded: Project) -> None:
    with pytest.raises(UsageError, match="'dave'"):
        resolved_labels(graded.conn, LabelChoice(annotator="dave"))


def _suggest(conn: sqlite3.Connection, query: str, passage: str, model: str, value: int) -> None:
    conn.execute(
        "INSERT INTO suggestion (query_id, passage_id, model, grade, created_at)"
        " SELECT q.id, p.id, ?, ?, '2024-01-01' FROM query q, passage p"
        " WHERE q.ext_id = ? AND p.ext_id = ?",
        (model, value, query, passage),
    )


def test_fill_with_judge(graded: Project) -> None:
    conn = graded.conn
    with graded.write():
        # A judge grade for a human-graded pair never replaces the human one.
        _suggest(conn, "q1", "d1", "m1", 5)
        # The latest suggestion of a model counts: m1 says 1 then 4; m2 says 2; m3 says 5.
        # Lower median of [4, 2, 5] is 4, of the first grades [1, 2, 5] it would be 2.
        _suggest(conn, "q2", "d1", "m1", 1)
        _suggest(conn, "q2", "d1", "m2", 2)
        _suggest(conn, "q2", "d1", "m3", 5)
        _suggest(conn, "q2", "d1", "m1", 4)
        # Two models: lower median of [2, 3] is 2.
        _suggest(conn, "q1", "d3", "m1", 3)
        _suggest(conn, "q1", "d3", "m2", 2)

    without = resolved_labels(conn, LabelChoice())
    assert (without.human, without.judge_filled) == (3, 0)
    assert ("q2", "d1") not in _labels(conn, LabelChoice())

    choice = LabelChoice(fill_with_judge=True)
    resolved = resolved_labels(conn, choice)
    assert _labels(conn, choice) == {
        ("q1", "d1"): 2,
        ("q1", "d2"): 3,
        ("q2", "d3"): 5,
        ("q2", "d1"): 4,
        ("q1", "d3"): 2,
    }
    assert (resolved.human, resolved.judge_filled) == (3, 2)
    assert "judge" in resolved.source
    assert "2 pairs from m1, m2, m3" in resolved.source


def test_fill_with_judge_when_the_judge_has_nothing_to_add(graded: Project) -> None:
    with graded.write():
        _suggest(graded.conn, "q1", "d1", "m1", 5)
    resolved = resolved_labels(graded.conn, LabelChoice(fill_with_judge=True))
    assert resolved.judge_filled == 0
    assert _labels(graded.conn, LabelChoice(fill_with_judge=True))[("q1", "d1")] == 2
    assert "0 pairs from no model" in resolved.source


def test_fill_with_judge_fills_around_one_annotator(graded: Project) -> None:
    with graded.write():
        _suggest(graded.conn, "q2", "d3", "m1", 2)
        _suggest(graded.conn, "q1", "d2", "m1", 4)
    labels = _labels(graded.conn, LabelChoice(annotator="alice", fill_with_judge=True))
    # Alice graded q1/d1 and q1/d2; q2/d3 is bob's, so for her the judge fills it.
    assert labels == {("q1", "d1"): 2, ("q1", "d2"): 1, ("q2", "d3"): 2}


@examples(300)
@given(
    rows=st.lists(
        st.tuples(
            st.integers(1, 3),  # query row
            st.integers(1, 4),  # passage row
            st.integers(1, 5),  # grade
            st.booleans(),  # adjudicated
        ),
        max_size=40,
    ),
    policy=st.sampled_from(POLICIES),
)
def test_settled_columns_agree_with_settle(
    rows: list[tuple[int, int, int, bool]], policy: Policy
) -> None:
    # Rows grouped by pair, as current grades come (the event ids are the rows' places,
    # so that "latest" differs from "largest grade").
    ordered = sorted(enumerate(rows), key=lambda item: (item[1][0], item[1][1]))
    events = [event for event, _ in ordered]
    table = [row for _, row in ordered]
    expected = settle(
        (((q, p), g, e, adj) for e, (q, p, g, adj) in zip(events, table, strict=True)), policy
    )
    columns = np.array([(q, p, g, int(adj)) for q, p, g, adj in table], dtype=np.int64)
    columns = columns.reshape(-1, 4)
    queries, passages, grades = settled_columns(
        columns[:, 0],
        columns[:, 1],
        columns[:, 2],
        np.array(events, dtype=np.int64),
        columns[:, 3].astype(np.bool_),
        policy=policy,
    )
    pairs = zip(queries.tolist(), passages.tolist(), strict=True)
    found = dict(zip(pairs, grades.tolist(), strict=True))
    assert found == expected
    assert list(found) == list(expected)  # each pair once, in order of its first row


@pytest.mark.parametrize("wanted", [[2], [4, 2, 4, 4, 2, 4], [1, 2, 3, 4, 5], [9, 2]])
def test_names_of_rows_probe_or_read_the_table_whole(wanted: list[int]) -> None:
    # Of ten rows, two distinct ones are probed however often they repeat; five read the
    # table whole: the same names either way. A row the table lacks is left out.
    with Project.memory() as project:
        with project.write():
            ensure_passages(project.conn, [f"d{i}" for i in range(1, 11)])
            project.conn.execute("DELETE FROM passage WHERE id = 9")
        rows = dict(project.conn.execute("SELECT id, ext_id FROM passage"))
        found = names_of_rows(project.conn, "passage", np.array(wanted, dtype=np.int64))
        assert {row: found[row] for row in wanted if row in rows} == {
            row: rows[row] for row in wanted if row in rows
        }
        assert 9 not in found
        assert names_of_rows(project.conn, "passage", np.zeros(0, dtype=np.int64)) == {}


def test_grade_rows_by_row_id_agree_with_the_named_grades(graded: Project) -> None:
    # Several annotators on a pair, a cleared and an undone grade, then a lead's final
    # grade on one pair: the integer rows the app reads say what the named reads say.
    conn = graded.conn
    adjudicate(graded, "q1", "d2", "lead", 1)
    names = dict(conn.execute("SELECT id, ext_id FROM passage"))
    expected = sorted(resolved_grades(conn))
    rows = resolved_grade_rows(conn).tolist()
    assert sorted((q, names[p], g) for q, p, g in rows) == expected
    assert len(rows) == 3 and rows == sorted(rows)  # each pair once, in pair order
    for row in {q for q, _, _ in expected}:
        one = resolved_grade_rows(conn, query_row=row).tolist()
        assert one == [r for r in rows if r[0] == row]
    for annotator in ("alice", "bob", "carol", "lead"):
        own = own_grade_rows(conn, annotator).tolist()
        assert sorted((q, names[p], g) for q, p, g in own) == sorted(own_grades(conn, annotator))
