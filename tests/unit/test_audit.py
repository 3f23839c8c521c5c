"""The audit sample (issue 29, part 1): draws that are uniform, reproducible from their
seed and recorded; later draws that extend them; and which drawn queries people graded
in full, where judge suggestions and imported labels do not count and adjudications do."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
from scipy import stats

from raglabel.errors import UsageError
from raglabel.storage.adjudication import adjudicate
from raglabel.storage.audit import (
    audit,
    covered_queries,
    draw,
    draw_order,
    draws,
    waiting_pairs,
)
from raglabel.storage.grades import GradeEvent, record
from raglabel.storage.importer import ImportRequest, run_import
from raglabel.storage.project import Project

if TYPE_CHECKING:
    from cli_helpers import Cli

#: Queries q01..q12; runs cover q01..q10 (q11 and q12 have text only).
COVERED = [f"q{i:02d}" for i in range(1, 11)]


def _write_runs(folder: Path) -> tuple[Path, Path, Path]:
    """Two runs of 6 passages a query over q01..q10, sharing their top 3, and the queries."""
    queries = folder / "queries.tsv"
    queries.write_text("".join(f"q{i:02d}\tquestion {i}\n" for i in range(1, 13)))
    a, b = folder / "a.run", folder / "b.run"
    lines_a, lines_b = [], []
    for qid in COVERED:
        shared = [f"{qid}-d{j}" for j in range(1, 4)]
        own_a = [f"{qid}-a{j}" for j in range(1, 4)]
        own_b = [f"{qid}-b{j}" for j in range(1, 4)]
        for rank, doc in enumerate(shared + own_a, 1):
            lines_a.append(f"{qid} Q0 {doc} {rank} {10 - rank} a\n")
        for rank, doc in enumerate(shared + own_b, 1):
            lines_b.append(f"{qid} Q0 {doc} {rank} {10 - rank} b\n")
    a.write_text("".join(lines_a))
    b.write_text("".join(lines_b))
    return queries, a, b


@pytest.fixture
def project(tmp_path: Path, empty_project: Path) -> Iterator[Project]:
    queries, a, b = _write_runs(tmp_path)
    with Project.open(empty_project) as created:
        run_import(created, ImportRequest(queries=queries, runs=[("a", a), ("b", b)]))
        yield created


def grade(project: Project, qid: str, passage: str, value: int = 3, **extra: object) -> None:
    record(
        project,
        GradeEvent(query=qid, passage=passage, annotator="alice", grade=value, **extra),  # type: ignore[arg-type]
    )


def top(qid: str, depth: int) -> list[str]:
    """The passages some run ranks within ``depth`` for ``qid`` (the fixture's runs)."""
    shared = [f"{qid}-d{j}" for j in range(1, 4)]
    deeper = [f"{qid}-{run}{j}" for j in range(1, 4) for run in "ab" if 3 + j <= depth]
    return shared[:depth] + deeper


# -- the draw ----------------------------------------------------------------------------


def test_draw_order_is_the_documented_recipe() -> None:
    population = [f"q{i:03d}" for i in range(50)]
    for seed in (0, 1, 7, 2**40 + 3):
        # The recipe as the docs state it, written out: one uniform number per member
        # in query id order from numpy's PCG64 generator, smallest first.
        keys = np.random.Generator(np.random.PCG64(seed)).random(len(population)).tolist()
        expected = [population[i] for i in sorted(range(len(population)), key=lambda i: keys[i])]
        assert draw_order(population, seed) == expected
    assert sorted(draw_order(population, 3)) == population  # a permutation


def test_draws_are_uniform_over_the_population() -> None:
    """Over 4,000 seeds, each of 10 queries is among 3 drawn equally often, and first
    equally often: chi-square tests of uniformity (scipy) do not reject."""
    population = [f"q{i}" for i in range(10)]
    members: Counter[str] = Counter()
    firsts: Counter[str] = Counter()
    for seed in range(4000):
        drawn = draw_order(population, seed)[:3]
        members.update(drawn)
        firsts[drawn[0]] += 1
    assert sum(members.values()) == 12_000
    for counts in (members, firsts):
        observed = [counts[q] for q in population]
        assert stats.chisquare(observed).pvalue > 0.001, observed


def test_a_draw_is_recorded_and_reproducible_from_its_seed(project: Project) -> None:
    made = draw(project, 4, seed=11)
    assert made.expected_population is None
    assert made.draw.population == len(COVERED)
    assert list(made.draw.drawn) == draw_order(COVERED, 11)[:4]
    (stored,) = draws(project.conn)
    assert stored == made.draw
    assert stored.time.endswith("+00:00")


def test_the_same_seed_and_population_give_the_same_members(tmp_path: Path) -> None:
    drawn = []
    for name in ("one", "two"):
        folder = tmp_path / name
        folder.mkdir()
        queries, a, b = _write_runs(folder)
        with Project.create(folder / "p.db") as created:
            run_import(created, ImportRequest(queries=queries, runs=[("a", a), ("b", b)]))
            drawn.append(draw(created, 5, seed=2026).draw.drawn)
    assert drawn[0] == drawn[1]


def test_a_later_draw_extends_the_sample_from_the_queries_not_drawn(project: Project) -> None:
    first = draw(project, 3, seed=5).draw
    second = draw(project, 4, seed=5)
    left = [q for q in COVERED if q not in first.drawn]
    assert second.draw.population == len(left) == 7
    assert second.expected_population == 7  # nothing changed in between
    assert list(second.draw.drawn) == draw_order(left, 5)[:4]
    assert not set(first.drawn) & set(second.draw.drawn)
    assert [d.drawn for d in draws(project.conn)] == [first.drawn, second.draw.drawn]
    # The last three: every covered query drawn, none twice, none uncovered.
    third = draw(project, 3, seed=1).draw
    every = [q for d in draws(project.conn) for q in d.drawn]
    assert sorted(every) == COVERED
    assert third.population == 3


def test_queries_no_run_covers_are_never_drawn(project: Project) -> None:
    assert covered_queries(project.conn) == COVERED
    drawn = draw(project, len(COVERED), seed=3).draw.drawn
    assert "q11" not in drawn and "q12" not in drawn


def test_more_than_are_left_is_an_error_that_writes_nothing(project: Project) -> None:
    draw(project, 8, seed=1)
    with pytest.raises(UsageError, match=r"--sample 3: only 2 queries are left to draw"):
        draw(project, 3, seed=1)
    assert len(draws(project.conn)) == 1
    assert project.conn.execute("SELECT count(*) FROM audit_member").fetchone() == (8,)
    draw(project, 2, seed=1)
    with pytest.raises(UsageError, match=r"only 0 queries are left"):
        draw(project, 1, seed=1)


def test_a_project_without_runs_has_nothing_to_draw(tmp_path: Path) -> None:
    with Project.create(tmp_path / "empty.db") as empty:
        with pytest.raises(UsageError, match="no stored run covers any query"):
            draw(empty, 1, seed=1)
        assert draws(empty.conn) == []


def test_the_population_changing_between_draws_is_told(project: Project, tmp_path: Path) -> None:
    draw(project, 2, seed=1)
    extra = tmp_path / "c.run"
    extra.write_text("q11 Q0 x1 1 1.0 c\nq12 Q0 x2 1 1.0 c\n")
    run_import(project, ImportRequest(runs=[("c", extra)]))
    made = draw(project, 1, seed=1)
    assert (made.expected_population, made.draw.population) == (8, 10)


# -- completeness ------------------------------------------------------------------------


def test_a_drawn_query_is_complete_once_a_person_graded_its_pool_to_the_depth(
    project: Project,
) -> None:
    (qid,) = draw(project, 1, seed=4).draw.drawn
    state = audit(project.conn, depth=4)
    assert (state.complete, state.incomplete) == ((), (qid,))
    for passage in top(qid, 4)[:-1]:
        grade(project, qid, passage)
    assert audit(project.conn, depth=4).incomplete == (qid,)
    row = project.conn.execute("SELECT id FROM query WHERE ext_id = ?", (qid,)).fetchone()[0]
    (waiting,) = waiting_pairs(project.conn, [row], 4)[row]
    assert (waiting.passage, waiting.runs, waiting.best_rank) == (top(qid, 4)[-1], 1, 4)
    grade(project, qid, top(qid, 4)[-1])
    state = audit(project.conn, depth=4)
    assert (state.complete, state.incomplete, state.depth) == ((qid,), (), 4)
    # Deeper, the passages at ranks 5 and 6 still lack a grade.
    assert audit(project.conn, depth=6).incomplete == (qid,)
    # A grade cleared leaves a hole again.
    record(project, GradeEvent(query=qid, passage=top(qid, 4)[0], annotator="alice", kind="clear"))
    assert audit(project.conn, depth=4).incomplete == (qid,)


def test_judge_labels_do_not_complete_a_query(project: Project, tmp_path: Path) -> None:
    (qid,) = draw(project, 1, seed=9).draw.drawn
    pool = top(qid, 3)
    judged = tmp_path / "judge.qrels"
    judged.write_text("".join(f"{qid} 0 {p} 3\n" for p in pool))
    run_import(project, ImportRequest(judgments=[("gpt", judged)]))
    # The judge's own grade events (source judge) are no person's either.
    for passage in pool:
        grade(project, qid, passage, source="judge", model="gpt")
    assert project.conn.execute("SELECT count(*) FROM suggestion").fetchone() == (3,)
    assert audit(project.conn, depth=3).incomplete == (qid,)
    # A person's grade on each completes it, whoever else graded the pairs.
    for passage in pool:
        grade(project, qid, passage, origin="app")
    assert audit(project.conn, depth=3).complete == (qid,)


def test_a_persons_imported_qrels_complete_a_query(project: Project, tmp_path: Path) -> None:
    """``import --qrels F --annotator nist`` is how people's earlier labels arrive."""
    (qid,) = draw(project, 1, seed=9).draw.drawn
    pool = top(qid, 3)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{qid} 0 {p} 2\n" for p in pool[:-1]))
    run_import(project, ImportRequest(qrels=qrels, annotator="nist"))
    assert audit(project.conn, depth=3).incomplete == (qid,)
    qrels.write_text(f"{qid} 0 {pool[-1]} 1\n")
    run_import(project, ImportRequest(qrels=qrels, annotator="nist"))
    assert audit(project.conn, depth=3).complete == (qid,)


def test_adjudications_count_as_a_persons_grade(project: Project) -> None:
    (qid,) = draw(project, 1, seed=2).draw.drawn
    pool = top(qid, 3)
    for passage in pool[:-1]:
        grade(project, qid, passage)
    adjudicate(project, qid, pool[-1], "lead", 4)
    assert audit(project.conn, depth=3).complete == (qid,)


def test_lists_keep_draw_order_across_draws(project: Project) -> None:
    first = draw(project, 2, seed=8).draw.drawn
    second = draw(project, 2, seed=8).draw.drawn
    for passage in top(second[0], 2):
        grade(project, second[0], passage)
    state = audit(project.conn, depth=2)
    assert state.complete == (second[0],)
    assert state.incomplete == (*first, second[1])
    assert state.drawn == 4


# -- the command's JSON ------------------------------------------------------------------


def test_audit_json_shapes(project: Project, cli: Cli) -> None:
    path = project.path
    assert path is not None
    code, out, err = cli("audit", path, "--sample", "3", "--seed", "21", "--format", "json")
    assert code == 0, err
    assert json.loads(out) == {
        "seed": 21,
        "population": 10,
        "drawn": draw_order(COVERED, 21)[:3],
    }
    code, out, err = cli("audit", path, "--sample", "2", "--format", "json")
    assert code == 0, err
    second = json.loads(out)
    left = [q for q in COVERED if q not in draw_order(COVERED, 21)[:3]]
    assert second["drawn"] == draw_order(left, second["seed"])[:2]  # the seed it printed
    qid = second["drawn"][0]
    for passage in top(qid, 5):
        grade(project, qid, passage)
    code, out, err = cli("audit", path, "--list", "--depth", "5", "--format", "json")
    assert code == 0, err
    listed = json.loads(out)
    assert set(listed) == {"draws", "depth", "complete", "incomplete", "uncovered", "accepted_only"}
    assert (listed["uncovered"], listed["accepted_only"]) == ([], 0)
    assert [set(d) for d in listed["draws"]] == [{"seed", "population", "drawn", "time"}] * 2
    assert [d["population"] for d in listed["draws"]] == [10, 7]
    assert [d["seed"] for d in listed["draws"]] == [21, second["seed"]]
    drawn = [q for d in listed["draws"] for q in d["drawn"]]
    assert listed["complete"] == [qid]
    assert listed["incomplete"] == [q for q in drawn if q != qid]
    assert listed["depth"] == 5
    # At the default depth (20) the passages at rank 6 count too, and lack a grade.
    code, out, _ = cli("audit", path, "--list", "--format", "json")
    assert json.loads(out)["depth"] == 20 and json.loads(out)["complete"] == []


def test_a_samples_files_gold_grades_complete_a_query(tmp_path: Path) -> None:
    samples = tmp_path / "samples.jsonl"
    rows = [
        {
            "id": "s1",
            "input": {"question": "How do I reset my password?"},
            "expected_output": {"a": 5, "b": 2},
            "actual_output": {"retrieved": [{"id": "a"}, {"id": "b"}]},
        },
        {
            "id": "s2",
            "input": {"question": "How do I export my data?"},
            "expected_output": {"c": 4},  # d, retrieved too, has no gold grade
            "actual_output": {"retrieved": [{"id": "c"}, {"id": "d"}]},
        },
    ]
    samples.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with Project.memory() as project:
        run_import(project, ImportRequest(samples=("rag", samples)))
        draw(project, 2, seed=1)
        state = audit(project.conn, depth=2)
        assert (state.complete, state.incomplete) == (("s1",), ("s2",))


# -- what does not complete a query (issue 29 review) ------------------------------------


def test_a_grade_that_accepted_a_suggestion_completes_nothing(project: Project, cli: Cli) -> None:
    """Accepting the judge's suggestion makes people's grade the judge's: counted, it
    would credit the judge with agreement nobody measured."""
    (qid,) = draw(project, 1, seed=9).draw.drawn
    pool = top(qid, 3)
    grade(project, qid, pool[0], accepted_suggestion=False)  # recorded as 0: a person's
    for passage in pool[1:]:
        grade(project, qid, passage, accepted_suggestion=True)
    state = audit(project.conn, depth=3)
    assert (state.incomplete, state.accepted_only) == ((qid,), 2)
    row = project.conn.execute("SELECT id FROM query WHERE ext_id = ?", (qid,)).fetchone()[0]
    waiting = waiting_pairs(project.conn, [row], 3)[row]
    assert sorted(w.passage for w in waiting) == sorted(pool[1:])
    assert all(w.accepted for w in waiting)
    path = project.path
    assert path is not None
    code, out, err = cli("audit", path, "--list", "--depth", "3")
    assert code == 0, err
    assert "2 pairs of them graded only by accepting the judge's suggestion" in out
    code, out, _ = cli("audit", path, "--list", "--depth", "3", "--format", "json")
    assert json.loads(out)["accepted_only"] == 2
    # Another person's own grade completes a pair, whoever accepted before.
    for passage in pool[1:]:
        record(project, GradeEvent(query=qid, passage=passage, annotator="bob", grade=2))
    state = audit(project.conn, depth=3)
    assert (state.complete, state.accepted_only) == ((qid,), 0)


def test_a_drawn_query_no_run_covers_any_more_is_left_out(
    project: Project, tmp_path: Path, cli: Cli
) -> None:
    drawn = draw(project, 3, seed=4).draw.drawn
    gone = drawn[0]
    for passage in top(drawn[1], 2):
        grade(project, drawn[1], passage)
    # Both runs imported again without the first drawn query.
    for name in "ab":
        kept = tmp_path / f"{name}-kept.run"
        lines = (tmp_path / f"{name}.run").read_text().splitlines(keepends=True)
        kept.write_text("".join(line for line in lines if not line.startswith(f"{gone} ")))
        run_import(project, ImportRequest(runs=[(name, kept)], replace=True))
    state = audit(project.conn, depth=2)
    assert state.uncovered == (gone,)
    assert (state.complete, state.incomplete) == ((drawn[1],), (drawn[2],))
    assert state.drawn == 2
    path = project.path
    assert path is not None
    code, out, _ = cli("audit", path, "--list", "--depth", "2")
    assert code == 0 and "audit 1/2 complete" in out
    assert f"no longer covered by a stored run (left out): {gone}" in out
    code, out, _ = cli("audit", path, "--list", "--depth", "2", "--format", "json")
    assert json.loads(out)["uncovered"] == [gone]
