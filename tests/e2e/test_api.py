"""``raglabel.evaluate``: the eval command as a function, on dicts, files and DataFrames."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl
import pytest
import pytrec_eval

import raglabel

if TYPE_CHECKING:
    from cli_helpers import Cli

DEMO = Path(__file__).resolve().parents[2] / "fixtures" / "demo"
QRELS = DEMO / "qrels.txt"
RUNS = {"bm25": DEMO / "runs" / "bm25.run", "dense": DEMO / "runs" / "dense.run"}
TREC = "map,P_10,ndcg_cut_10,recip_rank,bpref,Rprec"
# Our names for trec_eval's measures.
NAMES = {"ap": "map", "precision@10": "P_10", "ndcg@10": "ndcg_cut_10"}
NAMES |= {"mrr": "recip_rank", "bpref": "bpref", "rprec": "Rprec"}


def qrels_dict() -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for line in QRELS.read_text().splitlines():
        q, _, d, label = line.split()[:4]
        out.setdefault(q, {})[d] = int(label)
    return out


def run_dict(path: Path) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        q, _, d, _, score = line.split()[:5]
        out.setdefault(q, {})[d] = float(score)
    return out


def test_dicts_equal_pytrec_eval_per_query() -> None:
    qrels = qrels_dict()
    runs = {name: run_dict(path) for name, path in RUNS.items()}
    report = raglabel.evaluate(qrels, runs, metrics=TREC, na="zero")
    # trec_eval reads a negative label as unjudged, raglabel as judged junk: both call
    # it non-relevant; with relevance level 2, raglabel's grade 4 and up.
    trec_qrels = {q: {d: max(g, 0) for d, g in docs.items()} for q, docs in qrels.items()}
    measures = {"map", "P.10", "ndcg_cut.10", "recip_rank", "bpref", "Rprec"}
    evaluator = pytrec_eval.RelevanceEvaluator(trec_qrels, measures, relevance_level=2)
    for name, run in runs.items():
        expected = evaluator.evaluate(run)
        ours = report.per_query[name]
        assert set(expected) <= set(ours)
        for query, values in expected.items():
            for mine, theirs in NAMES.items():
                assert ours[query][mine] == pytest.approx(values[theirs], abs=1e-12)


def test_files_give_the_eval_commands_json(cli: Cli) -> None:
    report = raglabel.evaluate(str(QRELS), {n: str(p) for n, p in RUNS.items()}, k=[5, 10])
    argv = ["eval", "--qrels", QRELS, "--per-query", "-k", "5,10", "--format", "json"]
    for name, path in RUNS.items():
        argv += ["--run", f"{name}={path}"]
    code, out, err = cli(*argv)
    assert code == 0, err
    # The labels' source names the qrels file: the same path both ways.
    assert report.to_json() == out
    assert report.means == {name: run["mean"] for name, run in json.loads(out)["runs"].items()}


def test_dicts_and_frames_equal_files() -> None:
    from_files = raglabel.evaluate(QRELS, RUNS["bm25"], metrics="set,ndcg@10")
    qrels = qrels_dict()
    run = run_dict(RUNS["bm25"])
    from_dicts = raglabel.evaluate(qrels, run, metrics="set,ndcg@10")
    frame_qrels = pl.DataFrame(
        [
            {"query_id": q, "doc_id": d, "relevance": g}
            for q, docs in qrels.items()
            for d, g in docs.items()
        ]
    )
    frame_run = pl.DataFrame(
        [{"q_id": q, "doc_id": d, "score": s} for q, docs in run.items() for d, s in docs.items()]
    )
    from_frames = raglabel.evaluate(frame_qrels, frame_run, metrics="set,ndcg@10")
    assert from_dicts.means == from_frames.means == from_files.means
    assert from_dicts.per_query == from_frames.per_query == from_files.per_query
    tidy = from_frames.to_polars()
    assert tidy.columns == ["run", "query", "metric", "value"]
    assert tidy.height == sum(len(v) for v in from_frames.per_query["run"].values())


def test_intervals_and_comparisons_come_with_the_options() -> None:
    report = raglabel.evaluate(
        QRELS, RUNS, metrics="ndcg@10", ci=True, compare=True, resamples=200, permutations=500
    )
    low, high = report.ci()["bm25"]["ndcg@10"] or (None, None)
    assert low is not None and high is not None and low <= report.means["bm25"]["ndcg@10"] <= high
    (test,) = report.compare()
    assert (test["baseline"], test["run"], test["metric"]) == ("bm25", "dense", "ndcg@10")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"metrics": "ndcg@ten"}, "^metrics: cutoff of 'ndcg@ten'"),
        ({"na": "maybe"}, "^na='maybe': one of 'skip', 'zero'$"),
        ({"k": 0}, "^k=0: "),
        ({"adjust": "bonferroni"}, "^adjust='bonferroni': one of 'none', 'holm', 'bh'$"),
        ({"resamples": 0}, "^resamples=0: must be from 1 to 100,000, got 0$"),
        ({"confidence": 1.5}, "^confidence=1.5: must be between 0 and 1"),
        ({"ci": "yes"}, "^ci='yes': True or False$"),
        ({"grade_map": "0:9"}, "^grade_map='0:9': "),
        ({"grade_map": 5}, r"^grade_map=5: a text such as \"0:2,1:5\" or a dict such as \{0: 2\}$"),
        ({"k": [5, "10"]}, r"^k=\[5, '10'\]: a positive integer or a list of them$"),
        ({"gain_map": {7: 1.0}}, r"^gain_map=\{7: 1.0\}: 7 is not a grade"),
        ({"relevance_threshold": 9}, "^relevance_threshold: "),
        ({"baseline": "nope"}, "^baseline 'nope' is not one of the runs: 'run'$"),
        ({"pool": {"nope": "run"}}, "^pool: 'nope' is not one of the runs"),
    ],
)
def test_bad_options_raise_value_error(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        raglabel.evaluate(QRELS, RUNS["bm25"], **kwargs)  # type: ignore[arg-type]


def test_bad_inputs_raise_value_error() -> None:
    with pytest.raises(ValueError, match="not an integer"):
        raglabel.evaluate({"q1": {"d1": 0.5}}, {"q1": {"d1": 1.0}})
    with pytest.raises(ValueError, match="holds white space"):
        raglabel.evaluate({"q 1": {"d1": 1}}, {"q1": {"d1": 1.0}})
    with pytest.raises(ValueError, match="no query_id or q_id or qid column"):
        raglabel.evaluate(pl.DataFrame({"x": [1]}), {"q1": {"d1": 1.0}})


TREC_EVAL = Path(__file__).resolve().parents[1] / "data" / "trec_eval"


def test_dicts_and_frames_equal_pytrec_eval_on_trec_evals_own_test_files() -> None:
    qrels: dict[str, dict[str, int]] = {}
    for line in (TREC_EVAL / "qrels.test").read_text().splitlines():
        q, _, d, label = line.split()[:4]
        qrels.setdefault(q, {})[d] = int(label)
    run = run_dict(TREC_EVAL / "results.test")
    # Binary labels: 0 and 1 read as grades 2 and 3 (the default map), and grade 3 is
    # relevant at --relevance-threshold 3, as 1 is at trec_eval's relevance level 1.
    options = {"metrics": TREC, "na": "zero", "relevance_threshold": 3}
    report = raglabel.evaluate(qrels, run, **options)
    measures = {"map", "P.10", "ndcg_cut.10", "recip_rank", "bpref", "Rprec"}
    expected = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=1).evaluate(run)
    ours = report.per_query["run"]
    assert set(expected) == set(ours) and len(expected) == 3
    for query, values in expected.items():
        for mine, theirs in NAMES.items():
            assert ours[query][mine] == pytest.approx(values[theirs], abs=1e-12), (query, mine)
    qrels_frame = pl.DataFrame(
        [(q, d, g) for q, docs in qrels.items() for d, g in docs.items()],
        schema=["query_id", "doc_id", "relevance"],
        orient="row",
    )
    run_frame = pl.DataFrame(
        [(q, d, s) for q, docs in run.items() for d, s in docs.items()],
        schema=["query_id", "doc_id", "score"],
        orient="row",
    )
    assert raglabel.evaluate(qrels_frame, run_frame, **options).per_query == report.per_query


def test_pandas_frames_in_and_out() -> None:
    pd = pytest.importorskip("pandas")
    qrels = qrels_dict()
    run = run_dict(RUNS["dense"])
    # ir_measures' and ranx's column names: query_id / q_id, doc_id, relevance, score.
    qrels_frame = pd.DataFrame(
        [(q, d, g) for q, docs in qrels.items() for d, g in docs.items()],
        columns=["q_id", "doc_id", "relevance"],
    )
    run_frame = pd.DataFrame(
        [(q, d, s) for q, docs in run.items() for d, s in docs.items()],
        columns=["query_id", "doc_id", "score"],
    )
    from_frames = raglabel.evaluate(qrels_frame, {"dense": run_frame}, metrics="set,ndcg@10")
    from_dicts = raglabel.evaluate(qrels, {"dense": run}, metrics="set,ndcg@10")
    assert from_frames.per_query == from_dicts.per_query
    table = from_dicts.to_pandas()
    assert list(table.columns) == ["run", "query", "metric", "value"]
    assert len(table) == len(from_dicts.rows())


def test_neither_frame_library_is_imported_unless_asked() -> None:
    import subprocess
    import sys

    code = (
        "import sys, raglabel; "
        "r = raglabel.evaluate({'q': {'a': 1}}, {'q': {'a': 1.0}}, metrics='ndcg@10'); "
        "r.means; r.to_json(); "
        "print(sorted({'pandas', 'polars'} & {m.split('.')[0] for m in sys.modules}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_numpy_numbers_are_numbers_and_numpy_truth_values_are_not() -> None:
    # Cutoffs and seeds often come out of arrays; a numpy bool is no more a cutoff than True.
    import numpy as np

    qrels = {"q1": {"d1": 2, "d2": 0}}
    run = {"q1": {"d1": 1.0, "d2": 0.5}}
    plain = raglabel.evaluate(qrels, run, k=[5, 10], seed=1, relevance_threshold=3)
    arrays = raglabel.evaluate(
        qrels,
        run,
        k=np.array([5, 10]),
        seed=np.int64(1),
        relevance_threshold=np.int64(3),
    )
    assert arrays.to_json() == plain.to_json()
    with pytest.raises(ValueError, match=r"k=np\.True_: a positive integer"):
        raglabel.evaluate(qrels, run, k=np.bool_(True))
    with pytest.raises(ValueError, match=r"relevance_threshold=True: a number"):
        raglabel.evaluate(qrels, run, relevance_threshold=True)


def test_a_label_the_grade_map_misses_names_the_keyword_not_the_flag() -> None:
    with pytest.raises(ValueError, match=r"give one with grade_map, e\.g\. grade_map=\"0:2,1:5\""):
        raglabel.evaluate({"q1": {"d1": 7}}, {"q1": {"d1": 1.0}})


def test_a_config_files_default_k_too_large_is_a_value_error(tmp_path: Path) -> None:
    config = tmp_path / "metrics.toml"
    config.write_text("[metrics]\ndefault_k = 99999999999999999999\n")
    with pytest.raises(ValueError, match=r"default_k 99999999999999999999 is too large"):
        raglabel.evaluate({"q1": {"d1": 2}}, {"q1": {"d1": 1.0}}, config=config)
