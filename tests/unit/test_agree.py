"""``raglabel agree``: the numbers on a small project whose answers are known by hand,
and a judge that copies the humans exactly, which must agree perfectly everywhere."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from scipy.stats import kendalltau

from raglabel.metrics.agreement import weighted_kappa
from raglabel.storage.grades import GradeEvent, record
from raglabel.storage.project import Project

if TYPE_CHECKING:
    from cli_helpers import Cli

PASSAGES = ["p1", "p2", "p3", "p4", "p5", "p6"]
ANN_A = [5, 4, 3, 2, 1, 3]
ANN_B = [5, 3, 3, 2, 2, 4]
HUMANS = [5, 3, 3, 2, 1, 3]  # the lower median of two is the smaller grade
JUDGE = [4, 4, 3, 1, 1, 5]
RUNS = {  # three orders of the six passages
    "best": ["p1", "p2", "p3", "p6", "p4", "p5"],
    "middle": ["p3", "p1", "p6", "p2", "p5", "p4"],
    "worst": ["p5", "p4", "p6", "p3", "p2", "p1"],
}


def build(tmp_path: Path, cli: Cli, judges: dict[str, list[int]]) -> Path:
    (tmp_path / "q.tsv").write_text("q1\twhat stops a tidal turbine\n")
    (tmp_path / "p.tsv").write_text("".join(f"{p}\ttext of {p}\n" for p in PASSAGES))
    run_args: list[str | Path] = []
    for name, order in RUNS.items():
        path = tmp_path / f"{name}.run"
        path.write_text("".join(f"q1 Q0 {p} {i} {10 - i} {name}\n" for i, p in enumerate(order)))
        run_args += ["--run", f"{name}={path}"]
    db = tmp_path / "a.db"
    assert cli("init", db)[0] == 0
    code, _, err = cli(
        "import",
        db,
        "--queries",
        tmp_path / "q.tsv",
        "--passages",
        tmp_path / "p.tsv",
        *run_args,
    )
    assert code == 0, err
    with Project.open(db) as project:
        for name, grades in (("a", ANN_A), ("b", ANN_B)):
            for pid, grade in zip(PASSAGES, grades, strict=True):
                accepted = True if (name, pid) == ("a", "p3") else None
                record(
                    project,
                    GradeEvent(
                        query="q1",
                        passage=pid,
                        annotator=name,
                        grade=grade,
                        accepted_suggestion=accepted,
                    ),
                )
        with project.write():
            for model, grades in judges.items():
                for pid, grade in zip(PASSAGES, grades, strict=True):
                    project.conn.execute(
                        "INSERT INTO suggestion (query_id, passage_id, model, grade, created_at)"
                        " VALUES (1, (SELECT id FROM passage WHERE ext_id = ?), ?, ?, 'now')",
                        (pid, model, grade),
                    )
    return db


def report(cli: Cli, db: Path, *extra: str) -> dict[str, Any]:
    code, out, err = cli("agree", db, "--format", "json", "-k", "3", *extra)
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def test_numbers_match_a_hand_computation(tmp_path: Path, cli: Cli) -> None:
    data = report(cli, build(tmp_path, cli, {"m": JUDGE}))
    assert data["annotators"] == ["a", "b"] and data["models"] == ["m"]
    # p3's human grade (by a) accepted the suggestion: the judge is not compared with it.
    assert (data["human_pairs"], data["judged_pairs"], data["shared_pairs"]) == (6, 6, 5)
    assert data["accepted_left_out"] == 1
    own = [i for i, pid in enumerate(PASSAGES) if pid != "p3"]
    judged, humans = [JUDGE[i] for i in own], [HUMANS[i] for i in own]
    pairs = {(p["a"], p["b"]): p for p in data["pairs"]}
    judge = pairs["m", "humans"]
    assert judge["n"] == 5
    assert judge["bias"] == pytest.approx((-1 + 1 - 1 + 0 + 2) / 5)
    assert judge["exact"] == pytest.approx(1 / 5)
    assert judge["within_one"] == pytest.approx(4 / 5)
    assert judge["kappa"] == pytest.approx(weighted_kappa(judged, humans))
    between = pairs["a", "b"]
    assert between["kappa"] == pytest.approx(weighted_kappa(ANN_A, ANN_B))
    assert between["bias"] == pytest.approx((0 + 1 + 0 + 0 - 1 - 1) / 6)
    # Rows are the humans' grades, columns the judge's.
    expected = [[0] * 5 for _ in range(5)]
    for h, j in zip(humans, judged, strict=True):
        expected[h - 1][j - 1] += 1
    assert data["confusion"] == expected
    # A pair's matrix has rater a's grades (here the model's) in rows: the transpose of
    # the top-level one, as the schema and the guide say.
    assert data["judge"] == "m"
    assert judge["confusion"] == [list(column) for column in zip(*expected, strict=True)]
    # One human grade took the suggestion as it was. The other eleven were not given in
    # the app, where suggestions show (and came before the suggestions): none of them
    # could have taken one.
    assert (data["accepted"], data["offered"]) == (1, 1)
    assert data["queries"] == [
        {"qid": "q1", "pairs": 5, "mean_gap": pytest.approx(1.0), "bias": pytest.approx(1 / 5)}
    ]
    assert {c["metric"] for c in data["runs"]} == {"ra_nwg@3", "ndcg@3", "precision_4plus@3"}


def test_a_judge_that_copies_the_humans_agrees_perfectly(tmp_path: Path, cli: Cli) -> None:
    data = report(cli, build(tmp_path, cli, {"copy": HUMANS}))
    judge = next(p for p in data["pairs"] if p["a"] == "copy")
    assert judge["kappa"] == 1.0 and judge["alpha"] == 1.0
    assert judge["bias"] == 0.0 and judge["exact"] == 1.0
    for comparison in data["runs"]:
        assert comparison["human"] == comparison["judge"]
        assert comparison["tau"] == 1.0
    ndcg = next(c for c in data["runs"] if c["metric"] == "ndcg@3")
    assert ndcg["human"]["best"] > ndcg["human"]["middle"] > ndcg["human"]["worst"]


def test_several_models_add_an_ensemble_and_a_text_report(tmp_path: Path, cli: Cli) -> None:
    db = build(tmp_path, cli, {"m": JUDGE, "n": HUMANS})
    data = report(cli, db)
    names = [p["a"] for p in data["pairs"]]
    assert "judge (median of m, n)" in names
    code, out, err = cli("agree", db)
    assert code == 0, err
    assert "Krippendorff's alpha (ordinal)" in out
    assert "confusion: humans (rows) vs judge (median of m, n) (columns)" in out
    assert "Kendall tau" in out


def test_without_judge_or_with_bad_options(tmp_path: Path, cli: Cli) -> None:
    db = build(tmp_path, cli, {})
    data = report(cli, db, "--metrics", "none")
    assert data["models"] == [] and data["runs"] == [] and data["confusion"] is None
    assert data["alpha_annotators"] is not None
    code, _, err = cli("agree", db, "--metrics", "nonsense")
    assert code == 2 and "--metrics" in err
    code, _, err = cli("agree", tmp_path / "missing.db")
    assert code == 2 and "missing.db" in err


def test_json_report_matches_its_schema(tmp_path: Path, cli: Cli) -> None:
    from pydantic import TypeAdapter

    from raglabel.formats.agreement_report import AgreementReport

    data = report(cli, build(tmp_path, cli, {"m": JUDGE}))
    TypeAdapter(AgreementReport).validate_python(data)
    schema = json.loads(
        (Path(__file__).parents[2] / "schemas/agree-report.schema.json").read_text()
    )
    assert set(schema["properties"]) == set(data)


def test_the_run_table_has_headers_and_whole_names(tmp_path: Path, cli: Cli) -> None:
    long_model = "gpt-4o-mini-2024-07-18-with-a-long-suffix"
    db = build(tmp_path, cli, {f"{long_model}-a": JUDGE, f"{long_model}-b": HUMANS})
    code, out, err = cli("agree", db, "-k", "3", "--metrics", "ndcg@3")
    assert code == 0, err
    lines = out.splitlines()
    title = next(i for i, line in enumerate(lines) if line.startswith("ndcg@3 on human vs judge"))
    assert lines[title + 1].split() == ["run", "humans", "judge"]
    assert [line.split()[0] for line in lines[title + 2 : title + 5]] == ["best", "middle", "worst"]
    # The numbers sit under their headers.
    head = lines[title + 1]
    for row in lines[title + 2 : title + 5]:
        assert len(row) == len(head)
    # Two judge models whose names differ only at the end stay two rows, not one cut name,
    # in the table of figures and in the table of intervals.
    raters = [line.split()[0] for line in lines if line.startswith(long_model)]
    assert raters == [f"{long_model}-a", f"{long_model}-b"] * 2


def test_run_orders_leave_out_grades_that_accepted_a_suggestion(tmp_path: Path, cli: Cli) -> None:
    # At k = 1 only each run's first passage counts. On q2, x ranks r1 first, y r2, z r3:
    # the person grades them 3, 4, 5 themselves and the judge 5, 4, 3, opposite orders.
    # On q1 only x ranks p1 first, and the person accepted the judge's 5 for p1: counted,
    # that grade lifts x to first on both sides alike and tau reads 1/3 by construction.
    # Left out (on both sides, as for the pairs), q1 has no label and the orders are
    # opposite: tau -1.
    (tmp_path / "q.tsv").write_text("q1\ttidal turbines\nq2\twave farms\n")
    (tmp_path / "p.tsv").write_text(
        "".join(f"{p}\ttext of {p}\n" for p in ("p1", "p2", "p3", "r1", "r2", "r3"))
    )
    run_args: list[str | Path] = []
    for i, name in enumerate(("x", "y", "z")):
        lines = []
        for qid, pool in (("q1", ["p1", "p2", "p3"]), ("q2", ["r1", "r2", "r3"])):
            order = [pool[i]] + [p for p in pool if p != pool[i]]
            lines += [f"{qid} Q0 {p} {r} {10 - r} {name}\n" for r, p in enumerate(order)]
        path = tmp_path / f"{name}.run"
        path.write_text("".join(lines))
        run_args += ["--run", f"{name}={path}"]
    db = tmp_path / "a.db"
    assert cli("init", db)[0] == 0
    code, _, err = cli(
        "import", db, "--queries", tmp_path / "q.tsv", "--passages", tmp_path / "p.tsv", *run_args
    )
    assert code == 0, err
    judged = {("q1", "p1"): 5, ("q2", "r1"): 5, ("q2", "r2"): 4, ("q2", "r3"): 3}
    graded = {("q1", "p1"): 5, ("q2", "r1"): 3, ("q2", "r2"): 4, ("q2", "r3"): 5}
    with Project.open(db) as project:
        with project.write():
            for (qid, pid), grade in judged.items():
                project.conn.execute(
                    "INSERT INTO suggestion (query_id, passage_id, model, grade, created_at)"
                    " VALUES ((SELECT id FROM query WHERE ext_id = ?),"
                    " (SELECT id FROM passage WHERE ext_id = ?), 'm', ?, 'now')",
                    (qid, pid, grade),
                )
        for (qid, pid), grade in graded.items():
            record(
                project,
                GradeEvent(
                    query=qid,
                    passage=pid,
                    annotator="a",
                    grade=grade,
                    accepted_suggestion=True if pid == "p1" else None,
                ),
            )
    data = report(cli, db, "-k", "1", "--metrics", "ndcg@k")
    assert data["accepted_left_out"] == 1
    (runs,) = data["runs"]
    human, judge = runs["human"], runs["judge"]
    assert runs["queries"] == 1  # q1's only label was the accepted one
    assert human["z"] == judge["x"] == 1.0
    assert human["z"] > human["y"] > human["x"]
    assert judge["x"] > judge["y"] > judge["z"]
    names = sorted(human)
    expected = kendalltau([human[n] for n in names], [judge[n] for n in names]).statistic
    assert runs["tau"] == pytest.approx(expected) == pytest.approx(-1.0)
    # The text says the runs' means leave the accepted grade out too.
    code, out, err = cli("agree", db, "-k", "1", "--metrics", "ndcg@k")
    assert code == 0, err
    assert "the runs' means on human and on judge grades included" in " ".join(out.split())
