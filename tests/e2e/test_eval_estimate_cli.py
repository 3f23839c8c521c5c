"""``raglabel eval DB --estimate`` as a process (issue 29, section 2): exit codes, the
JSON shape the spec gives (``../shared/spec/judge.md``), and the warnings on stderr."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import child
from estimate_project import EstimateProject, build


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> EstimateProject:
    return build(tmp_path_factory.mktemp("estimate-cli"))


def test_corrected_json_has_the_spec_shape(project: EstimateProject) -> None:
    done = child(
        "eval", project.db, "--estimate", "corrected", "--compare", "--baseline", "bm25",
        "--metrics", "ndcg@10", "--format", "json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert set(report["estimate"]) >= {"kind", "drawn", "complete", "population", "incomplete"}
    assert report["estimate"]["kind"] == "corrected"
    assert report["estimate"]["incomplete"] == project.incomplete
    run = report["runs"]["dense"]
    assert set(run) == {"mean", "ci", "valid", "lambda", "judge_only", "human_only"}
    assert set(run["judge_only"]) >= {"mean", "ci"} and set(run["human_only"]) >= {"mean", "ci"}
    for test in report["compare"]:
        assert {"mean_difference", "ci", "p_value", "p_adjusted", "queries_to_settle"} <= set(test)
        assert test["queries_to_settle"] is None or test["queries_to_settle"] >= 0
    assert "are not complete" in done.stderr


def test_refusals_exit_2(project: EstimateProject, tmp_path: Path) -> None:
    bare = build(tmp_path, complete=0, incomplete=0, draw_sample=False)
    done = child("eval", bare.db, "--estimate", "corrected")
    assert done.returncode == 2 and "raglabel audit" in done.stderr and done.stdout == ""
    qrels = tmp_path / "x.qrels"
    qrels.write_text("q01 0 q01-p01 3\n")
    done = child(
        "eval", "--qrels", qrels, "--run", bare.db.parent / "bm25.run", "--estimate", "judge"
    )
    assert done.returncode == 2 and "needs a project DB" in done.stderr
    done = child("eval", project.db, "--estimate", "sideways")
    assert done.returncode == 2 and "invalid choice" in done.stderr
