"""``raglabel eval DB --answers`` end to end, in every format, on a project built through
the CLI (answers and answer grades imported, judge answers written through the judge's
own log), against values computed here by hand."""

from __future__ import annotations

import csv
import io
import json
import math
import statistics
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from raglabel.cli.main import main
from raglabel.judge.prompt import Template
from raglabel.judge.work import AnswerSlot, ChunkGrade, Outcome
from raglabel.storage.answer_items import answer_items
from raglabel.storage.judgments import JudgmentLog, Setting, answer_text_key
from raglabel.storage.project import Project

if TYPE_CHECKING:
    from cli_helpers import Cli

N = 40  # samples of system alpha; beta answers the first 35 queries
HUMAN = 34  # alpha's samples graded by ann for faithfulness
BOB = 3  # of them, graded lower by bob too: the lower median is bob's 1


def human_grade(i: int) -> int:
    return 1 + (i * 7) % 5


def judge_grade(i: int) -> int:
    return 1 + (i * 3) % 5


def beta_grade(i: int) -> int:
    return 1 + (i * 2) % 5


def _jsonl(path: Path, lines: Iterable[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def build(folder: Path, run: Callable[..., int]) -> Path:
    """Queries q00-q39, passages p00-p79; alpha answers all 40 (q39 with an empty answer),
    beta the first 35; ann and bob's faithfulness grades of alpha; people's passage
    grades of q00's chunks, for the human-graded ctx_rank_prec."""
    db = folder / "answers.db"
    passages = _jsonl(
        folder / "passages.jsonl",
        ({"id": f"p{j:02d}", "text": f"Passage {j} says fact {j}."} for j in range(2 * N)),
    )
    alpha = _jsonl(
        folder / "alpha.jsonl",
        (
            {
                "query_id": f"q{i:02d}",
                "question": f"What is fact {i}?",
                "answer": "" if i == N - 1 else f"Fact {i} is in passage {2 * i}.",
                "contexts": [{"id": f"p{2 * i:02d}"}, {"id": f"p{2 * i + 1:02d}"}],
                "reference": f"Fact {i}.",
            }
            for i in range(N)
        ),
    )
    beta = _jsonl(
        folder / "beta.jsonl",
        (
            {
                "query_id": f"q{i:02d}",
                "question": f"What is fact {i}?",
                "answer": f"Maybe fact {i}.",
                "contexts": [{"id": f"p{2 * i + 1:02d}"}],
                "reference": f"Fact {i}.",
            }
            for i in range(35)
        ),
    )
    grades = [
        {"system": "alpha", "sample_id": f"q{i:02d}", "criterion": "faithfulness",
         "grade": human_grade(i), "annotator": "ann"}
        for i in range(HUMAN)
    ] + [
        {"system": "alpha", "sample_id": f"q{i:02d}", "criterion": "faithfulness",
         "grade": 1, "annotator": "bob"}
        for i in range(BOB)
    ]  # fmt: skip
    qrels = folder / "qrels.txt"
    qrels.write_text("q00 0 p00 0\nq00 0 p01 3\n", encoding="utf-8")  # grades 2 and 5
    for argv in (
        ("init", db),
        ("import", db, "--passages", passages),
        ("import", db, "--answers", f"alpha={alpha}", "--answers", f"beta={beta}"),
        ("import", db, "--answer-grades", _jsonl(folder / "grades.jsonl", grades)),
        ("import", db, "--qrels", qrels, "--annotator", "ann"),
    ):
        assert run(*argv) == 0, argv
    return db


Judged = tuple[str, str, str, str, int, int | None, tuple[ChunkGrade, ...] | None]


def judge(db: Path, answers: list[Judged]) -> None:
    """Write judge answers ``(system, sample, criterion, model, repeat, grade, chunks)``
    through the judge's own log; a grade and chunks both None is a failure."""
    with Project.open(db) as project:
        items = {(i.system, i.sample_id): i for i in answer_items(project.conn)}
        setting = Setting("http://127.0.0.1:1/v1", Template.builtin(), {"temperature": 0})
        models = sorted({a[3] for a in answers})
        log = JudgmentLog.start(project, setting, models, 2, api_key_env=None, kind="answers")
        for system, sample, criterion, model, repeat, grade, chunks in answers:
            item = items[system, sample]
            slot = AnswerSlot(
                item,
                criterion,
                model,
                repeat,
                f"{system}/{sample}/{criterion}/{model}/{repeat}",
                answer_text_key(item, criterion),
            )
            failed = grade is None and chunks is None
            log.add(
                Outcome(
                    slot,
                    grade,
                    None if failed else "why",
                    "{}",
                    "unusable reply after one repair" if failed else None,
                    1,
                    False,
                    5,
                    10,
                    3,
                    chunks,
                )
            )
        log.flush()


def judgments() -> list[Judged]:
    out: list[Judged] = []
    # Samples 0-36 judged (36 also fails later: its good answers stand), 37 only fails,
    # 38 is never judged, and 39 has no answer, so nothing is asked about it.
    for i in range(N - 3):
        grade = judge_grade(i)
        sample = f"q{i:02d}"
        out.append(("alpha", sample, "faithfulness", "m1", 0, grade, None))
        out.append(("alpha", sample, "faithfulness", "m1", 1, min(5, grade + 1), None))
        out.append(("alpha", sample, "faithfulness", "m2", 0, grade, None))
    for i in (36, 37):
        out.append(("alpha", f"q{i:02d}", "faithfulness", "m1", 0, None, None))  # failed
    for i in range(35):
        out.append(("beta", f"q{i:02d}", "faithfulness", "m1", 0, beta_grade(i), None))
    chunks = (ChunkGrade(1, 2, "only names the topic"), ChunkGrade(2, 5, "states the fact"))
    out.append(("alpha", "q00", "ctx_rank_prec", "m1", 0, None, chunks))
    out.append(("alpha", "q01", "ctx_rank_prec", "m1", 0, None, None))  # failed
    return out


def raglabel(*args: str | Path) -> int:
    """``raglabel ARGS`` in this process, for module fixtures (the ``cli`` fixture is per
    test)."""
    return main([str(a) for a in args])


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = build(tmp_path_factory.mktemp("answers"), raglabel)
    judge(db, judgments())
    return db


def _eval(cli: Cli, db: Path, *extra: str) -> dict[str, Any]:
    code, out, err = cli("eval", db, "--answers", "--format", "json", *extra)
    assert code == 0, err
    assert "NaN" not in out
    data: dict[str, Any] = json.loads(out)
    return data


def test_judge_human_and_corrected_figures_equal_hand_computation(project: Path, cli: Cli) -> None:
    data = _eval(cli, project)
    answers = data["answers"]
    faith = answers["alpha"]["faithfulness"]
    human = [1.0] * BOB + [float(human_grade(i)) for i in range(BOB, HUMAN)]
    assert faith["human"]["mean"] == pytest.approx(statistics.mean(human))
    assert faith["human"]["pass_rate"] == pytest.approx(sum(g >= 3 for g in human) / HUMAN)
    assert (faith["human"]["valid"], faith["human"]["samples"]) == (HUMAN, N)
    assert faith["human"]["na"] == {"no_answer": 1}
    # The judge: the lower median of (g, g + 1, g) is g; 37 failed (NA), 38 was never
    # judged (neither valid nor NA).
    judged = [float(judge_grade(i)) for i in range(N - 3)]
    assert faith["judge"]["mean"] == pytest.approx(statistics.mean(judged))
    assert faith["judge"]["valid"] == N - 3
    assert faith["judge"]["na"] == {"judge_failed": 1, "no_answer": 1}
    lo, hi = faith["judge"]["ci"]
    assert lo <= faith["judge"]["mean"] <= hi
    # Corrected mean, in plain Python over the 34 samples with both grades.
    f = judged
    d = [judge_grade(i) - h for i, h in enumerate(human)]
    theta = statistics.mean(f) - statistics.mean(d)
    se = math.sqrt(statistics.variance(f) / len(f) + statistics.variance(d) / len(d))
    z = statistics.NormalDist().inv_cdf(0.975)
    assert faith["corrected"]["n_human"] == HUMAN
    assert faith["corrected"]["mean"] == pytest.approx(theta)
    assert faith["corrected"]["ci"] == pytest.approx([theta - z * se, theta + z * se])
    # Beta has too few human grades (none) for a corrected mean.
    assert answers["beta"]["faithfulness"]["corrected"] is None
    assert answers["beta"]["faithfulness"]["human"]["mean"] is None
    # The systems' retrieval metrics sit beside them: their contexts are runs.
    assert {"alpha", "beta"} <= set(data["runs"])


def test_ctx_rank_prec_per_sample_with_ranks_and_the_human_score(project: Path, cli: Cli) -> None:
    data = _eval(cli, project, "--per-query")
    ranking = data["answers"]["alpha"]["ctx_rank_prec"]
    # Gains 0 and 3 in order: 100 x (3 / log2 3) / 3; people graded the chunks 2 and 5
    # as passages of q00, the same order: the same score.
    expected = 100 / math.log2(3)
    assert ranking["judge"]["mean"] == pytest.approx(expected)
    assert ranking["judge"]["na"] == {"judge_failed": 1}
    assert ranking["human"]["mean"] == pytest.approx(expected)
    assert ranking["judge"]["pass_rate"] == 0.0  # below the default 80
    first = ranking["per_sample"]["q00"]
    assert first["actual_ranks"] == [0, 1]
    assert first["ideal_ranks"] == [1, 0]
    assert first["non_relevant_chunks_reasons"] == [
        {"chunk_position": 1, "reason": "only names the topic"}
    ]
    assert ranking["per_sample"]["q01"]["judge_na"] == "judge_failed"
    assert ranking["per_sample"]["q02"]["judge"] is None
    assert ranking["per_sample"]["q02"]["judge_na"] is None  # never judged: not NA
    faith = data["answers"]["alpha"]["faithfulness"]["per_sample"]
    assert faith["q00"] == {
        "query": "q00", "human": 1.0, "judge": 1.0, "human_na": None, "judge_na": None,
        "actual_ranks": None, "ideal_ranks": None, "non_relevant_chunks_reasons": None,
    }  # fmt: skip


def test_thresholds_change_pass_rates(project: Path, cli: Cli) -> None:
    data = _eval(cli, project, "--threshold", "faithfulness=5", "--threshold", "ctx_rank_prec=60")
    answers = data["answers"]
    faith = answers["alpha"]["faithfulness"]["judge"]
    judged = [judge_grade(i) for i in range(N - 3)]
    assert faith["pass_rate"] == pytest.approx(sum(g == 5 for g in judged) / len(judged))
    assert answers["alpha"]["ctx_rank_prec"]["judge"]["pass_rate"] == 1.0
    assert data["config"]["answers"]["thresholds"]["faithfulness"] == 5.0


def test_compare_is_paired_over_shared_samples(project: Path, cli: Cli) -> None:
    data = _eval(cli, project, "--compare", "--permutations", "2000")
    tests = {c["metric"]: c for c in data["answer_compare"]}
    faith = tests["faithfulness:judge"]
    diffs = [beta_grade(i) - judge_grade(i) for i in range(35)]
    assert (faith["baseline"], faith["run"], faith["queries"]) == ("alpha", "beta", 35)
    assert faith["mean_difference"] == pytest.approx(statistics.mean(diffs))
    assert faith["wins"] == sum(d > 0 for d in diffs)
    assert faith["losses"] == sum(d < 0 for d in diffs)
    assert 0 < faith["p_value"] <= faith["p_adjusted"] <= 1
    assert tests["faithfulness:human"]["queries"] == 0  # beta has no human grades
    assert tests["faithfulness:human"]["p_value"] is None


def test_every_format(project: Path, cli: Cli) -> None:
    code, table, err = cli("eval", project, "--answers", "--per-query")
    assert code == 0, err
    assert "answers of alpha" in table and "answers of beta" in table
    assert "judge_failed 1" in table and "retrieval (run alpha)" in table
    code, markdown, _ = cli("eval", project, "--answers", "--format", "markdown", "--compare",
                            "--permutations", "200")  # fmt: skip
    assert code == 0
    assert "## Answers" in markdown and "### alpha" in markdown
    assert "| faithfulness:judge | alpha | beta |" in markdown
    code, text, _ = cli("eval", project, "--answers", "--format", "csv", "--per-query")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(text)))
    assert all(row["value"].lower() != "nan" for row in rows)
    by = {(r["kind"], r["run"], r["metric"], r["query"]): r["value"] for r in rows}
    data = _eval(cli, project)
    faith = data["answers"]["alpha"]["faithfulness"]
    assert float(by["answer_mean", "alpha", "faithfulness:judge", ""]) == faith["judge"]["mean"]
    assert by["answer_na", "alpha", "faithfulness:judge:judge_failed", ""] == "1"
    assert float(by["answer_corrected", "alpha", "faithfulness", ""]) == faith["corrected"]["mean"]
    assert by["answer_corrected", "beta", "faithfulness", ""] == ""
    assert by["answer_per_sample", "alpha", "faithfulness:human", "q00"] == "1.0"
    for fmt in ("table", "markdown", "csv", "json"):
        code, out, _ = cli("eval", project, "--answers", "--format", fmt, "--per-query")
        assert code == 0 and "nan" not in out.lower().replace("nanswer", "")


def test_system_option_narrows_the_section(project: Path, cli: Cli) -> None:
    data = _eval(cli, project, "--system", "beta")
    assert list(data["answers"]) == ["beta"]
    code, _, err = cli("eval", project, "--answers", "--system", "gamma")
    assert code == 2 and "--system 'gamma'" in err


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("bogus=3", "CRITERION one of"),
        ("faithfulness=6", "faithfulness takes 1 to 5"),
        ("faithfulness=0.5", "faithfulness takes 1 to 5"),
        ("ctx_rank_prec=101", "ctx_rank_prec takes 0 to 100"),
        ("faithfulness=nan", "faithfulness takes 1 to 5"),
        ("faithfulness", "expected CRITERION=N"),
        ("faithfulness=high", "is not a number"),
    ],
)
def test_bad_thresholds_are_usage_errors(project: Path, cli: Cli, spec: str, message: str) -> None:
    code, out, err = cli("eval", project, "--answers", "--threshold", spec)
    assert code == 2 and out == ""
    assert "--threshold" in err and message in err


def test_answers_need_a_project_with_answer_systems(tmp_path: Path, cli: Cli) -> None:
    db = tmp_path / "empty.db"
    assert cli("init", db)[0] == 0
    code, _, err = cli("eval", db, "--answers")
    assert code == 2 and "no answer systems" in err
    qrels = tmp_path / "q.txt"
    qrels.write_text("q1 0 a 1\n")
    run = tmp_path / "r.txt"
    run.write_text("q1 Q0 a 1 1.0 t\n")
    code, _, err = cli("eval", "--qrels", qrels, "--run", run, "--answers")
    assert code == 2 and "--answers needs a project DB" in err
    code, _, err = cli("eval", db, "--threshold", "faithfulness=4")
    assert code == 2 and "--threshold goes with --answers" in err


def test_a_criterion_given_two_thresholds_is_refused(project: Path, cli: Cli) -> None:
    code, out, err = cli(
        "eval",
        project,
        "--answers",
        "--threshold",
        "faithfulness=4",
        "--threshold",
        "faithfulness=2",
    )
    assert code == 2 and out == ""
    assert "--threshold 'faithfulness=2': faithfulness is given a threshold twice" in err


def test_compare_with_one_system_says_there_is_nothing_to_compare(project: Path, cli: Cli) -> None:
    code, out, err = cli(
        "eval",
        project,
        "--answers",
        "--system",
        "alpha",
        "--compare",
        "--format",
        "json",
        "--permutations",
        "100",
    )
    assert code == 0, err
    assert "only one answer system (alpha), so no answer comparison" in err
    assert json.loads(out).get("answer_compare", []) == []
