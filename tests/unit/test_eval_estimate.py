"""``eval DB --estimate judge|corrected`` (issue 29, section 2): the judge-only and the
judge-corrected figures of a project's runs, checked against the core estimator
applied to per-query metrics computed independently (pytrec_eval, on qrels files
written from the project's people's and judge's labels), and the refusals."""

from __future__ import annotations

import json
import math
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest
import pytrec_eval
from docs_pages import examples
from estimate_project import RUNS, EstimateProject, build

from raglabel.metrics.judge_corrected import judge_corrected

if TYPE_CHECKING:
    from cli_helpers import Cli

METRICS = "ndcg@10,precision@5"
# pytrec_eval's names of the same measures: the default gain map gives grade g the gain
# max(0, g - 2), trec_eval's label; precision counts grades 4 and up (label 2 and up).
THEIRS = {"ndcg@10": "ndcg_cut_10", "precision@5": "P_5"}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> EstimateProject:
    return build(tmp_path_factory.mktemp("estimate"))


def lower_median(grades: list[int]) -> int:
    ordered = sorted(grades)
    return ordered[(len(ordered) - 1) // 2]


def judge_labels(project: EstimateProject) -> dict[tuple[str, str], int]:
    """The judge's grade of each pair: the lower median over the two models."""
    return {
        pair: lower_median([grades[pair] for grades in project.models.values()])
        for pair in project.truth
    }


def per_query(labels: dict[tuple[str, str], int], run: dict[str, list[str]]) -> dict[str, Any]:
    """pytrec_eval's nDCG@10 and P@5 per query, by raglabel's names."""
    qrels: dict[str, dict[str, int]] = {}
    for (qid, pid), grade in labels.items():
        qrels.setdefault(qid, {})[pid] = max(0, grade - 2)
    ranked = {
        qid: {pid: float(100 - rank) for rank, pid in enumerate(pids, 1)}
        for qid, pids in run.items()
        if qid in qrels
    }
    ndcg = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(ranked)
    precision = pytrec_eval.RelevanceEvaluator(qrels, {"P.5"}, relevance_level=2).evaluate(ranked)
    return {
        qid: {"ndcg@10": ndcg[qid]["ndcg_cut_10"], "precision@5": precision[qid]["P_5"]}
        for qid in ranked
    }


def estimate_json(cli: Cli, db: Path, *extra: str) -> dict[str, Any]:
    code, out, err = cli("eval", db, "--metrics", METRICS, "--format", "json", *extra)
    assert code == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


def expected(project: EstimateProject) -> dict[str, Any]:
    """Per run and metric, and per paired difference against bm25: the core estimator
    on pytrec_eval's per-query values."""
    judge = judge_labels(project)
    population = sorted(project.runs["bm25"])
    values = {
        run: (per_query(judge, project.runs[run]), per_query(project.graded, project.runs[run]))
        for run in RUNS
    }
    out: dict[str, Any] = {}
    for metric in ("ndcg@10", "precision@5"):
        for run in RUNS:
            for base in (None, "bm25"):
                if base == run:
                    continue

                def value(side: int, qid: str, key: tuple[str, str | None, str]) -> float:
                    run, base, metric = key
                    one = values[run][side][qid][metric]
                    return one if base is None else one - values[base][side][qid][metric]

                key = (run, base, metric)
                f = np.array([[value(0, q, key)] for q in population])
                h = np.array([[value(1, q, key)] for q in project.complete])
                g = np.array([[value(0, q, key)] for q in project.complete])
                out[run, base, metric] = judge_corrected(f, h, g).column(0)
    return out


def test_corrected_means_are_the_core_on_independent_per_query_values(
    cli: Cli, project: EstimateProject
) -> None:
    report = estimate_json(cli, project.db, "--estimate", "corrected")
    want = expected(project)
    assert report["estimate"] == {
        "kind": "corrected",
        "population": 20,
        "drawn": 14,
        "complete": 12,
        "incomplete": project.incomplete,
        "depth": 10,
    }
    for run in RUNS:
        got = report["runs"][run]
        for metric in ("ndcg@10", "precision@5"):
            one = want[run, None, metric]
            assert one.corrected is not None and one.judge_only and one.human_only
            assert got["mean"][metric] == pytest.approx(one.corrected.mean, abs=1e-12)
            assert got["ci"][metric] == pytest.approx(list(one.corrected.ci), abs=1e-12)
            assert got["valid"][metric] == 12
            assert got["lambda"][metric] == pytest.approx(one.lam, abs=1e-12)
            assert 0.0 <= got["lambda"][metric] <= 1.0
            judge, human = got["judge_only"], got["human_only"]
            assert judge["mean"][metric] == pytest.approx(one.judge_only.mean, abs=1e-12)
            assert judge["ci"][metric] == pytest.approx(list(one.judge_only.ci), abs=1e-12)
            assert judge["valid"][metric] == 20
            assert human["mean"][metric] == pytest.approx(one.human_only.mean, abs=1e-12)
            assert human["ci"][metric] == pytest.approx(list(one.human_only.ci), abs=1e-12)
            assert human["valid"][metric] == 12
    # The judge favours dense, so its figure differs from people's; the corrected one
    # lies between the judge's and people's (lambda in (0, 1)).
    dense = report["runs"]["dense"]
    assert dense["judge_only"]["mean"]["ndcg@10"] > dense["human_only"]["mean"]["ndcg@10"]


def test_human_only_figures_are_plain_means_of_people_on_complete_queries(
    cli: Cli, project: EstimateProject
) -> None:
    """Incomplete drawn queries are left out: people's mean is over the complete ones."""
    report = estimate_json(cli, project.db, "--estimate", "corrected")
    values = per_query(project.graded, project.runs["hybrid"])
    plain = [values[q]["ndcg@10"] for q in project.complete]
    got = report["runs"]["hybrid"]["human_only"]["mean"]["ndcg@10"]
    assert got == pytest.approx(float(np.mean(plain)), abs=1e-12)
    with_incomplete = [values[q]["ndcg@10"] for q in project.complete + project.incomplete]
    assert got != pytest.approx(float(np.mean(with_incomplete)), abs=1e-9)


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjustment, written out."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    out = [0.0] * len(p_values)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        out[i] = running
    return out


def test_comparisons_are_the_core_on_per_query_differences(
    cli: Cli, project: EstimateProject
) -> None:
    report = estimate_json(
        cli, project.db, "--estimate", "corrected", "--compare", "--baseline", "bm25"
    )
    want = expected(project)
    tests = report["compare"]
    assert [(t["run"], t["metric"]) for t in tests] == [
        (run, metric) for run in ("dense", "hybrid") for metric in ("ndcg@10", "precision@5")
    ]
    for test in tests:
        one = want[test["run"], "bm25", test["metric"]]
        assert one.corrected is not None and one.judge_only and one.human_only
        assert test["baseline"] == "bm25"
        assert test["mean_difference"] == pytest.approx(one.corrected.mean, abs=1e-12)
        assert test["ci"] == pytest.approx(list(one.corrected.ci), abs=1e-12)
        assert test["p_value"] == pytest.approx(one.p_value, abs=1e-12)
        assert test["queries_to_settle"] == one.queries_to_settle
        assert test["lambda"] == pytest.approx(one.lam, abs=1e-12)
        assert test["judge_only"]["mean_difference"] == pytest.approx(one.judge_only.mean)
        assert test["human_only"]["mean_difference"] == pytest.approx(one.human_only.mean)
        assert test["queries"] == 12
        assert test["family"] == ("headline" if test["metric"] == "ndcg@10" else "secondary")
        # queries_to_settle is 0 exactly when the interval excludes 0.
        lo, hi = test["ci"]
        assert (test["queries_to_settle"] == 0) == (lo > 0 or hi < 0)
    # Adjusted as eval adjusts today: Holm within each family.
    for family in ("headline", "secondary"):
        members = [t for t in tests if t["family"] == family]
        adjusted = holm([t["p_value"] for t in members])
        assert [t["p_adjusted"] for t in members] == pytest.approx(adjusted, abs=1e-12)
    settles = {t["queries_to_settle"] for t in tests}
    assert 0 in settles and settles - {0}, settles  # some settled, some not yet


def test_the_p_value_is_the_normal_test_of_the_interval(cli: Cli, project: EstimateProject) -> None:
    from scipy.stats import norm

    report = estimate_json(
        cli, project.db, "--estimate", "corrected", "--compare", "--baseline", "bm25"
    )
    for test in report["compare"]:
        lo, hi = test["ci"]
        se = (hi - lo) / 2 / norm.ppf(0.975)
        assert test["p_value"] == pytest.approx(
            2 * norm.sf(abs(test["mean_difference"]) / se), rel=1e-9
        )


def test_judge_estimate_is_the_judge_labels_alone(cli: Cli, project: EstimateProject) -> None:
    report = estimate_json(cli, project.db, "--estimate", "judge")
    assert report["estimate"] == {"kind": "judge", "population": 20}
    assert report["labels"]["source"].startswith("judge:")
    judge = judge_labels(project)
    for run in RUNS:
        values = per_query(judge, project.runs[run])
        for metric in ("ndcg@10", "precision@5"):
            mean = sum(v[metric] for v in values.values()) / len(values)
            assert report["runs"][run]["mean"][metric] == pytest.approx(mean, abs=1e-12)


def test_human_estimate_is_todays_report_byte_for_byte(cli: Cli, project: EstimateProject) -> None:
    plain = cli("eval", project.db, "--metrics", METRICS, "--format", "json")
    named = cli("eval", project.db, "--metrics", METRICS, "--format", "json", "--estimate", "human")
    assert plain == named and plain[0] == 0
    assert "estimate" not in json.loads(plain[1])


def test_table_markdown_and_csv_show_all_three_figures(cli: Cli, project: EstimateProject) -> None:
    args = ("eval", project.db, "--metrics", METRICS, "--estimate", "corrected", "--compare",
            "--baseline", "bm25")  # fmt: skip
    report = estimate_json(cli, project.db, *args[4:])
    code, table, err = cli(*args)
    assert code == 0, err
    bm25 = report["runs"]["bm25"]
    for text in (f"{bm25['mean']['ndcg@10']:.4f}", f"{bm25['judge_only']['mean']['ndcg@10']:.4f}",
                 f"{bm25['human_only']['mean']['ndcg@10']:.4f}"):  # fmt: skip
        assert text in table
    assert "judge-corrected" in table and "settled" in table
    assert "more queries to settle" in table or "not within the undrawn queries" in table
    assert "incomplete" not in table  # warnings go to stderr
    assert (
        "2 of 14 drawn queries are not complete (q" in err
        and "nothing to do with their labels" in err
    )
    code, markdown, _ = cli(*args, "--format", "markdown")
    assert (
        code == 0 and "| metric | run | corrected | lambda | judge only | human only |" in markdown
    )
    code, csv_text, _ = cli(*args, "--format", "csv")
    rows = [line.split(",") for line in csv_text.splitlines()]
    by_kind = {(r[0], r[1], r[2], r[4]): r[5] for r in rows}
    assert float(by_kind["mean", "bm25", "ndcg@10", ""]) == bm25["mean"]["ndcg@10"]
    assert float(by_kind["lambda", "bm25", "ndcg@10", ""]) == bm25["lambda"]["ndcg@10"]
    assert (
        float(by_kind["judge_only_mean", "bm25", "ndcg@10", ""])
        == (bm25["judge_only"]["mean"]["ndcg@10"])
    )
    first = report["compare"][0]
    assert (
        int(by_kind["compare_queries_to_settle", first["run"], first["metric"], "bm25"])
        == (first["queries_to_settle"])
    )


def test_the_report_validates_against_the_schema(cli: Cli, project: EstimateProject) -> None:
    from pydantic import TypeAdapter

    from raglabel.formats.report import Report

    for extra in (("--estimate", "corrected", "--compare"), ("--estimate", "judge")):
        report = estimate_json(cli, project.db, *extra)
        TypeAdapter(Report).validate_python(report)


# -- refusals ---------------------------------------------------------------------------


def test_fewer_than_ten_complete_drawn_queries_are_refused_with_the_count(
    cli: Cli, tmp_path: Path
) -> None:
    built = build(tmp_path, complete=9, incomplete=1)
    code, out, err = cli("eval", built.db, "--estimate", "corrected")
    assert code == 2 and out == ""
    assert "only 9 complete drawn queries" in err and "at least 10" in err
    assert "grade 1 more in full" in err


def test_no_draw_points_at_raglabel_audit(cli: Cli, tmp_path: Path) -> None:
    built = build(tmp_path, complete=0, incomplete=0, draw_sample=False)
    code, _, err = cli("eval", built.db, "--estimate", "corrected")
    assert code == 2
    assert f"raglabel audit {built.db} --sample N" in err


def test_no_judge_labels_points_at_judge_and_import(cli: Cli, tmp_path: Path) -> None:
    built = build(tmp_path, judge=False)
    for kind in ("judge", "corrected"):
        code, _, err = cli("eval", built.db, "--estimate", kind)
        assert code == 2
        assert "no judge labels" in err and "raglabel judge" in err and "--judgments" in err


def test_files_take_the_human_estimate_only(
    cli: Cli, project: EstimateProject, tmp_path: Path
) -> None:
    qrels = tmp_path / "q.qrels"
    qrels.write_text("q01 0 q01-p01 3\n")
    run = project.db.parent / "bm25.run"
    for kind in ("judge", "corrected"):
        code, _, err = cli("eval", "--qrels", qrels, "--run", run, "--estimate", kind)
        assert code == 2 and "needs a project DB" in err
    code, _, _ = cli("eval", "--qrels", qrels, "--run", run, "--estimate", "human")
    assert code == 0


def test_options_the_corrected_estimate_cannot_honour_are_refused(
    cli: Cli, project: EstimateProject
) -> None:
    for extra, word in (
        (("--estimate", "corrected", "--per-query"), "--per-query"),
        (("--estimate", "corrected", "--fill-with-judge"), "--fill-with-judge"),
        (("--estimate", "judge", "--annotator", "alice"), "--annotator"),
        (("--estimate", "corrected", "--answers"), "--answers"),
    ):
        code, _, err = cli("eval", project.db, *extra)
        assert code == 2 and word in err, err


def test_a_metric_undefined_on_some_queries_says_its_counts(cli: Cli, tmp_path: Path) -> None:
    """MRR is undefined where the labels hold no relevant passage: a query whose judge
    grades are all low is left out of the judge's mean, and the warning counts it."""
    built = build(tmp_path)
    from raglabel.storage.project import Project

    low = built.complete[0]
    with Project.open(built.db) as project, project.write():
        project.conn.execute(
            "UPDATE suggestion SET grade = 1 WHERE query_id = (SELECT id FROM query"
            " WHERE ext_id = ?)",
            (low,),
        )
    code, out, err = cli(
        "eval", built.db, "--metrics", "mrr", "--estimate", "corrected", "--format", "json"
    )
    assert code == 0, err
    report = json.loads(out)
    bm25 = report["runs"]["bm25"]
    assert bm25["valid"]["mrr"] == 11  # the complete drawn queries defined under both
    assert bm25["judge_only"]["valid"]["mrr"] == 19
    assert bm25["human_only"]["valid"]["mrr"] == 12
    assert "mrr (bm25, dense, hybrid): undefined on 1 of 12 complete drawn and 1 of 20" in err
    assert not math.isnan(bm25["mean"]["mrr"])


def test_the_pages_example_prints_what_the_page_says(
    cli: Cli, project: EstimateProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = f"tests/unit/{Path(__file__).name}"
    [commands] = examples("guide/corrected.md", here, "bash")
    [printed] = examples("guide/corrected.md", here, "text")
    monkeypatch.chdir(project.db.parent)
    (line,) = commands.splitlines()
    words = shlex.split(line)
    assert words[:2] == ["raglabel", "eval"]
    code, out, err = cli(*words[1:])
    assert code == 0, err
    # The page's block without the two spaces that end a Markdown line break.
    assert "\n".join(text.rstrip() for text in out.splitlines()) + "\n" == printed
    assert "2 of 14 drawn queries are not complete (q11, q19)" in err
    assert "ndcg@10: read labels of passages outside the stored runs' top 10" in err
    report = estimate_json(cli, project.db, "--estimate", "corrected", "--compare",
                           "--baseline", "bm25")  # fmt: skip
    dense = next(t for t in report["compare"] if t["run"] == "dense" and t["metric"] == "ndcg@10")
    hybrid = next(t for t in report["compare"] if t["run"] == "hybrid" and t["metric"] == "ndcg@10")
    # What the page says of it.
    assert f"{dense['judge_only']['mean_difference']:+.3f}" == "+0.030"
    assert f"{dense['mean_difference']:.4f}" == "-0.1085" and dense["queries_to_settle"] == 0
    assert hybrid["queries_to_settle"] is None and report["estimate"]["population"] - 14 == 6
