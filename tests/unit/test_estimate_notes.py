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

from raglabel.formats.report import Report
from raglabel.storage.grades import GradeEvent, record
from raglabel.storage.project import Project

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


# -- issue 29 review: what the estimate must refuse or say ----------------------------------


def test_an_annotator_is_refused_with_the_corrected_estimate(
    cli: Cli, project: EstimateProject
) -> None:
    """Completeness counts anyone's grades: one annotator's alone would count the
    passages they left to others as not relevant."""
    code, _, err = cli("eval", project.db, "--estimate", "corrected", "--annotator", "alice")
    assert code == 2
    assert "--annotator goes with --estimate human only" in err
    assert "complete on any person's grades" in err


def test_the_reports_estimate_uses_everyones_grades(project: EstimateProject) -> None:
    from raglabel.analysis.corrected import EstimateRefusedError, report_estimate
    from raglabel.analysis.evaluation import Options
    from raglabel.analysis.inputs import EvalRequest
    from raglabel.metrics.config import MetricConfig
    from raglabel.metrics.names import MetricKey
    from raglabel.storage.labels import LabelChoice

    def asked(choice: LabelChoice | None) -> EvalRequest:
        return EvalRequest(
            options=Options(metrics=[MetricKey("ndcg", 10)], ci=False),
            cutoffs=[10],
            config=MetricConfig(),
            project=project.db,
            choice=choice,
        )

    everyone = report_estimate(asked(None))
    # "nobody" graded nothing: with their grades alone every drawn query would be empty.
    one = report_estimate(asked(LabelChoice(annotator="nobody")))
    assert isinstance(everyone, Report) and isinstance(one, Report)
    assert {r: v.mean for r, v in one.runs.items()} == {r: v.mean for r, v in everyone.runs.items()}
    assert any("not on annotator 'nobody'" in line for line in one.warnings)
    # Run files beside the project: the section is refused, naming the import.
    with_file = asked(None)
    with_file.runs = [("extra", project.db.parent / "bm25.run")]
    refused = report_estimate(with_file)
    assert isinstance(refused, EstimateRefusedError)
    assert refused.fix == f"raglabel import {project.db} --run NAME=FILE"


def test_run_files_beside_a_project_are_refused(cli: Cli, project: EstimateProject) -> None:
    run = project.db.parent / "bm25.run"
    for kind in ("judge", "corrected"):
        code, _, err = cli("eval", project.db, "--run", f"extra={run}", "--estimate", kind)
        assert code == 2, err
        assert f"--estimate {kind} reads the project's stored runs" in err
        assert f"raglabel import {project.db} --run NAME=FILE" in err


def taken(qid: str, pid: str, grade: int) -> GradeEvent:
    """Alice's grade on a pair, made by accepting the judge's suggestion."""
    return GradeEvent(
        query=qid, passage=pid, annotator="alice", grade=grade, accepted_suggestion=True
    )


def test_grades_that_accepted_the_judge_complete_no_drawn_query(cli: Cli, tmp_path: Path) -> None:
    built = build(tmp_path, complete=11, incomplete=0)
    first = built.complete[0]
    with Project.open(built.db) as opened:
        for (qid, pid), grade in built.graded.items():
            if qid == first:  # alice took the judge's grade instead of her own
                record(opened, taken(qid, pid, grade))
    pairs = sum(qid == first for qid, _ in built.graded)
    report, err = as_json(cli, built.db, "--estimate", "corrected", "--metrics", "ndcg@10")
    assert report["estimate"]["complete"] == 10
    assert report["estimate"]["incomplete"] == [first, *built.drawn[11:]]
    assert f"({pairs} of their pairs graded only by accepting the judge's suggestion" in err
    # One more accepted query leaves too few: the refusal counts the accepted pairs.
    second = built.complete[1]
    with Project.open(built.db) as opened:
        for (qid, pid), grade in built.graded.items():
            if qid == second:
                record(opened, taken(qid, pid, grade))
    code, _, err = cli("eval", built.db, "--estimate", "corrected", "--metrics", "ndcg@10")
    assert code == 2
    both = sum(qid in (first, second) for qid, _ in built.graded)
    assert f"{both} pairs of the drawn queries are graded only by accepting" in err


def test_labels_beyond_the_top_k_are_named_metric_by_metric(
    cli: Cli, project: EstimateProject
) -> None:
    metrics = "ndcg@10,recall@10,rprec,precision@5,mrr@10,ap@10"
    _, err = as_json(cli, project.db, "--estimate", "corrected", "--metrics", metrics)
    (line,) = [w for w in err.splitlines() if "outside the stored runs' top 10" in w]
    named = line.removeprefix("raglabel eval: warning: ").partition(":")[0].split(", ")
    assert sorted(named) == ["ap@10", "ndcg@10", "recall@10", "rprec"]


def test_a_drawn_query_no_run_covers_is_left_out_of_the_estimate(cli: Cli, tmp_path: Path) -> None:
    built = build(tmp_path, complete=12, incomplete=0)
    gone = built.complete[0]
    for run in built.runs:
        path = tmp_path / f"{run}.run"
        kept = [line for line in path.read_text().splitlines() if not line.startswith(f"{gone} ")]
        path.write_text("".join(f"{line}\n" for line in kept))
        code, _, err = cli("import", built.db, "--run", f"{run}={path}", "--replace")
        assert code == 0, err
    report, err = as_json(cli, built.db, "--estimate", "corrected", "--metrics", "ndcg@10")
    assert report["estimate"]["complete"] == 11 and report["estimate"]["population"] == 19
    assert f"1 drawn queries no stored run covers any more ({gone}) are left out" in err


def test_no_spread_gives_no_p_value_and_the_table_says_na(cli: Cli, tmp_path: Path) -> None:
    """A run stored twice differs from itself by 0 on every query (se 0): no p-value,
    none adjusted, and NA in the table, where a p of 1 (or 0) was before."""
    built = build(tmp_path)
    copy = tmp_path / "copy.run"
    copy.write_text((tmp_path / "bm25.run").read_text())
    assert cli("import", built.db, "--run", f"copy={copy}")[0] == 0
    asked = ("--estimate", "corrected", "--compare", "--baseline", "bm25", "--metrics", "ndcg@10")
    report, _ = as_json(cli, built.db, *asked)
    (same,) = [c for c in report["compare"] if c["run"] == "copy"]
    assert same["mean_difference"] == 0.0 and (same["p_value"], same["p_adjusted"]) == (None, None)
    others = [c for c in report["compare"] if c["run"] != "copy"]
    assert others and all(c["p_value"] is not None for c in others)
    code, out, err = cli("eval", built.db, *asked)
    assert code == 0, err
    (row,) = [line for line in out.splitlines() if " copy " in line and "headline" in line]
    assert row.split()[6:8] == ["NA", "NA"]  # p and p (holm), after the two-cell CI


def test_intervals_never_run_backwards_and_a_mean_beyond_the_range_is_named() -> None:
    """A corrected mean past 1 (the judge's mean plus people's correction) with its
    interval wholly past 1 once gave (1.0113, 1.0); both ends now stay in the range,
    and the mean, left as the estimator gives it, is named once."""
    import numpy as np

    from raglabel.analysis.corrected import _out_of_range_note, _pair
    from raglabel.metrics.judge_corrected import Estimate, judge_corrected

    assert _pair(Estimate(1.0166, (1.0113, 1.0219), 0.0027, 30), (0.0, 1.0)) == (1.0, 1.0)
    assert _pair(Estimate(-0.02, (-0.03, -0.01), 0.005, 30), (0.0, 1.0)) == (0.0, 0.0)
    assert _pair(Estimate(0.5, (0.4, 0.6), 0.05, 30), (0.0, 1.0)) == (0.4, 0.6)
    rng = np.random.default_rng(3)
    h = np.clip(0.95 + rng.normal(0, 0.03, (30, 1)), 0, 1)
    g = h - 0.2  # the judge tracks people closely, 0.2 low
    f = np.full((400, 1), 0.99)  # but is near 1 over the population
    fixed = judge_corrected(np.hstack([f, f]), np.hstack([h, h]), np.hstack([g, g]))
    mean = fixed.column(0).corrected
    assert mean is not None and mean.mean > 1.0
    note = _out_of_range_note(fixed, [("bm25", "ndcg@10", None), ("dense", "ndcg@10", None)])
    assert note is not None and note.count("ndcg@10 of") == 2
    assert f"ndcg@10 of bm25 ({mean.mean:.4f}, range [0, 1])" in note
    assert "not clipped" in note
    low, high = _pair(mean, (0.0, 1.0)) or (math.nan, math.nan)
    assert low <= high <= 1.0
