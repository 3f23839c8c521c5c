"""What ``eval --estimate judge|corrected`` says beside its figures: options it does not
use, judge labels missing from the runs' top K, intervals cut to the metric's range and
intervals of no width; and ``--grade-map``, which a project's evaluation cannot use."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from estimate_project import EstimateProject, build
from scipy import stats

if TYPE_CHECKING:
    from cli_helpers import Cli

SLICE = Path(__file__).parents[1] / "data" / "llmjudge"
RUNS = sorted((SLICE / "runs").glob("*.run"))


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> EstimateProject:
    return build(tmp_path_factory.mktemp("estimate"))


def llmjudge(cli: Cli, folder: Path, gpt4o: Path = SLICE / "gpt4o.qrels") -> Path:
    """The LLMJudge slice: NIST's labels as people's, one model's, every query drawn."""
    db = folder / "lj.db"
    assert cli("init", db)[0] == 0
    code, _, err = cli(
        "import", db, "--qrels", SLICE / "humans.qrels", "--annotator", "nist",
        "--judgments", f"gpt4o={gpt4o}", "--run", *RUNS,
    )  # fmt: skip
    assert code == 0, err
    assert cli("audit", db, "--sample", "10", "--seed", "1")[0] == 0
    return db


def as_json(cli: Cli, db: Path, *extra: str) -> tuple[dict[str, Any], str]:
    code, out, err = cli("eval", db, "--format", "json", *extra)
    assert code == 0, err
    return json.loads(out), err


# -- options the estimate does not use ------------------------------------------------------


def test_resampling_options_beside_the_corrected_estimate_are_named(
    cli: Cli, project: EstimateProject
) -> None:
    asked = ("--estimate", "corrected", "--compare", "--metrics", "ndcg@10")
    report, err = as_json(cli, project.db, *asked, "--ci", "--permutations", "500", "--seed", "7")
    line = (
        "--ci, --permutations 500, --seed 7: not used by --estimate corrected, whose"
        " intervals are the normal PPI++ ones and whose p-values are normal tests"
    )
    assert line in err
    assert sum(line in warning for warning in report["warnings"]) == 1
    _, quiet = as_json(cli, project.db, *asked)
    assert "not used by --estimate corrected" not in quiet
    # The judge's estimate is an ordinary evaluation: its intervals are the bootstrap's.
    judged, err = as_json(cli, project.db, "--estimate", "judge", "--ci", "--resamples", "50")
    assert "not used by" not in err
    assert judged["config"]["resamples"] == 50


@pytest.mark.parametrize("estimate", ["human", "judge", "corrected"])
def test_a_grade_map_with_a_project_is_a_usage_error(
    cli: Cli, project: EstimateProject, estimate: str
) -> None:
    code, out, err = cli(
        "eval", project.db, "--estimate", estimate, "--grade-map", "0:1,1:2,2:3,3:5"
    )
    assert code == 2 and out == ""
    assert "--grade-map applies to labels read from files (--qrels, --samples)" in err
    assert "a project's grades are 1-5 already" in err


# -- judge labels missing from the runs' top K -------------------------------------------------


def missing_top_k(judged: set[tuple[str, str]], depth: int) -> tuple[int, int]:
    """Read from the run files: the top-``depth`` entries on queries the judge labelled,
    and how many of them it did not label."""
    queries = {qid for qid, _ in judged}
    entries = missing = 0
    for path in RUNS:
        lines = [line.split() for line in path.read_text().splitlines()]
        for qid, _, pid, rank, *_ in lines:
            if qid in queries and int(rank) <= depth:
                entries += 1
                missing += (qid, pid) not in judged
    return entries, missing


def test_judge_labels_missing_from_the_top_k_are_counted_once(cli: Cli, tmp_path: Path) -> None:
    lines = (SLICE / "gpt4o.qrels").read_text().splitlines()
    part = tmp_path / "part.qrels"
    kept = [line for i, line in enumerate(lines) if i % 10 < 7]  # 70% of the pairs
    part.write_text("".join(f"{line}\n" for line in kept))
    db = llmjudge(cli, tmp_path, part)
    entries, missing = missing_top_k({(q, p) for q, _, p, _ in map(str.split, kept)}, 5)
    assert 0 < missing < entries
    line = (
        f"{missing:,} of the stored runs' {entries:,} top-5 entries ({missing / entries:.0%})"
        " on the queries the judge labelled have no judge label and count as not relevant"
        f" in the judge's figures; fill them with `raglabel judge {db}`"
    )
    for estimate in ("judge", "corrected"):
        report, err = as_json(cli, db, "--estimate", estimate, "--metrics", "ndcg@5")
        assert err.count("have no judge label and count as not relevant") == 1
        assert line in err and report["warnings"].count(line) == 1
    # At a deeper cutoff, the deeper entries count.
    deeper, _ = missing_top_k({(q, p) for q, _, p, _ in map(str.split, kept)}, 10)
    _, err = as_json(cli, db, "--estimate", "judge", "--metrics", "ndcg@10")
    assert f"of the stored runs' {deeper:,} top-10 entries" in err


def test_a_judge_on_every_pair_gets_no_such_warning(cli: Cli, tmp_path: Path) -> None:
    db = llmjudge(cli, tmp_path)
    for estimate in ("judge", "corrected"):
        _, err = as_json(cli, db, "--estimate", estimate, "--metrics", "ndcg@5")
        assert "no judge label" not in err


# -- intervals in the metric's range, and of no width ------------------------------------------


def test_intervals_are_cut_to_the_metrics_range(cli: Cli, tmp_path: Path) -> None:
    db = llmjudge(cli, tmp_path)
    metrics = "ra_nwg@5,ndcg@5,ctx_rank_prec@5"
    report, _ = as_json(cli, db, "--estimate", "corrected", "--compare", "--metrics", metrics)
    human, _ = as_json(cli, db, "--per-query", "--metrics", metrics)
    # The whole normal interval of people's mean reaches past 1 here (every query is
    # drawn and complete, so people's figure is the mean over all ten).
    values = [v["ra_nwg@5"] for v in human["runs"]["oracle_ish"]["per_query"].values()]
    mean = statistics.fmean(values)
    half = stats.norm.ppf(0.975) * statistics.stdev(values) / math.sqrt(len(values))
    assert mean + half > 1.0
    oracle = report["runs"]["oracle_ish"]
    assert oracle["human_only"]["mean"]["ra_nwg@5"] == pytest.approx(mean)
    low, high = oracle["human_only"]["ci"]["ra_nwg@5"]
    assert (low, high) == (pytest.approx(mean - half), 1.0)
    assert oracle["ci"]["ra_nwg@5"][1] == 1.0
    for run in report["runs"].values():
        for side in (run, run["judge_only"], run["human_only"]):
            for metric, ci in side["ci"].items():
                top = 100.0 if metric.startswith("ctx_rank_prec") else 1.0
                assert ci is None or 0.0 <= ci[0] <= ci[1] <= top
    for test in report["compare"]:
        top = 100.0 if test["metric"].startswith("ctx_rank_prec") else 1.0
        assert test["ci"] is None or -top <= test["ci"][0] <= test["ci"][1] <= top


def test_an_interval_of_no_width_is_said_to_show_no_spread(cli: Cli, tmp_path: Path) -> None:
    db = llmjudge(cli, tmp_path)
    report, err = as_json(
        cli, db, "--estimate", "corrected", "--compare", "--baseline", "bm25",
        "--metrics", "proc@5,ndcg@5",
    )  # fmt: skip
    # Every run ranks the same 24 passages a query, so each reaches its pool's best.
    assert {tuple(run["ci"]["proc@5"]) for run in report["runs"].values()} == {(1.0, 1.0)}
    runs = ", ".join(report["runs"])
    assert (
        f"proc@5 ({runs}): all 10 complete drawn queries have the value 1.000, so its"
        " interval has no width: it shows no spread, not certainty"
    ) in err
    assert "proc@5 (dense - bm25, " in err and "have the difference 0.000" in err
    assert not any(line.startswith("raglabel eval: warning: ndcg@5") and "no width" in line
                   for line in err.splitlines())  # fmt: skip
