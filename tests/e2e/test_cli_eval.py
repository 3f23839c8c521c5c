"""``raglabel eval`` end to end: outputs, exit codes and messages."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from cli_helpers import child
from pydantic import TypeAdapter

from raglabel.cli.main import build_parser, main
from raglabel.formats.report import Report

QRELS = "q1 0 a 3\nq1 0 b 2\nq1 0 c 0\nq1 0 d -1\nq2 0 e 1\nq2 0 f 3\nq3 0 g 0\n"
GOOD = "q1 Q0 a 1 0.9 g\nq1 Q0 b 2 0.8 g\nq1 Q0 x 3 0.7 g\nq2 Q0 f 1 0.9 g\nq2 Q0 e 2 0.5 g\n"
WEAK = "q1 Q0 d 1 0.9 w\nq1 Q0 c 2 0.8 w\nq1 Q0 a 3 0.7 w\nq2 Q0 e 1 0.9 w\n"


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {}
    for name, text in {"qrels": QRELS, "good": GOOD, "weak": WEAK}.items():
        paths[name] = tmp_path / f"{name}.txt"
        paths[name].write_text(text)
    return paths


def eval_json(files: dict[str, Path], *extra: str) -> Report:
    result = child(
        "eval",
        "--qrels",
        str(files["qrels"]),
        "--run",
        f"good={files['good']}",
        f"weak={files['weak']}",
        "--format",
        "json",
        *extra,
    )
    assert result.returncode == 0, result.stderr
    return TypeAdapter(Report).validate_json(result.stdout)


def test_every_command_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert commands
    for name in commands:
        with pytest.raises(SystemExit) as done:
            main([name, "--help"])
        assert done.value.code == 0
        assert "usage: raglabel" in capsys.readouterr().out


def test_json_report_matches_the_contract(files: dict[str, Path]) -> None:
    report = eval_json(files, "-k", "2", "--metrics", "ra_nwg,ndcg@2,mrr,judged")
    assert report.labels.queries == 3 and report.labels.graded == 7
    assert report.labels.fingerprint.startswith("sha256:")
    assert set(report.runs) == {"good", "weak"}
    good = report.runs["good"]
    assert list(good.mean) == ["ra_nwg@2", "ndcg@2", "mrr", "judged@2"]
    # q3 has no passage of grade >= 4: its MRR is NA, so two queries enter the mean.
    assert good.valid["mrr"] == 2
    assert good.mean["mrr"] == pytest.approx(1.0)
    assert report.config["k"] == [2] and report.config["alpha"] == 1.0
    assert good.per_query is None and good.ci is None


def test_missing_query_scores_zero(files: dict[str, Path]) -> None:
    report = eval_json(files, "-k", "2", "--metrics", "ndcg@2,recall", "--per-query")
    q3 = report.runs["good"].per_query["q3"]  # type: ignore[index]
    assert q3["ndcg@2"] == 0.0
    assert q3["recall@2"] is None  # no relevant passage: NA, not 0


def test_per_query_ci_and_compare_are_deterministic(files: dict[str, Path]) -> None:
    args = ("-k", "2", "--metrics", "ra_nwg,pct_proc", "--ci", "--compare", "--per-query")
    first, second = eval_json(files, *args), eval_json(files, *args)
    assert first == second
    assert first.compare is not None and len(first.compare) == 2
    comparison = first.compare[0]
    assert (comparison.baseline, comparison.run) == ("good", "weak")
    assert comparison.wins + comparison.ties + comparison.losses == comparison.queries
    assert first.runs["good"].ci is not None
    assert first.runs["good"].ctx_rank is None


def test_ctx_rank_details_with_per_query(files: dict[str, Path]) -> None:
    report = eval_json(files, "-k", "3", "--metrics", "ctx_rank_prec", "--per-query")
    detail = report.runs["weak"].ctx_rank["ctx_rank_prec@3"]["q1"]  # type: ignore[index]
    # weak ranks d (grade 1), c (grade 2), a (grade 5): a belongs first.
    assert detail.actual_ranks == [0, 1, 2]
    assert detail.ideal_ranks == [2, 1, 0]
    assert detail.grades == [1, 2, 5]
    assert detail.passed is False


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv"])
def test_text_formats(files: dict[str, Path], fmt: str) -> None:
    result = child(
        "eval", "--qrels", str(files["qrels"]), "--run", str(files["good"]), "--format", fmt
    )
    assert result.returncode == 0, result.stderr
    assert "ra_nwg@5" in result.stdout
    if fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(result.stdout)))
        assert {row["run"] for row in rows} == {"good"}
        assert all(row["metric"] for row in rows)


def test_output_file(files: dict[str, Path], tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    result = child(
        "eval",
        "--qrels",
        str(files["qrels"]),
        "--run",
        str(files["good"]),
        "--format",
        "json",
        "-o",
        str(target),
    )
    assert result.returncode == 0 and result.stdout == ""
    assert json.loads(target.read_text())["runs"]["good"]["mean"]


def test_samples_evaluation(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(
        '{"id": "q1", "input": {"question": "?"}, "expected_output": {"a": 5, "b": 3},'
        ' "actual_output": {"retrieved": [{"id": "b", "text": "x"}, {"id": "a", "text": "42!"}]},'
        ' "expected_answer": "42"}\n'
    )
    result = child("eval", "--samples", str(path), "-k", "1,2", "--format", "json")
    assert result.returncode == 0, result.stderr
    mean = json.loads(result.stdout)["runs"]["s"]["mean"]
    assert mean["containment@1"] == 0.0 and mean["containment@2"] == 1.0
    assert mean["mrr"] == 0.5


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--run", "x.run"], "needs labels|nothing to evaluate"),
        (["--qrels", "QRELS"], "at least one --run"),
        (["--qrels", "QRELS", "--run", "GOOD", "--metrics", "nope"], "unknown metric"),
        (["--qrels", "QRELS", "--run", "GOOD", "-k", "0"], "at least 1"),
        (["--qrels", "QRELS", "--run", "GOOD", "--alpha", "-1"], "--alpha"),
        (["--qrels", "QRELS", "--run", "GOOD", "--metrics", "containment"], "--samples"),
        (["--qrels", "QRELS", "--run", "GOOD", "--pool", "good=nothing"], "neither a run"),
        (["--qrels", "QRELS", "--run", "GOOD", "GOOD"], "two runs are named"),
        (["--qrels", "QRELS", "--run", "GOOD", "--grade-map", "0:7"], "outside grades"),
    ],
)
def test_usage_errors_exit_2(files: dict[str, Path], args: list[str], fragment: str) -> None:
    subst = {"QRELS": str(files["qrels"]), "GOOD": str(files["good"])}
    result = child("eval", *[subst.get(a, a) for a in args])
    assert result.returncode == 2
    assert result.stdout == ""
    import re

    assert re.search(fragment, result.stderr), result.stderr


def test_bad_input_file_exits_2_with_file_and_line(files: dict[str, Path], tmp_path: Path) -> None:
    bad = tmp_path / "bad.run"
    bad.write_text("q1 Q0 a 1 0.5 t\nq1 Q0 b 2 oops t\n")
    result = child("eval", "--qrels", str(files["qrels"]), "--run", str(bad))
    assert result.returncode == 2
    assert f"{bad}:2: score 'oops' is not a number" in result.stderr
    assert result.stdout == ""


def test_unknown_query_and_duplicate_warn(files: dict[str, Path], tmp_path: Path) -> None:
    odd = tmp_path / "odd.run"
    odd.write_text("q1 Q0 a 1 0.5 t\nq1 Q0 a 2 0.4 t\nq7 Q0 a 1 0.5 t\n")
    result = child("eval", "--qrels", str(files["qrels"]), "--run", str(odd))
    assert result.returncode == 0
    assert "warning: run 'odd': 1 query not in the labels skipped (q7)" in result.stderr
    assert "repeated passage id(s) dropped" in result.stderr


def test_pool_option_changes_proc(files: dict[str, Path]) -> None:
    plain = eval_json(files, "-k", "1", "--metrics", "proc")
    pooled = eval_json(files, "-k", "1", "--metrics", "proc", "--pool", "weak=good")
    assert pooled.runs["weak"].mean["proc@1"] == pytest.approx(1.0)
    # Own pool: q1 holds its 5 (1.0); q2's pool holds only the 3, weighing
    # min(0.1 / 0.5 / (1 / 0.5), 0.25) = 0.1; q3 has no positive weight (NA).
    assert plain.runs["weak"].mean["proc@1"] == pytest.approx((1.0 + 0.1) / 2)
    assert pooled.config["pool"] == {"weak": "good"}


def test_timings_go_to_stderr(files: dict[str, Path]) -> None:
    result = child("eval", "--qrels", str(files["qrels"]), "--run", str(files["good"]), "--timings")
    assert "timings: load=" in result.stderr


@pytest.mark.parametrize("fmt", ["table", "json", "csv", "markdown"])
def test_a_quick_exit_leaves_the_same_output_as_main_returning(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    # As its process's own command, eval ends without the interpreter's teardown; what it
    # printed, wrote and warned, and its exit code, are what main() returning gives.
    odd = tmp_path / "odd.run"
    odd.write_text(GOOD + "q7 Q0 a 1 0.5 t\n" * 2000)  # a warning, and a long output
    args = ["eval", "--qrels", str(files["qrels"]), "--run", str(odd), f"weak={files['weak']}"]
    args += ["--format", fmt, "--per-query", "--ci", "--compare"]
    capsys.readouterr()
    assert main(args) == 0
    expected = capsys.readouterr()
    result = child(*args)
    assert (result.returncode, result.stdout, result.stderr) == (0, expected.out, expected.err)
    target = tmp_path / f"report.{fmt}"
    result = child(*args, "-o", target)
    assert (result.returncode, result.stdout) == (0, "")
    assert target.read_text() == expected.out
