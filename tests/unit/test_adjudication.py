"""Adjudication: where annotators disagree, and the lead's grade as the pair's final label.

The final grade is an ordinary event in the log (origin 'adjudication'), so it is undone
like any other, and ``raglabel eval DB`` picks it up through the resolved labels.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from raglabel.cli.main import main
from raglabel.storage.adjudication import Disagreement, adjudicate, disagreements
from raglabel.storage.grades import GradeEvent, record, undo_last
from raglabel.storage.labels import LabelChoice, resolved_labels
from raglabel.storage.project import Project

# (query, passage) -> {annotator: grade}
GRADES: dict[tuple[str, str], dict[str, int]] = {
    ("q1", "d1"): {"alice": 5, "bob": 2, "carol": 3},  # spread 3, median 3
    ("q1", "d2"): {"alice": 4, "bob": 4},  # agreement
    ("q2", "d3"): {"alice": 1, "bob": 2},  # spread 1
    ("q2", "d4"): {"alice": 5, "bob": 1},  # spread 4, median 1
    ("q1", "d4"): {"carol": 2, "bob": 5},  # spread 3, median 2
    ("q2", "d1"): {"carol": 3},  # one annotator: never a disagreement
}


def seed(project: Project) -> None:
    for (query, passage), by_name in GRADES.items():
        for name, grade in by_name.items():
            event = GradeEvent(query=query, passage=passage, annotator=name, grade=grade)
            record(project, event)


def labels(project: Project, choice: LabelChoice | None = None) -> dict[tuple[str, str], int]:
    qrels = resolved_labels(project.conn, choice or LabelChoice()).qrels
    return {(q, p): g for q, p, g in zip(qrels.qids, qrels.docids, qrels.grades, strict=True)}


@pytest.fixture
def project(empty_project: Path) -> Iterator[Project]:
    with Project.open(empty_project) as created:
        with created.write():
            created.conn.executemany(
                "INSERT INTO query (ext_id, text) VALUES (?, ?)",
                [("q1", "first question"), ("q2", "second question")],
            )
            created.conn.executemany(
                "INSERT INTO passage (ext_id, text) VALUES (?, ?)",
                [(f"d{i}", f"passage {i}") for i in range(1, 5)],
            )
        seed(created)
        yield created


# -- disagreements -----------------------------------------------------------------------


def test_disagreements_widest_first_then_by_query_and_passage(project: Project) -> None:
    assert disagreements(project.conn) == [
        Disagreement("q2", "d4", 4, {"alice": 5, "bob": 1}, None),
        Disagreement("q1", "d1", 3, {"alice": 5, "bob": 2, "carol": 3}, None),
        Disagreement("q1", "d4", 3, {"carol": 2, "bob": 5}, None),
    ]


def test_min_spread(project: Project) -> None:
    assert [(d.query, d.passage) for d in disagreements(project.conn, min_spread=4)] == [
        ("q2", "d4")
    ]
    assert [(d.query, d.passage, d.spread) for d in disagreements(project.conn, 1)] == [
        ("q2", "d4", 4),
        ("q1", "d1", 3),
        ("q1", "d4", 3),
        ("q2", "d3", 1),
    ]
    assert disagreements(project.conn, min_spread=5) == []
    with pytest.raises(ValueError, match="at least 1"):
        disagreements(project.conn, min_spread=0)


def test_disagreements_follow_current_grades(project: Project) -> None:
    # bob changes his mind on q2/d4: a spread of 1 no longer counts.
    record(project, GradeEvent(query="q2", passage="d4", annotator="bob", grade=4))
    assert [(d.query, d.passage) for d in disagreements(project.conn)] == [
        ("q1", "d1"),
        ("q1", "d4"),
    ]
    # A cleared grade leaves the comparison.
    record(project, GradeEvent(query="q1", passage="d4", annotator="carol", kind="clear"))
    assert [(d.query, d.passage) for d in disagreements(project.conn)] == [("q1", "d1")]


def test_judge_suggestions_are_not_annotators(project: Project) -> None:
    event = GradeEvent(
        query="q1", passage="d2", annotator="llm", grade=1, source="judge", model="m"
    )
    record(project, event)
    assert ("q1", "d2") not in {(d.query, d.passage) for d in disagreements(project.conn)}


def test_adjudicated_pairs_show_their_final_grade(project: Project) -> None:
    done = adjudicate(project, "q1", "d1", "lead", 4, shown_at="2026-01-01T00:00:00", active_ms=900)
    assert done.grade == 4
    found = {(d.query, d.passage): d for d in disagreements(project.conn)}
    # The pair stays listed, with the annotators' grades as they were and the final one.
    assert found[("q1", "d1")] == Disagreement("q1", "d1", 3, {"alice": 5, "bob": 2, "carol": 3}, 4)
    assert found[("q2", "d4")].final is None
    adjudicate(project, "q1", "d1", "other lead", 2)
    assert {(d.query, d.passage): d.final for d in disagreements(project.conn)}[("q1", "d1")] == 2


def test_adjudication_is_a_grade_event(project: Project) -> None:
    done = adjudicate(project, "q1", "d1", "lead", 4, shown_at="2026-01-01T00:00:00", active_ms=900)
    row = project.conn.execute(
        "SELECT e.kind, e.grade, e.origin, e.source, e.shown_at, e.active_ms, a.name"
        " FROM event e JOIN annotator a ON a.id = e.annotator_id WHERE e.id = ?",
        (done.event_id,),
    ).fetchone()
    assert row == ("grade", 4, "adjudication", "human", "2026-01-01T00:00:00", 900, "lead")


def test_the_leads_adjudications_are_no_ratings_of_hers(project: Project) -> None:
    # Agreement among annotators reads ratings: an adjudication takes a side, so counting
    # it as the lead's rating would make her agree with whoever she sided with.
    from raglabel.storage.ratings import load_ratings

    record(project, GradeEvent(query="q2", passage="d1", annotator="lead", grade=4))
    adjudicate(project, "q1", "d1", "lead", 5)
    adjudicate(project, "q2", "d4", "lead", 5)
    ratings = load_ratings(project.conn)
    assert ratings.annotators["lead"] == {("q2", "d1"): 4}  # her own grade only
    assert ratings.resolved[("q1", "d1")] == 5  # yet the adjudication stands
    adjudicate(project, "q1", "d4", "only lead", 2)
    assert "only lead" not in load_ratings(project.conn).annotators


# -- resolved labels ---------------------------------------------------------------------


def test_adjudication_wins_over_the_median(project: Project) -> None:
    before = labels(project)
    assert before[("q1", "d1")] == 3 and before[("q2", "d4")] == 1
    adjudicate(project, "q1", "d1", "lead", 5)
    after = labels(project)
    assert after[("q1", "d1")] == 5
    assert {pair: g for pair, g in after.items() if pair != ("q1", "d1")} == {
        pair: g for pair, g in before.items() if pair != ("q1", "d1")
    }


@pytest.mark.parametrize("policy", ["median", "max", "min"])
def test_adjudication_wins_under_every_policy(project: Project, policy: Any) -> None:
    adjudicate(project, "q2", "d4", "lead", 3)  # alice 5, bob 1: max 5, min 1
    assert labels(project, LabelChoice(policy))[("q2", "d4")] == 3


def test_latest_adjudication_wins(project: Project) -> None:
    adjudicate(project, "q1", "d1", "lead", 4)
    adjudicate(project, "q1", "d1", "second", 2)
    assert labels(project)[("q1", "d1")] == 2
    # The first lead revising their grade makes theirs the latest again.
    adjudicate(project, "q1", "d1", "lead", 5)
    assert labels(project)[("q1", "d1")] == 5


def test_a_pair_only_the_lead_graded(project: Project) -> None:
    adjudicate(project, "q2", "d2", "lead", 4)
    assert labels(project)[("q2", "d2")] == 4


def test_one_annotator_choice_ignores_adjudication(project: Project) -> None:
    adjudicate(project, "q1", "d1", "lead", 5)
    assert labels(project, LabelChoice(annotator="bob"))[("q1", "d1")] == 2
    # The lead's own grades are theirs like anyone's.
    assert labels(project, LabelChoice(annotator="lead")) == {("q1", "d1"): 5}


def test_undoing_an_adjudication_restores_the_median(project: Project) -> None:
    adjudicate(project, "q1", "d1", "lead", 5)
    adjudicate(project, "q1", "d1", "second", 1)
    assert labels(project)[("q1", "d1")] == 1
    undone = undo_last(project, "second")
    assert undone is not None and undone.grade is None
    assert labels(project)[("q1", "d1")] == 5
    undo_last(project, "lead")
    assert labels(project)[("q1", "d1")] == 3
    assert {(d.query, d.passage): d.final for d in disagreements(project.conn)}[
        ("q1", "d1")
    ] is None


def test_a_lead_overruling_an_earlier_plain_grade_of_their_own(project: Project) -> None:
    # carol graded q1/d4 as an annotator, then settles it as the lead: her adjudicated
    # grade replaces her plain one and is the final label.
    adjudicate(project, "q1", "d4", "carol", 4)
    assert labels(project)[("q1", "d4")] == 4
    undo_last(project, "carol")
    assert labels(project)[("q1", "d4")] == 2


def test_source_says_adjudicated_grades_win() -> None:
    assert LabelChoice().describe() == (
        "human: median over annotators' current grades; adjudicated grades win"
    )
    assert LabelChoice(annotator="bob").describe() == "human: annotator 'bob'"


# -- raglabel eval DB --------------------------------------------------------------------


def eval_db(db: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    code = main(["eval", str(db), "--format", "json", "--per-query", "-k", "1"])
    out, err = capsys.readouterr()
    assert code == 0, err
    report: dict[str, Any] = json.loads(out)
    return report


def test_eval_db_uses_the_adjudicated_grade(
    project: Project, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "sys.run"
    run.write_text("q1 Q0 d1 1 0.9 sys\nq1 Q0 d2 2 0.8 sys\nq2 Q0 d4 1 0.9 sys\n")
    db = project.path
    assert db is not None
    assert main(["import", str(db), "--run", f"sys={run}"]) == 0

    before = eval_db(db, capsys)
    assert before["labels"]["source"].endswith("; adjudicated grades win")
    # q1's top passage resolves to the median 3, below the relevance threshold of 4.
    assert before["runs"]["sys"]["per_query"]["q1"]["precision_4plus@1"] == 0.0

    adjudicate(project, "q1", "d1", "lead", 5)
    after = eval_db(db, capsys)
    assert after["runs"]["sys"]["per_query"]["q1"]["precision_4plus@1"] == 1.0
    assert after["labels"]["fingerprint"] != before["labels"]["fingerprint"]

    undo_last(project, "lead")
    again = eval_db(db, capsys)
    assert again["runs"] == before["runs"]
    assert again["labels"]["fingerprint"] == before["labels"]["fingerprint"]
