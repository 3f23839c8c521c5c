"""raglabel against pytrec_eval (trec_eval's own code) on TREC files with many tied scores.

With the default grade map (0->2, 1->3, 2->4, 3->5), gain max(0, grade - 2) and the
relevance threshold grade 4, raglabel's ndcg@k / recall@k / precision@k / hit@k / mrr must
equal trec_eval's ndcg_cut.k / recall.k / P.k / success.k / recip_rank at relevance level 2,
per query. Ties on score are broken by passage id descending, compared as bytes, in both.

Where they legitimately differ (checked, not compared):
- a query with no label >= 2: trec_eval reports recall/success/recip_rank 0, raglabel NA;
- a query in the qrels but missing from the run: trec_eval leaves it out, raglabel scores 0.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import polars as pl
import pytest
import pytrec_eval

import raglabel
from raglabel.formats.maps import GradeMap
from raglabel.formats.trec import blocks
from raglabel.formats.trec.align import Alignment
from raglabel.formats.trec.arrays import ArrayAlignment
from raglabel.formats.trec.frames import read_qrels, read_run
from raglabel.formats.trec.rows import read_qrels_exactly, read_run_exactly
from raglabel.formats.trec.table import RunTable
from raglabel.metrics import MetricConfig, evaluate_runs, parse_metric_list
from raglabel.metrics.run import RankedRun

if TYPE_CHECKING:
    from cli_helpers import Cli

CUTOFFS = (1, 3, 5, 10, 20)
SEED = 20261122
REPO = Path(__file__).resolve().parents[2]

# Passage ids chosen so that byte order matters: case, shared prefixes, digits that sort
# differently as text and as numbers, non-ASCII.
VOCABULARY = (
    [f"d{j}" for j in range(40)]
    + [f"D{j}" for j in range(10)]
    + ["a", "ab", "ab0", "abc", "b", "B", "Z", "z", "doc-é", "doc-e", "doc-ß", "Ω-7", "_x", "9"]
)

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]


def make_collection(seed: int = SEED) -> tuple[Qrels, Run]:
    """~50 judged queries, runs full of ties, unjudged and unretrieved passages."""
    rng = np.random.default_rng(seed)
    vocab = np.array(VOCABULARY, dtype=object)
    qrels: Qrels = {}
    run: Run = {}
    for i in range(52):
        qid = f"q{i}"
        judged = rng.choice(vocab, size=int(rng.integers(3, 30)), replace=False)
        labels = rng.choice([0, 1, 2, 3], size=judged.size, p=[0.45, 0.25, 0.2, 0.1])
        if i < 48 and labels.max() < 2:
            labels[int(rng.integers(judged.size))] = int(rng.integers(2, 4))
        if i == 48:  # no label >= 2, some 1s: recall etc. NA in raglabel, nDCG defined
            labels = np.minimum(labels, 1)
            labels[0] = 1
        if i == 49:  # only non-relevant judgments: nDCG 0
            labels[:] = 0
        qrels[qid] = {str(d): int(g) for d, g in zip(judged, labels, strict=True)}
        if i in (50, 51):
            continue  # judged, but the run never retrieved anything for these
        # most judged passages plus random others (many of them unjudged)
        kept = judged[rng.random(judged.size) < 0.7]
        others = rng.choice(vocab, size=int(rng.integers(1, 30)), replace=False)
        retrieved = list(dict.fromkeys([*kept, *others]))
        rng.shuffle(retrieved)
        # scores lean towards the label; one decimal gives many ties; some are negative
        label = np.array([qrels[qid].get(str(d), 0) for d in retrieved])
        scores = np.round(0.15 * label + rng.random(label.size) * 0.7 - 0.2, 1)
        run[qid] = {str(d): float(s) for d, s in zip(retrieved, scores, strict=True)}
    # retrieved for a query nobody judged: ignored by both
    run["q_unjudged"] = {"d1": 0.5, "d2": 0.5}
    return qrels, run


def write_qrels(path: Path, qrels: Qrels) -> None:
    lines = [f"{q} 0 {d} {g}" for q, docs in qrels.items() for d, g in docs.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _score_text(score: float, style: int) -> str:
    if style == 1 and score != 0:
        return f"{score:.1E}"  # exponent notation, e.g. 3.0E-01
    return repr(score)


def write_run(path: Path, run: Run, layout: str, seed: int = SEED) -> None:
    """``sorted``: grouped, score-descending, ties in random order (the usual file);
    ``shuffled``: lines in random order; ``tabs``: shuffled and tab-separated with a
    comment and blank lines (the exact, non-canonical reader). The rank column is junk.
    """
    rng = np.random.default_rng(seed + 1)
    rows = []
    for q, docs in run.items():
        items = list(docs.items())
        rng.shuffle(items)  # random order inside ties
        if layout == "sorted":
            items.sort(key=lambda item: -item[1])  # stable: ties keep the random order
        rows.extend((q, d, s) for d, s in items)
    if layout != "sorted":
        rng.shuffle(rows)
    sep = "\t" if layout == "tabs" else " "
    lines = [
        sep.join([q, "Q0", d, str(int(rng.integers(1, 1000))), _score_text(s, n % 2), "tag"])
        for n, (q, d, s) in enumerate(rows)
    ]
    if layout == "tabs":
        lines = ["# a comment line", "", *lines[:10], "   ", *lines[10:]]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def trec_eval(qrels: Qrels, run: Run, level: int = 2) -> dict[str, dict[str, float]]:
    cut = ",".join(str(k) for k in CUTOFFS)
    measures = {f"ndcg_cut.{cut}", f"recall.{cut}", f"P.{cut}", f"success.{cut}", "recip_rank"}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=level)
    result: dict[str, dict[str, float]] = evaluator.evaluate(run)
    return result


def raglabel_eval(
    qrels_path: Path,
    run_path: Path,
    config: MetricConfig | None = None,
    grade_map: GradeMap | None = None,
) -> dict[str, dict[str, float]]:
    """Per query: {metric name: value (NaN = NA)} through the file-level path."""
    align = Alignment.from_qrels(read_qrels(qrels_path, grade_map))
    run = align.run("x", read_run(run_path))
    keys = parse_metric_list("ndcg@k,recall,precision,hit,mrr", ks=list(CUTOFFS))
    values = evaluate_runs(align.labels, [run], keys, config=config or MetricConfig())["x"]
    return {
        qid: {key.name: float(values[key][i]) for key in keys}
        for i, qid in enumerate(align.labels.query_ids)
    }


PAIRS = [("ndcg@{k}", "ndcg_cut_{k}"), ("precision@{k}", "P_{k}")]
# defined only for queries with a label >= 2 in raglabel
RELEVANT_PAIRS = [("recall@{k}", "recall_{k}"), ("hit@{k}", "success_{k}")]


def no_relevant(qrels: Qrels, qid: str, level: int = 2) -> bool:
    return max(qrels[qid].values()) < level


def compare(
    ours: dict[str, dict[str, float]],
    theirs: dict[str, dict[str, float]],
    qrels: Qrels,
    level: int = 2,
) -> int:
    """Every (query, metric) both define, compared to 1e-9; returns the number compared."""
    compared = 0
    mismatches = []
    for qid, measures in theirs.items():
        mine = ours[qid]
        pairs = [(a.format(k=k), b.format(k=k)) for a, b in PAIRS for k in CUTOFFS]
        if no_relevant(qrels, qid, level):
            assert math.isnan(mine["mrr"]), f"{qid}: no relevant passage, MRR should be NA"
        else:
            pairs += [(a.format(k=k), b.format(k=k)) for a, b in RELEVANT_PAIRS for k in CUTOFFS]
            pairs.append(("mrr", "recip_rank"))
        for name, measure in pairs:
            compared += 1
            if not math.isclose(mine[name], measures[measure], rel_tol=0, abs_tol=1e-9):
                mismatches.append(f"{qid} {name}: raglabel {mine[name]}, trec {measures[measure]}")
    assert not mismatches, "\n".join(mismatches[:20])
    return compared


@pytest.fixture(scope="module")
def collection() -> tuple[Qrels, Run]:
    return make_collection()


@pytest.fixture(scope="module")
def reference(collection: tuple[Qrels, Run]) -> dict[str, dict[str, float]]:
    return trec_eval(*collection)


def test_collection_has_the_intended_shape(collection: tuple[Qrels, Run]) -> None:
    qrels, run = collection
    assert len(qrels) == 52
    ties = sum(len(docs) - len(set(docs.values())) for docs in run.values())
    assert ties > 300, "scores should be heavily tied"
    unjudged = sum(d not in qrels.get(q, {}) for q, docs in run.items() for d in docs)
    unretrieved = sum(d not in run.get(q, {}) for q, docs in qrels.items() for d in docs)
    assert unjudged > 100
    assert unretrieved > 100
    assert sum(no_relevant(qrels, q) for q in qrels) == 2


@pytest.mark.parametrize("layout", ["sorted", "shuffled", "tabs"])
def test_per_query_equals_trec_eval(
    tmp_path: Path,
    collection: tuple[Qrels, Run],
    reference: dict[str, dict[str, float]],
    layout: str,
) -> None:
    qrels, run = collection
    write_qrels(tmp_path / "qrels.txt", qrels)
    write_run(tmp_path / "run.txt", run, layout)
    ours = raglabel_eval(tmp_path / "qrels.txt", tmp_path / "run.txt")
    assert set(reference) == {q for q in qrels if q in run}
    compared = compare(ours, reference, qrels)
    assert compared > 50 * len(CUTOFFS) * 2


def test_queries_trec_eval_scores_differently(
    tmp_path: Path, collection: tuple[Qrels, Run], reference: dict[str, dict[str, float]]
) -> None:
    qrels, run = collection
    write_qrels(tmp_path / "qrels.txt", qrels)
    write_run(tmp_path / "run.txt", run, "sorted")
    ours = raglabel_eval(tmp_path / "qrels.txt", tmp_path / "run.txt")
    # Judged queries without a label >= 2: binary metrics NA in raglabel (0 in trec_eval),
    # nDCG still defined and equal to trec_eval's.
    for qid in ("q48", "q49"):
        assert no_relevant(qrels, qid)
        assert reference[qid]["recip_rank"] == 0.0
        for k in CUTOFFS:
            assert math.isnan(ours[qid][f"recall@{k}"])
            assert math.isnan(ours[qid][f"hit@{k}"])
            assert reference[qid][f"recall_{k}"] == 0.0
        assert math.isnan(ours[qid]["mrr"])
    # q48 retrieves a label-1 passage in its top 20 (gain 1), q49 has only zero gains.
    assert ours["q49"]["ndcg@20"] == 0.0
    assert 0.0 < ours["q48"]["ndcg@20"] <= 1.0
    # Judged queries the run never retrieved for: trec_eval skips them, raglabel scores 0.
    for qid in ("q50", "q51"):
        assert qid not in reference
        assert not no_relevant(qrels, qid)
        for k in CUTOFFS:
            for base in ("ndcg", "recall", "precision", "hit"):
                assert ours[qid][f"{base}@{k}"] == 0.0, f"{qid} {base}@{k}"
        assert ours[qid]["mrr"] == 0.0
    # The query nobody judged is not part of the evaluation at all.
    assert "q_unjudged" not in ours


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_other_collections(tmp_path: Path, seed: int) -> None:
    qrels, run = make_collection(seed)
    write_qrels(tmp_path / "qrels.txt", qrels)
    write_run(tmp_path / "run.txt", run, "shuffled", seed)
    ours = raglabel_eval(tmp_path / "qrels.txt", tmp_path / "run.txt")
    compare(ours, trec_eval(qrels, run), qrels)


def test_tie_order_is_passage_id_descending_as_bytes(tmp_path: Path) -> None:
    # Five tied passages with grades 1..5 (labels 0..4 through a custom map) reveal the
    # order raglabel ranks them in. Bytes: "é" = C3 A9 > "b" > "ab" > "a" > "B".
    ids = {"a": 0, "ab": 1, "B": 2, "b": 3, "é": 4}
    (tmp_path / "qrels.txt").write_text(
        "".join(f"q 0 {d} {label}\n" for d, label in ids.items()), encoding="utf-8"
    )
    (tmp_path / "run.txt").write_text(
        "".join(f"q Q0 {d} {n} 1.5 t\n" for n, d in enumerate(ids)), encoding="utf-8"
    )
    grade_map = GradeMap(mapping={0: 1, 1: 2, 2: 3, 3: 4, 4: 5}, negative=None)
    align = Alignment.from_qrels(read_qrels(tmp_path / "qrels.txt", grade_map))
    ranked = align.run("x", read_run(tmp_path / "run.txt"))
    order_by_grade = {1: "a", 2: "ab", 3: "B", 4: "b", 5: "é"}
    assert [order_by_grade[int(g)] for g in ranked.grades] == ["é", "b", "ab", "a", "B"]
    # trec_eval agrees: the relevant passage's reciprocal rank gives its position.
    for position, doc in enumerate(["é", "b", "ab", "a", "B"], start=1):
        qrels = {"q": {d: (2 if d == doc else 0) for d in ids}}
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}, relevance_level=2)
        got = evaluator.evaluate({"q": dict.fromkeys(ids, 1.5)})
        assert got["q"]["recip_rank"] == pytest.approx(1 / position)


@pytest.mark.parametrize(
    ("threshold", "level"),
    [(3, 1), (4, 2), (5, 3)],
)
def test_relevance_threshold_equals_trec_relevance_level(
    tmp_path: Path, collection: tuple[Qrels, Run], threshold: int, level: int
) -> None:
    # grade = label + 2, so "grade >= threshold" is "label >= threshold - 2"
    qrels, run = collection
    write_qrels(tmp_path / "qrels.txt", qrels)
    write_run(tmp_path / "run.txt", run, "shuffled")
    config = MetricConfig(relevance_threshold=threshold)
    ours = raglabel_eval(tmp_path / "qrels.txt", tmp_path / "run.txt", config)
    compare(ours, trec_eval(qrels, run, level), qrels, level)


def test_binary_qrels_with_grade_map(tmp_path: Path, collection: tuple[Qrels, Run]) -> None:
    # Binary labels through --grade-map 0:2,1:5: relevant = grade 5 = label 1 (trec -l 1);
    # gains 0 and 3 scale every DCG by 3, so nDCG equals trec_eval's on the 0/1 labels.
    qrels, run = collection
    binary = {q: {d: int(label >= 2) for d, label in docs.items()} for q, docs in qrels.items()}
    write_qrels(tmp_path / "qrels.txt", binary)
    write_run(tmp_path / "run.txt", run, "sorted")
    grade_map = GradeMap(mapping={0: 2, 1: 5}, negative=None)
    ours = raglabel_eval(tmp_path / "qrels.txt", tmp_path / "run.txt", grade_map=grade_map)
    compare(ours, trec_eval(binary, run, 1), binary, 1)


REPEATED_RUNS = {
    # shuffled: the fully sorting path
    "unsorted": "q Q0 rel 1 0.1 t\nq Q0 top 1 0.9 t\nq Q0 rel 2 0.2 t\nq Q0 other 3 0.15 t\n",
    # already in score order: the path that only re-orders ties
    "sorted": "q Q0 top 1 0.9 t\nq Q0 rel 2 0.2 t\nq Q0 other 3 0.15 t\nq Q0 rel 4 0.1 t\n",
}


@pytest.mark.parametrize("layout", sorted(REPEATED_RUNS))
def test_repeated_passage_keeps_its_best_rank(tmp_path: Path, layout: str) -> None:
    # "rel" appears twice; its best-ranked occurrence (score 0.2, rank 2) counts.
    (tmp_path / "qrels.txt").write_text("q 0 rel 3\nq 0 other 0\n", encoding="utf-8")
    (tmp_path / "run.txt").write_text(REPEATED_RUNS[layout], encoding="utf-8")
    ours = raglabel_eval(tmp_path / "qrels.txt", tmp_path / "run.txt")
    theirs = trec_eval(
        {"q": {"rel": 3, "other": 0}}, {"q": {"top": 0.9, "rel": 0.2, "other": 0.15}}
    )
    assert ours["q"]["mrr"] == pytest.approx(0.5)
    compare(ours, theirs, {"q": {"rel": 3, "other": 0}})
    # P@5 divides by 5 over 3 distinct passages (the repeat is gone): 1/5
    assert ours["q"]["precision@5"] == pytest.approx(0.2)


def test_cli_json_per_query_equals_trec_eval(
    tmp_path: Path, collection: tuple[Qrels, Run], reference: dict[str, dict[str, float]]
) -> None:
    qrels, run = collection
    q, r = tmp_path / "qrels.txt", tmp_path / "run.txt"
    write_qrels(q, qrels)
    write_run(r, run, "shuffled")
    command = [sys.executable, "-m", "raglabel", "eval", "--qrels", str(q), "--run", f"x={r}"]
    command += ["-k", "10", "--metrics", "ndcg@10,recall@10,mrr"]
    command += ["--format", "json", "--per-query"]
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    per_query = report["runs"]["x"]["per_query"]
    assert set(per_query) == set(qrels)
    assert report["labels"]["queries"] == len(qrels)
    assert report["labels"]["graded"] == sum(len(d) for d in qrels.values())
    for qid, values in per_query.items():
        if qid not in reference:  # judged but never retrieved: 0, not NA
            assert values == {"ndcg@10": 0.0, "recall@10": 0.0, "mrr": 0.0}, qid
            continue
        theirs = reference[qid]
        assert values["ndcg@10"] == pytest.approx(theirs["ndcg_cut_10"], abs=1e-9), qid
        if no_relevant(qrels, qid):
            assert values["recall@10"] is None, qid
            assert values["mrr"] is None, qid
        else:
            assert values["recall@10"] == pytest.approx(theirs["recall_10"], abs=1e-9), qid
            assert values["mrr"] == pytest.approx(theirs["recip_rank"], abs=1e-9), qid
    # The run-level mean leaves NA queries out and counts the rest.
    valid = report["runs"]["x"]["valid"]
    assert valid["recall@10"] == len(qrels) - 2
    assert valid["ndcg@10"] == len(qrels)
    recalls = [v["recall@10"] for v in per_query.values() if v["recall@10"] is not None]
    assert report["runs"]["x"]["mean"]["recall@10"] == pytest.approx(
        sum(recalls) / len(recalls), abs=1e-12
    )
    assert "q_unjudged" in done.stderr  # the skipped query is named in a warning


# --- trec_eval's means, AP, R-precision, bpref and condensed lists (issue 13) ---

TREC_MEASURES = {"map", "map_cut.5,10", "Rprec", "bpref", "P.5,10", "recall.10", "ndcg_cut.10"}
TREC_MEASURES |= {"recip_rank", "success.10"}
# raglabel name -> trec_eval name, as the CLI is asked for them (trec_eval's own names).
ASKED = "map,map_cut_5,map_cut.10,Rprec,bpref,P_5,P.10,recall_10,ndcg_cut_10,recip_rank,success_10"
REPORTED = {
    "ap": "map",
    "ap@5": "map_cut_5",
    "ap@10": "map_cut_10",
    "rprec": "Rprec",
    "bpref": "bpref",
    "precision@5": "P_5",
    "precision@10": "P_10",
    "recall@10": "recall_10",
    "ndcg@10": "ndcg_cut_10",
    "mrr": "recip_rank",
    "hit@10": "success_10",
}


def cli_report(
    tmp_path: Path, qrels: Qrels, run: Run, *extra: str, layout: str = "shuffled"
) -> dict[str, object]:
    q, r = tmp_path / "qrels.txt", tmp_path / "run.txt"
    write_qrels(q, qrels)
    write_run(r, run, layout)
    command = [sys.executable, "-m", "raglabel", "eval", "--qrels", str(q), "--run", f"x={r}"]
    command += ["--metrics", ASKED, "--format", "json", "--per-query", *extra]
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report: dict[str, object] = json.loads(done.stdout)
    return report


def pytrec_means(
    qrels: Qrels, run: Run, level: int, judged_only: bool, over: list[str]
) -> dict[str, float]:
    """trec_eval's mean of each measure over the queries ``over``; a query pytrec_eval
    did not evaluate (in the qrels, not in the run) counts 0, as ``trec_eval -c`` does."""
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, TREC_MEASURES, relevance_level=level, judged_docs_only_flag=judged_only
    )
    per_query = evaluator.evaluate(run)
    return {
        measure: sum(per_query.get(q, {}).get(measure, 0.0) for q in over) / len(over)
        for measure in REPORTED.values()
    }


def complete_run(qrels: Qrels, run: Run) -> Run:
    """The run with something retrieved for every judged query."""
    full = dict(run)
    for qid in qrels:
        full.setdefault(qid, {"d0": 0.3, "zz-unjudged": 0.2})
    return full


def binary(qrels: Qrels) -> Qrels:
    return {q: {d: int(label >= 2) for d, label in docs.items()} for q, docs in qrels.items()}


@pytest.mark.parametrize("judged_only", [False, True])
@pytest.mark.parametrize("scale", ["graded", "binary"])
def test_means_with_na_zero_equal_pytrec_eval(
    tmp_path: Path, collection: tuple[Qrels, Run], judged_only: bool, scale: str
) -> None:
    qrels, run = collection
    run = complete_run(qrels, run)
    extra = ["--na", "zero"] + (["--judged-only"] if judged_only else [])
    level = 2
    if scale == "binary":
        qrels, level = binary(qrels), 1
        extra += ["--grade-map", "0:2,1:5"]
    report = cli_report(tmp_path, qrels, run, *extra)
    x = report["runs"]["x"]  # type: ignore[index]
    # pytrec_eval evaluates the queries in both qrels and run: here every judged query.
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, TREC_MEASURES, relevance_level=level, judged_docs_only_flag=judged_only
    )
    per_query = evaluator.evaluate(run)
    assert set(per_query) == set(qrels)
    worst = 0.0
    for ours, theirs in REPORTED.items():
        mean = sum(v[theirs] for v in per_query.values()) / len(per_query)
        assert x["mean"][ours] == pytest.approx(mean, abs=1e-12), ours
        assert x["valid"][ours] == len(qrels)
        worst = max(worst, abs(x["mean"][ours] - mean))
        for qid, values in per_query.items():
            got = x["per_query"][qid][ours]
            assert (0.0 if got is None else got) == pytest.approx(values[theirs], abs=1e-12)
    assert worst < 1e-12
    assert report["config"]["na"] == "zero"  # type: ignore[index]
    assert report["config"]["judged_only"] is judged_only  # type: ignore[index]


def test_na_zero_is_trec_eval_dash_c_when_the_run_misses_queries(
    tmp_path: Path, collection: tuple[Qrels, Run]
) -> None:
    # The collection's run misses q50 and q51: raglabel scores them 0, as trec_eval -c.
    qrels, run = collection
    report = cli_report(tmp_path, qrels, run, "--na", "zero")
    x = report["runs"]["x"]  # type: ignore[index]
    expected = pytrec_means(qrels, run, 2, False, over=list(qrels))
    for ours, theirs in REPORTED.items():
        assert x["mean"][ours] == pytest.approx(expected[theirs], abs=1e-12), ours
    # plain trec_eval (and pytrec_eval) average over the queries in both files instead
    both = [q for q in qrels if q in run]
    plain = pytrec_means(qrels, run, 2, False, over=both)
    assert x["mean"]["ap"] == pytest.approx(plain["map"] * len(both) / len(qrels), abs=1e-12)


def test_na_skip_leaves_undefined_queries_out(
    tmp_path: Path, collection: tuple[Qrels, Run]
) -> None:
    qrels, run = collection
    run = complete_run(qrels, run)
    skip = cli_report(tmp_path, qrels, run)["runs"]["x"]  # type: ignore[index]
    zero = cli_report(tmp_path, qrels, run, "--na", "zero")["runs"]["x"]  # type: ignore[index]
    # q48 and q49 have no label >= 2: MRR, AP, R-precision, bpref, recall NA under skip.
    for metric in ("mrr", "ap", "rprec", "bpref", "recall@10"):
        assert skip["valid"][metric] == len(qrels) - 2
        assert zero["valid"][metric] == len(qrels)
        assert zero["mean"][metric] == pytest.approx(
            skip["mean"][metric] * (len(qrels) - 2) / len(qrels), abs=1e-12
        )
        assert skip["per_query"]["q48"][metric] is None  # per query, NA stays NA
        assert zero["per_query"]["q48"][metric] is None


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("judged_only", [False, True])
def test_ap_rprec_bpref_per_query(tmp_path: Path, seed: int, judged_only: bool) -> None:
    qrels, run = make_collection(seed)
    write_qrels(tmp_path / "qrels.txt", qrels)
    write_run(tmp_path / "run.txt", run, "shuffled", seed)
    align = Alignment.from_qrels(read_qrels(tmp_path / "qrels.txt", None))
    ranked = align.run("x", read_run(tmp_path / "run.txt"))
    keys = parse_metric_list("map,AP@5,map_cut.10,Rprec,bpref,P@5,nDCG@10,RR", ks=[5])
    values = evaluate_runs(align.labels, [ranked], keys, judged_only=judged_only)["x"]
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, TREC_MEASURES, relevance_level=2, judged_docs_only_flag=judged_only
    )
    theirs = evaluator.evaluate(run)
    names = {"ap@5": "map_cut_5", "ap@10": "map_cut_10", "mrr": "recip_rank"}
    names |= {"precision@5": "P_5", "ndcg@10": "ndcg_cut_10"}
    compared = 0
    for i, qid in enumerate(align.labels.query_ids):
        if qid not in theirs:
            continue
        for key in keys:
            measure = names.get(key.name, REPORTED.get(key.name, key.name))
            ours = float(values[key][i])
            if no_relevant(qrels, qid) and key.base in {"ap", "rprec", "bpref", "mrr"}:
                assert math.isnan(ours), (qid, key.name)
                assert theirs[qid][measure] == 0.0
                continue
            assert ours == pytest.approx(theirs[qid][measure], abs=1e-12), (qid, key.name)
            compared += 1
    assert compared > 40 * len(keys)


# --- scores alike beyond 32-bit precision: trec_eval ranks by a C float ---

# trec_eval reads a run line's score into a C ``float`` and ranks by it, so in each
# query below the first two passages tie there (and go by passage id descending), while
# as float64 scores the other one of them comes first; the relevant passage (label 3) is
# the one trec_eval ranks first. 1e39 and 1e40 (and their negatives) both overflow to
# infinity. The last query's scores differ as 32-bit floats too: no tie there.
FLOAT32_RUN: dict[str, list[tuple[str, str, int]]] = {  # (passage, score text, label)
    "f1": [("a", "1.00000001", 0), ("b", "1.0", 3), ("c", "0.5", 1)],
    "f2": [("y", "0.12345679", 0), ("z", "0.123456789", 3), ("w", "0.1234567", 2)],
    "f3": [("m", "123456790.0", 1), ("n", "123456789.0", 3), ("o", "123456700.0", 0)],
    "f4": [
        *[("o", "1e40", 0), ("p", "1E39", 3), ("c", "5.0", 0)],
        *[("e", "-1e39", 2), ("f", "-1e40", 0), ("g", "-7.5", 0)],
    ],
    "f5": [("a", "0.3000001", 3), ("b", "0.3", 0), ("c", "0.29999999", 1), ("d", "0.3", 2)],
}
FLOAT32_COPIES = 4  # each query four times (ids f1-0 ... f5-3): blocks of several queries


def float32_collection() -> tuple[Qrels, Run, dict[str, list[tuple[str, str]]]]:
    """qrels and run for pytrec_eval, and each query's (passage, score text) lines."""
    qrels: Qrels = {}
    run: Run = {}
    lines: dict[str, list[tuple[str, str]]] = {}
    for copy in range(FLOAT32_COPIES):
        for query, entries in FLOAT32_RUN.items():
            qid = f"{query}-{copy}"
            qrels[qid] = {d: label for d, _, label in entries}
            run[qid] = {d: float(text) for d, text, _ in entries}
            lines[qid] = [(d, text) for d, text, _ in entries]
    return qrels, run, lines


def write_float32_run(path: Path, lines: dict[str, list[tuple[str, str]]], layout: str) -> None:
    """``float64``: grouped, each query by float64 score descending (as a writer that
    sorts doubles writes it); ``trec``: grouped, in trec_eval's own order; ``shuffled``:
    lines in random order."""
    rows = []
    for qid, entries in lines.items():
        ordered = entries
        if layout == "float64":
            ordered = sorted(entries, key=lambda e: -float(e[1]))
        elif layout == "trec":
            with np.errstate(over="ignore"):  # 1e39 is infinite as a C float
                rank = np.array([float(t) for _, t in entries]).astype(np.float32).tolist()
            order = sorted(range(len(entries)), key=lambda i: (rank[i], entries[i][0].encode()))
            ordered = [entries[i] for i in reversed(order)]
        rows += [(qid, d, text) for d, text in ordered]
    if layout == "shuffled":
        np.random.default_rng(SEED).shuffle(rows)
    text = "".join(f"{q} Q0 {d} {n + 1} {s} t\n" for n, (q, d, s) in enumerate(rows))
    path.write_text(text, encoding="utf-8")


FLOAT32_METRICS = ",".join(
    [f"{m}@{k}" for m in ("ndcg", "recall", "precision", "hit") for k in CUTOFFS] + ["mrr"]
)


def per_query_values(per_query: dict[str, dict[str, float | None]]) -> dict[str, dict[str, float]]:
    """A report's per-query values with NA as NaN, as :func:`compare` takes them."""
    return {
        q: {m: math.nan if v is None else float(v) for m, v in values.items()}
        for q, values in per_query.items()
    }


@pytest.fixture(scope="module")
def float32_reference() -> dict[str, dict[str, float]]:
    qrels, run, _ = float32_collection()
    reference = trec_eval(qrels, run)
    # The collection does what it is for: trec_eval ranks the relevant tied passage first.
    assert {q: v["recip_rank"] for q, v in reference.items()} == dict.fromkeys(qrels, 1.0)
    return reference


def float32_files(tmp_path: Path, layout: str) -> tuple[Path, Path]:
    qrels, _, lines = float32_collection()
    q, r = tmp_path / "qrels.txt", tmp_path / "run.txt"
    write_qrels(q, qrels)
    write_float32_run(r, lines, layout)
    return q, r


LAYOUTS = ["float64", "trec", "shuffled"]


@pytest.mark.parametrize("reader", ["python", "polars"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_scores_tied_as_32_bit_floats_through_each_reader(
    cli: Cli,
    tmp_path: Path,
    float32_reference: dict[str, dict[str, float]],
    reader: str,
    layout: str,
) -> None:
    q, r = float32_files(tmp_path, layout)
    args = ["eval", "--qrels", q, "--run", f"x={r}", "--reader", reader]
    code, out, err = cli(*args, "--metrics", FLOAT32_METRICS, "--format", "json", "--per-query")
    assert code == 0, err
    per_query = json.loads(out)["runs"]["x"]["per_query"]
    qrels, _, _ = float32_collection()
    compare(per_query_values(per_query), float32_reference, qrels)


@pytest.mark.parametrize("layout", ["float64", "trec"])
def test_scores_tied_as_32_bit_floats_in_blocks(
    cli: Cli,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    float32_reference: dict[str, dict[str, float]],
    layout: str,
) -> None:
    q, r = float32_files(tmp_path, layout)
    # Blocks of a few queries (as tests/unit/test_blocks.py forces them): the run is "large".
    monkeypatch.setattr(blocks, "BLOCK_BYTES", 256)
    assert r.stat().st_size > 2 * blocks.BLOCK_BYTES
    streamed: list[str] = []
    in_blocks = Alignment.run_in_blocks

    def spy(self: Alignment, name: str, frames: Iterator[pl.DataFrame | None]) -> RankedRun:
        ranked = in_blocks(self, name, frames)
        streamed.append(name)  # only once the blocks were all taken
        return ranked

    monkeypatch.setattr(Alignment, "run_in_blocks", spy)
    args = ["eval", "--qrels", q, "--run", f"x={r}", "--reader", "polars"]
    code, out, err = cli(*args, "--metrics", FLOAT32_METRICS, "--format", "json", "--per-query")
    assert code == 0, err
    assert streamed == ["x"]
    per_query = json.loads(out)["runs"]["x"]["per_query"]
    qrels, _, _ = float32_collection()
    compare(per_query_values(per_query), float32_reference, qrels)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_scores_tied_as_32_bit_floats_through_the_exact_reader(
    tmp_path: Path, float32_reference: dict[str, dict[str, float]], layout: str
) -> None:
    q, r = float32_files(tmp_path, layout)
    align = ArrayAlignment.from_rows(read_qrels_exactly(q, GradeMap()))
    run = align.run("x", RunTable.of_rows(read_run_exactly(r)))
    keys = parse_metric_list(FLOAT32_METRICS, ks=list(CUTOFFS))
    values = evaluate_runs(align.labels, [run], keys, config=MetricConfig())["x"]
    ours = {
        qid: {key.name: float(values[key][i]) for key in keys}
        for i, qid in enumerate(align.labels.query_ids)
    }
    qrels, _, _ = float32_collection()
    compare(ours, float32_reference, qrels)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_scores_tied_as_32_bit_floats_in_a_project(
    cli: Cli, tmp_path: Path, float32_reference: dict[str, dict[str, float]], layout: str
) -> None:
    q, r = float32_files(tmp_path, layout)
    db = tmp_path / "p.db"
    assert cli("init", db)[0] == 0
    code, _, err = cli("import", db, "--qrels", q, "--run", f"x={r}")
    assert code == 0, err
    code, out, err = cli(
        "eval", db, "--metrics", FLOAT32_METRICS, "--format", "json", "--per-query"
    )
    assert code == 0, err
    per_query = json.loads(out)["runs"]["x"]["per_query"]
    qrels, _, _ = float32_collection()
    compare(per_query_values(per_query), float32_reference, qrels)


def test_scores_tied_as_32_bit_floats_through_the_python_api(
    float32_reference: dict[str, dict[str, float]],
) -> None:
    qrels, run, _ = float32_collection()
    report = raglabel.evaluate(qrels, {"x": run}, metrics=FLOAT32_METRICS)
    compare(per_query_values(report.per_query["x"]), float32_reference, qrels)
