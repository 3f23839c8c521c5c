"""The stored assignment (issue 30): what ``record`` writes and refuses, whole; the shares
read back in serving order; the last overlap; which assigned queries an annotator has
done, counted by their own grades over the audit sample's pool."""

from __future__ import annotations

import random
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from raglabel.errors import UsageError
from raglabel.storage.adjudication import adjudicate
from raglabel.storage.assignments import (
    assigned,
    assigned_to,
    done_by_annotator,
    done_queries,
    overlap,
    record,
    started,
)
from raglabel.storage.grades import GradeEvent
from raglabel.storage.grades import record as record_grade
from raglabel.storage.importer import ImportRequest, run_import
from raglabel.storage.project import Project

#: Queries q1..q6; the two runs cover q1..q5 (q6 has text only).
COVERED = [f"q{i}" for i in range(1, 6)]


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    """Two runs of 4 passages a query sharing their top 2: 6 pooled pairs a query to
    depth 4, 2 to depth 2."""
    queries = tmp_path / "queries.tsv"
    queries.write_text("".join(f"q{i}\tquestion {i}\n" for i in range(1, 7)))
    runs = []
    for run in "ab":
        path = tmp_path / f"{run}.run"
        lines = []
        for qid in COVERED:
            docs = [f"{qid}-d1", f"{qid}-d2", f"{qid}-{run}1", f"{qid}-{run}2"]
            lines += [
                f"{qid} Q0 {doc} {rank} {9 - rank} {run}\n" for rank, doc in enumerate(docs, 1)
            ]
        path.write_text("".join(lines))
        runs.append((run, path))
    with Project.create(tmp_path / "p.db") as created:
        run_import(created, ImportRequest(queries=queries, runs=runs))
        yield created


def grade(project: Project, who: str, qid: str, passage: str, **extra: object) -> None:
    fields: dict[str, object] = {"grade": 3, **extra}
    event = GradeEvent(query=qid, passage=passage, annotator=who, **fields)  # type: ignore[arg-type]
    record_grade(project, event)


def table(conn: sqlite3.Connection, sql: str) -> list[tuple[object, ...]]:
    return conn.execute(sql).fetchall()


def test_a_new_project_has_no_assignment(project: Project) -> None:
    assert assigned(project.conn) == {}
    assert assigned_to(project.conn, "alice") == []
    assert overlap(project.conn) is None
    assert done_queries(project.conn, "alice", 20) == set()


def test_shares_read_back_in_serving_order_and_annotators_are_created(project: Project) -> None:
    record(
        project,
        {"bob": ["q3", "q1"], "alice": ["q2", "q3", "q1"]},
        overlap=2,
        seed=7,
        audit=False,
    )
    conn = project.conn
    assert assigned(conn) == {"alice": ["q2", "q3", "q1"], "bob": ["q3", "q1"]}
    assert list(assigned(conn)) == ["alice", "bob"]
    assert assigned_to(conn, "bob") == ["q3", "q1"]
    assert assigned_to(conn, "carol") == []
    assert overlap(conn) == 2
    assert table(conn, "SELECT name FROM annotator ORDER BY name") == [("alice",), ("bob",)]
    assert table(conn, "SELECT overlap, seed, audit FROM assign_run") == [(2, 7, 0)]


def test_assigning_again_replaces_the_whole_assignment_and_keeps_each_rows_first_assign(
    project: Project,
) -> None:
    record(project, {"alice": ["q1", "q2"], "bob": ["q2"]}, overlap=1, seed=1, audit=False)
    record(project, {"alice": ["q3", "q1"], "carol": ["q2"]}, overlap=3, seed=None, audit=True)
    conn = project.conn
    assert assigned(conn) == {"alice": ["q3", "q1"], "carol": ["q2"]}
    assert overlap(conn) == 3
    assert table(conn, "SELECT id, overlap, seed, audit FROM assign_run ORDER BY id") == [
        (1, 1, 1, 0),
        (2, 3, None, 1),
    ]
    firsts = table(
        conn,
        "SELECT a.name, q.ext_id, s.assign_id FROM assignment s"
        " JOIN annotator a ON a.id = s.annotator_id JOIN query q ON q.id = s.query_id"
        " ORDER BY a.name, q.ext_id",
    )
    assert firsts == [("alice", "q1", 1), ("alice", "q3", 2), ("carol", "q2", 2)]


@pytest.mark.parametrize(
    ("shares", "message"),
    [
        ({"alice": ["q1", "nope"]}, "query 'nope': no such query in the project"),
        ({"alice": ["q1", "q2", "q1"]}, "query 'q1' is twice in the share of 'alice'"),
        ({"humans": ["q1"]}, "annotator 'humans': raglabel agree gives that name"),
        ({"Judge": ["q1"]}, "annotator 'Judge': raglabel agree gives that name"),
        ({"judge (median of a, b)": ["q1"]}, "raglabel agree gives that name"),
        ({"GPT-X": ["q1"]}, "the judge model 'gpt-x' of this project has that name"),
        ({"Other": ["q1"]}, "the judge model 'other' of this project has that name"),
        ({"Lena": ["q1"]}, "the project has annotator 'lena', the same name in another case"),
        ({" bo": ["q1"]}, "a name has no space at either end"),
        ({"": ["q1"]}, "a name has no space at either end"),
    ],
)
def test_a_refused_assign_writes_nothing(
    project: Project, tmp_path: Path, shares: dict[str, list[str]], message: str
) -> None:
    conn = project.conn
    labels = tmp_path / "other.qrels"
    labels.write_text("q1 0 q1-d1 2\n")
    run_import(project, ImportRequest(judgments=[("other", labels)]))
    grade(project, "lena", "q1", "q1-d1")
    # A judge run's model, as raglabel judge records it.
    with project.write():
        conn.execute(
            "INSERT INTO prompt (version, text, created_at) VALUES ('v1', 't', '2026-01-01')"
        )
        conn.execute(
            "INSERT INTO judge_run (endpoint, models, prompt_version, params, repeats,"
            " started_at, status) VALUES ('http://127.0.0.1', '[\"gpt-x\"]', 'v1', '{}', 1,"
            " '2026-01-01', 'done')"
        )
    record(project, {"bob": ["q4"]}, overlap=1, seed=0, audit=False)
    before = {
        name: table(conn, f"SELECT * FROM {name}")
        for name in ("assignment", "assign_run", "annotator")
    }
    with pytest.raises(UsageError, match=re.escape(message)):
        record(project, {"carol": ["q2"], **shares}, overlap=1, seed=3, audit=False)
    assert {name: table(conn, f"SELECT * FROM {name}") for name in before} == before


def test_existing_annotators_may_keep_their_names(project: Project) -> None:
    # Someone who graded as "Judge" in a file made before names were checked (the row as
    # an older raglabel wrote it): assigning to them makes nothing worse.
    with project.write():
        project.conn.execute("INSERT INTO annotator (name) VALUES ('Judge')")
    grade(project, "Judge", "q1", "q1-d1")
    record(project, {"Judge": ["q1"]}, overlap=1, seed=None, audit=False)
    assert assigned(project.conn) == {"Judge": ["q1"]}


@pytest.mark.parametrize(("overlap_", "seed"), [(0, 1), (1, -1)])
def test_overlap_and_seed_are_checked(project: Project, overlap_: int, seed: int) -> None:
    with pytest.raises(UsageError):
        record(project, {"alice": ["q1"]}, overlap=overlap_, seed=seed, audit=False)
    assert overlap(project.conn) is None


def test_a_query_is_done_when_the_annotator_graded_its_whole_pool(project: Project) -> None:
    record(
        project, {"alice": ["q1", "q2", "q3", "q6"], "bob": ["q1"]}, overlap=1, seed=1, audit=False
    )
    conn = project.conn
    # q1: every pair of both runs' top 4.
    for doc in ("d1", "d2", "a1", "a2", "b1", "b2"):
        grade(project, "alice", "q1", f"q1-{doc}")
    # q2: the top 2 only.
    for doc in ("d1", "d2"):
        grade(project, "alice", "q2", f"q2-{doc}")
    # q3: bob graded it all, alice nothing of it; q4 is alice's work but not assigned.
    for doc in ("d1", "d2", "a1", "a2", "b1", "b2"):
        grade(project, "bob", "q3", f"q3-{doc}")
        grade(project, "alice", "q4", f"q4-{doc}")
    assert done_queries(conn, "alice", 20) == {"q1"}
    assert done_queries(conn, "alice", 2) == {"q1", "q2"}
    # The same answers for everyone at once, from one read of the pools.
    assert done_by_annotator(conn, 2) == {"alice": {"q1", "q2"}, "bob": set()}
    assert done_by_annotator(conn, 2, ["bob", "nobody"]) == {"bob": set()}
    # Asked about some queries only: those of them in the share.
    assert done_queries(conn, "alice", 2, among=["q2", "q4"]) == {"q2"}
    assert done_queries(conn, "alice", 2, among=["q3"]) == set()
    assert done_by_annotator(conn, 2, among=["q1"]) == {"alice": {"q1"}, "bob": set()}
    # q6: no run covers it, so nothing of it was graded to finish.
    assert "q6" not in done_queries(conn, "alice", 1)
    assert done_queries(conn, "bob", 20) == set()  # q3 is not bob's to do
    assert done_queries(conn, "nobody", 20) == set()


def test_a_grade_accepting_the_judges_suggestion_does_not_finish_a_query(
    project: Project,
) -> None:
    record(project, {"alice": ["q1"]}, overlap=1, seed=1, audit=False)
    grade(project, "alice", "q1", "q1-d1")
    grade(project, "alice", "q1", "q1-d2", accepted_suggestion=True)
    assert done_queries(project.conn, "alice", 2) == set()
    grade(project, "alice", "q1", "q1-d2")  # graded again, by their own reading
    assert done_queries(project.conn, "alice", 2) == {"q1"}


def test_a_cleared_grade_unfinishes_and_an_adjudication_counts_as_the_leads(
    project: Project,
) -> None:
    record(project, {"alice": ["q1"], "lead": ["q1"]}, overlap=2, seed=1, audit=False)
    grade(project, "alice", "q1", "q1-d1")
    grade(project, "alice", "q1", "q1-d2")
    assert done_queries(project.conn, "alice", 2) == {"q1"}
    grade(project, "alice", "q1", "q1-d2", kind="clear", grade=None)
    assert done_queries(project.conn, "alice", 2) == set()
    adjudicate(project, "q1", "q1-d1", "lead", 2)
    adjudicate(project, "q1", "q1-d2", "lead", 2)
    assert done_queries(project.conn, "lead", 2) == {"q1"}
    assert done_queries(project.conn, "alice", 2) == set()


def test_started_is_any_standing_grade_of_the_annotators_own_on_an_assigned_query(
    project: Project,
) -> None:
    record(project, {"alice": ["q1", "q2"], "bob": ["q1", "q3"]}, overlap=2, seed=1, audit=False)
    grade(project, "alice", "q1", "q1-a2", accepted_suggestion=True)
    grade(project, "bob", "q2", "q2-d1")  # not bob's: no share is started by it
    grade(project, "bob", "q3", "q3-d1")
    grade(project, "bob", "q3", "q3-d1", kind="clear", grade=None)
    assert started(project.conn) == {("alice", "q1")}


def test_an_assign_dropping_a_started_share_is_refused_whole(project: Project) -> None:
    record(project, {"alice": ["q1", "q2"], "bob": ["q2"]}, overlap=1, seed=1, audit=False)
    # alice grades q2 after the lead planned a new assignment without it.
    grade(project, "alice", "q2", "q2-d1")
    with pytest.raises(UsageError, match="'alice' has started query 'q2'"):
        record(project, {"alice": ["q1"], "bob": ["q2", "q3"]}, overlap=1, seed=2, audit=False)
    assert assigned(project.conn) == {"alice": ["q1", "q2"], "bob": ["q2"]}
    assert overlap(project.conn) == 1


def test_an_assign_leaving_out_work_begun_since_its_plan_without_a_share_is_refused(
    project: Project,
) -> None:
    # The plan read no grade of carol's on q3, so gave q3 to alice; carol graded it
    # before the assign was recorded. Her work would be graded again by someone else.
    record(project, {"alice": ["q1"]}, overlap=1, seed=1, audit=False)
    grade(project, "carol", "q3", "q3-d1")
    planned = {"alice": ["q1", "q3"], "carol": ["q2"]}
    with pytest.raises(UsageError, match="'carol' has started query 'q3'"):
        record(
            project,
            planned,
            overlap=1,
            seed=2,
            audit=False,
            annotators=["alice", "carol"],
            queries=["q2", "q3"],
        )
    assert assigned(project.conn) == {"alice": ["q1"]}
    # Not this assign's query, or not one of its annotators: nothing for it to keep.
    record(project, planned, overlap=1, seed=2, audit=False, annotators=["alice"], queries=["q3"])
    record(
        project,
        planned,
        overlap=1,
        seed=3,
        audit=False,
        annotators=["alice", "carol"],
        queries=["q2"],
    )
    assert assigned(project.conn) == planned


Given = tuple[str, str, str, int | None, bool]  # annotator, query, passage, grade, accepted


def _standing(given: list[Given]) -> dict[str, set[tuple[str, str]]]:
    """Each annotator's pairs whose last event (a grade, or a clear: None) stands as a
    grade of their own reading, replayed from the events as given."""
    last: dict[tuple[str, str, str], tuple[int | None, bool]] = {}
    for who, qid, pid, value, accepted in given:
        last[who, qid, pid] = (value, accepted)
    standing: dict[str, set[tuple[str, str]]] = {}
    for (who, qid, pid), (value, accepted) in last.items():
        if value is not None and not accepted:
            standing.setdefault(who, set()).add((qid, pid))
    return standing


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_done_is_the_plain_rule_on_a_random_project(tmp_path: Path, seed: int) -> None:
    """Done as the rule says it, computed here from the rankings and the events as the
    test wrote them, against the store's answer at several depths. The runs are stored
    with a pool depth of 3, and a corpus imported after them names some passages they
    rank below it: rows the rankings' integers do not hold (0), found by id."""
    rng = random.Random(seed)
    queries = [f"q{i:02d}" for i in range(24)]
    (tmp_path / "queries.tsv").write_text("".join(f"{q}\ttext {q}\n" for q in queries))
    rankings: dict[tuple[str, str], list[str]] = {}
    runs = []
    for run in ("r1", "r2", "r3"):
        lines = []
        for q in queries[:20]:  # q20..q23: no run covers them
            if rng.random() < 0.15:
                continue  # this run lacks the query
            docs = rng.sample([f"{q}-p{j}" for j in range(12)], rng.randint(1, 9))
            rankings[run, q] = docs
            lines += [f"{q} Q0 {d} {r} {20 - r} {run}\n" for r, d in enumerate(docs, 1)]
        path = tmp_path / f"{run}.run"
        path.write_text("".join(lines))
        runs.append((run, path))
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(f'{{"id": "{q}-p{j}", "text": "t"}}\n' for q in queries[:20] for j in range(12))
    )
    people = ["alice", "bob", "carol"]
    shares = {who: sorted(rng.sample(queries, rng.randint(6, 16))) for who in people}
    given: list[Given] = []
    with Project.create(tmp_path / "p.db") as project:
        run_import(project, ImportRequest(queries=queries_path(tmp_path), runs=runs, depth=3))
        run_import(project, ImportRequest(passages=corpus))
        record(project, shares, overlap=1, seed=seed, audit=False)
        for who in people:
            for q in shares[who] + rng.sample(queries, 3):
                pool = sorted({d for (_, rq), docs in rankings.items() if rq == q for d in docs})
                # Often the whole pool, sometimes all but one, some pairs twice.
                chosen = [d for d in pool if rng.random() < 0.97]
                for d in chosen + rng.sample(chosen, min(2, len(chosen))):
                    accepted = rng.random() < 0.05
                    value: int | None = rng.randint(1, 5)
                    if rng.random() < 0.05:
                        value = None
                        grade(project, who, q, d, kind="clear", grade=None)
                    else:
                        grade(project, who, q, d, grade=value, accepted_suggestion=accepted)
                    given.append((who, q, d, value, accepted))
        standing = _standing(given)
        for depth in (1, 2, 3, 5, 9, 1000):
            expected = {}
            for who in people:
                mine = standing.get(who, set())
                expected[who] = {
                    q
                    for q in shares[who]
                    if (
                        pool := {
                            d for (_, rq), docs in rankings.items() if rq == q for d in docs[:depth]
                        }
                    )
                    and all((q, d) in mine for d in pool)
                }
            assert done_by_annotator(project.conn, depth) == expected
            for who in people:
                assert done_queries(project.conn, who, depth) == expected[who]
            # Some done and some not: the comparison has both sides to get wrong.
            assert any(expected.values())
            assert any(set(shares[w]) - expected[w] for w in people)


def queries_path(folder: Path) -> Path:
    return folder / "queries.tsv"
