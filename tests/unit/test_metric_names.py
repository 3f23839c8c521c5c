"""The names people type mean what they mean in the tool they come from (issue 26, §3).

trec_eval's ``ndcg`` and ir_measures' ``nDCG`` are nDCG over the whole ranking, checked
against pytrec_eval (trec_eval's own code) on trec_eval's test files and on graded
qrels. ranx's names (``map@100``, ``hit_rate@10``, ``r-precision``, ``mrr@10``,
``precision@10``, ``recall@10``, ``f1@10``, ``ndcg_burges@10``) are checked against
ranx's definitions written out below by brute force, one query and one ranked list at a
time (ranx itself pulls numba and takes minutes to compile, so it is not a test
dependency; these formulas follow its source, ranx/metrics/*.py, v0.3.21).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
import pytrec_eval

import raglabel
from raglabel.metrics.names import MetricNameError, parse_metric_list

if TYPE_CHECKING:
    from cli_helpers import Cli

TREC_EVAL = Path(__file__).resolve().parents[1] / "data" / "trec_eval"
QRELS, RESULTS = TREC_EVAL / "qrels.test", TREC_EVAL / "results.test"

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]


def read_qrels(path: Path) -> Qrels:
    out: Qrels = {}
    for line in path.read_text().splitlines():
        q, _, d, label = line.split()[:4]
        out.setdefault(q, {})[d] = int(label)
    return out


def read_run(path: Path) -> Run:
    out: Run = {}
    for line in path.read_text().splitlines():
        q, _, d, _, score = line.split()[:5]
        out.setdefault(q, {})[d] = float(score)
    return out


def graded_collection(seed: int = 26) -> tuple[Qrels, Run]:
    """Labels 0-3 and runs with distinct scores (no tie to break), some queries without
    a relevant passage, some passages unjudged, some relevant ones never retrieved."""
    rng = np.random.default_rng(seed)
    docs = [f"d{j}" for j in range(60)]
    qrels: Qrels = {}
    run: Run = {}
    for i in range(30):
        qid = f"q{i}"
        judged = rng.choice(docs, size=int(rng.integers(3, 25)), replace=False)
        labels = rng.choice([0, 1, 2, 3], size=judged.size, p=[0.4, 0.3, 0.2, 0.1])
        if i in (0, 1):
            labels[:] = 0  # nothing relevant: the binary measures are NA
        qrels[qid] = {str(d): int(g) for d, g in zip(judged, labels, strict=True)}
        retrieved = rng.choice(docs, size=int(rng.integers(2, 45)), replace=False)
        scores = rng.permutation(retrieved.size) + 0.5
        run[qid] = {str(d): float(s) for d, s in zip(retrieved, scores, strict=True)}
    return qrels, run


def write_trec(qrels: Qrels, run: Run, folder: Path) -> tuple[Path, Path]:
    """``graded.qrels`` and ``graded.run`` in ``folder``."""
    qrels_file, run_file = folder / "graded.qrels", folder / "graded.run"
    qrels_file.write_text(
        "".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items())
    )
    run_file.write_text(
        "".join(f"{q} Q0 {d} 0 {s} t\n" for q, docs in run.items() for d, s in docs.items())
    )
    return qrels_file, run_file


# ------------------------------------------------------------ uncut nDCG (trec_eval)


def test_ndcg_alone_is_trec_evals_uncut_ndcg_on_its_test_files() -> None:
    qrels, run = read_qrels(QRELS), read_run(RESULTS)
    report = raglabel.evaluate(QRELS, RESULTS, metrics="ndcg,nDCG,ndcg_cut_5")
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg", "ndcg_cut.5"}).evaluate(run)
    ours = report.per_query["run"]
    assert set(ours) == set(theirs) and len(theirs) == 3
    for query, values in theirs.items():
        assert ours[query]["ndcg"] == pytest.approx(values["ndcg"], abs=1e-12)
        assert ours[query]["ndcg@5"] == pytest.approx(values["ndcg_cut_5"], abs=1e-12)
    mean = sum(values["ndcg"] for values in theirs.values()) / len(theirs)
    means = report.means["run"]
    assert means["ndcg"] == pytest.approx(mean, abs=1e-12)
    # ``ndcg`` and ``nDCG`` are one measure; ``ndcg@5`` stays the cut one.
    assert list(means) == ["ndcg", "ndcg@5"]
    assert means["ndcg"] != pytest.approx(means["ndcg@5"])


def test_uncut_measures_equal_pytrec_eval_on_graded_qrels() -> None:
    qrels, run = graded_collection()
    names = "ndcg,ndcg_exp,map,recip_rank,Rprec"
    # Relevance threshold grade 3 is label 1 under the default map: trec_eval's level 1.
    report = raglabel.evaluate(qrels, run, metrics=names, na="zero", relevance_threshold=3)
    measures = {"ndcg", "map", "recip_rank", "Rprec"}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=1).evaluate(run)
    ours = report.per_query["run"]
    for query, values in theirs.items():
        assert ours[query]["ndcg"] == pytest.approx(values["ndcg"], abs=1e-12), query
        for mine, their in (("ap", "map"), ("mrr", "recip_rank"), ("rprec", "Rprec")):
            got = ours[query][mine]
            assert (0.0 if got is None else got) == pytest.approx(values[their], abs=1e-12)


# -------------------------------------------------- ranx's definitions, brute force


def ranking(scores: dict[str, float]) -> list[str]:
    return [doc for doc, _ in sorted(scores.items(), key=lambda item: -item[1])]


def dcg(gains: list[float]) -> float:
    return sum(gain / math.log2(rank + 2) for rank, gain in enumerate(gains))


def ranx_values(labels: dict[str, int], scores: dict[str, float], k: int) -> dict[str, float]:
    """ranx's per-query values at ``k`` (rel_lvl 1), NA (None) where raglabel leaves a
    binary measure undefined: a query without a relevant passage."""
    ranked = ranking(scores)
    rel = [labels.get(doc, 0) for doc in ranked]
    relevant = sum(1 for label in labels.values() if label >= 1)
    ideal = sorted((label for label in labels.values() if label >= 1), reverse=True)

    def ndcg_of(exponential: bool, depth: int | None) -> float:
        """nDCG at ``depth`` (None: the whole run against all relevant passages)."""

        def g(label: int) -> float:
            return float(2**label - 1) if exponential else float(label)

        best = dcg([g(label) for label in ideal[:depth]])
        found = dcg([g(max(label, 0)) for label in rel[:depth]])
        return found / best if best > 0 else 0.0

    hits = [label >= 1 for label in rel]
    found = sum(hits[:k])
    out: dict[str, float] = {
        "ndcg": ndcg_of(False, None),
        "ndcg@k": ndcg_of(False, k),
        "ndcg_burges": ndcg_of(True, None),
        "ndcg_burges@k": ndcg_of(True, k),
        "precision@k": found / k,
    }
    if relevant:
        precision, recall = found / k, found / relevant
        first = next((rank for rank, hit in enumerate(hits[:k]) if hit), None)
        within_r = sum(hits[:relevant])
        cumulative = np.cumsum(hits[:k])
        at_hits = [cumulative[i] / (i + 1) for i in range(min(k, len(hits))) if hits[i]]
        out |= {
            "recall@k": recall,
            "f1@k": 0.0 if found == 0 else 2 * precision * recall / (precision + recall),
            "map@k": sum(at_hits) / relevant,
            "hit_rate@k": 1.0 if found else 0.0,
            "mrr@k": 0.0 if first is None else 1.0 / (first + 1),
            "r-precision": within_r / relevant,
        }
    return out


# ranx's name (with k for the cutoff) -> the name raglabel reports.
RANX = {
    "ndcg": "ndcg",
    "ndcg@k": "ndcg@{k}",
    "ndcg_burges": "ndcg_exp",
    "ndcg_burges@k": "ndcg_exp@{k}",
    "precision@k": "precision@{k}",
    "recall@k": "recall@{k}",
    "f1@k": "f1@{k}",
    "map@k": "ap@{k}",
    "hit_rate@k": "hit@{k}",
    "mrr@k": "mrr@{k}",
    "r-precision": "rprec",
}


@pytest.mark.parametrize("k", [1, 3, 10, 100])
def test_ranx_names_give_ranx_values(k: int) -> None:
    qrels, run = graded_collection()
    asked = ",".join(name.replace("@k", f"@{k}") for name in RANX)
    report = raglabel.evaluate(qrels, run, metrics=asked, relevance_threshold=3)
    ours = report.per_query["run"]
    checked = 0
    for query, labels in qrels.items():
        expected = ranx_values(labels, run[query], k)
        for theirs, mine in RANX.items():
            got = ours[query][mine.format(k=k)]
            if theirs not in expected:
                assert got is None, (query, theirs)  # NA: nothing relevant
                continue
            assert got == pytest.approx(expected[theirs], abs=1e-12), (query, theirs, k)
            checked += 1
    assert checked > 250


def test_exponential_gain_differs_from_linear_on_graded_labels() -> None:
    qrels, run = graded_collection()
    report = raglabel.evaluate(qrels, run, metrics="ndcg@10,ndcg_exp@10")
    values = report.per_query["run"]
    assert any(abs(v["ndcg@10"] - v["ndcg_exp@10"]) > 1e-3 for v in values.values())


def test_f1_and_ndcg_exp_see_condensed_lists_with_judged_only() -> None:
    qrels, run = graded_collection()
    judged = {q: {d: s for d, s in docs.items() if d in qrels[q]} for q, docs in run.items()}
    names = "f1@5,ndcg_exp@5,ndcg_exp"
    condensed = raglabel.evaluate(qrels, run, metrics=names, judged_only=True)
    assert condensed.per_query == raglabel.evaluate(qrels, judged, metrics=names).per_query


# ------------------------------------------------------------------------- names

NAMES = {
    "ndcg": ["ndcg"],
    "nDCG": ["ndcg"],
    "ndcg@k": ["ndcg@5", "ndcg@10"],
    "ndcg_burges": ["ndcg_exp"],
    "ndcg_burges@10": ["ndcg_exp@10"],
    "map@100": ["ap@100"],
    "MAP": ["ap"],
    "hit_rate@10": ["hit@10"],
    "hit_rate": ["hit@5", "hit@10"],
    "r-precision": ["rprec"],
    "mrr@10": ["mrr@10"],
    "precision@10": ["precision@10"],
    "recall@10": ["recall@10"],
    "f1@10": ["f1@10"],
    "f1": ["f1@5", "f1@10"],
    "P": ["precision@5", "precision@10"],
    "success": ["hit@5", "hit@10"],
    "ndcg_cut": ["ndcg@5", "ndcg@10"],
    "map_cut": ["ap@5", "ap@10"],
    "recip_rank": ["mrr"],
    "classic": [
        *(f"{m}@{k}" for m in ("hit", "recall", "recall_all", "precision") for k in (5, 10)),
        "mrr@5",
        "mrr@10",
        "mrr",
        "ndcg@5",
        "ndcg@10",
        "containment@5",
        "containment@10",
    ],
}


@pytest.mark.parametrize(("typed", "keys"), sorted(NAMES.items()))
def test_names_are_read_as_their_tool_means_them(typed: str, keys: list[str]) -> None:
    assert [key.name for key in parse_metric_list(typed, ks=[5, 10])] == keys


SUGGESTIONS = {
    "mapp@100": "map@100",
    "maap@10": "map@10",
    "average_precision@10": "ap@10",
    "hitrate@10": "hit@10",
    "hits@5": "hit@5",
    "F1_score@3": "f1@3",
    "ndgc@10": "ndcg@10",
    "ndcg_cutt_10": "ndcg_cut_10",
    "precison": "precision",
    "recal@20": "recall@20",
    "r_precision@5": "rprec",
    "mean_reciprocal_rank": "mrr",
    # A cutoff typed with no separator keeps the spelling its tool gives it.
    "ndcg_cut10": "ndcg_cut_10",
    "P10": "P_10",
    "recall100": "recall_100",
    "ndcg10": "ndcg@10",
    "map5": "map@5",
}


@pytest.mark.parametrize(("typed", "meant"), sorted(SUGGESTIONS.items()))
def test_unknown_names_suggest_by_meaning(typed: str, meant: str) -> None:
    with pytest.raises(MetricNameError, match=f"did you mean '{meant}'") as caught:
        parse_metric_list(typed, ks=[5])
    # the cutoff is never what a suggestion was matched on
    assert "R@100" not in str(caught.value).split("Known")[0]


def test_nothing_close_suggests_nothing() -> None:
    with pytest.raises(MetricNameError) as caught:
        parse_metric_list("zzzz@100", ks=[5])
    assert "did you mean" not in str(caught.value)


# ------------------------------------------------------------------------- notes


def eval_warnings(cli: Cli, *args: str | Path) -> tuple[list[str], dict[str, object]]:
    code, out, err = cli("eval", *args, "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    warnings: list[str] = report["warnings"]
    for warning in warnings:
        assert warning in err  # every note is printed too
    return warnings, report


def test_a_peer_name_with_another_meaning_says_what_was_computed(cli: Cli) -> None:
    files = ("--qrels", QRELS, "--run", RESULTS, "--grade-map", "0:2,1:5")
    names = "ndcg_burges@10,map@100,hit_rate@10,P"
    warnings, report = eval_warnings(cli, *files, "--metrics", names, "-k", "5,10")
    text = "\n".join(warnings)
    assert "ndcg_burges@10 is read as ranx's ndcg_burges" in text
    assert "computed as ndcg_exp@10" in text
    assert "map@100 is read as ranx's map@100, trec_eval's map_cut_100" in text
    assert "computed as ap@100" in text
    assert "hit_rate@10 is read as ranx's hit_rate@10" in text
    assert "P without a cutoff is computed at the cutoffs asked for (5, 10)" in text
    mean = report["runs"]["results"]["mean"]  # type: ignore[index]
    assert list(mean) == ["ndcg_exp@10", "ap@100", "hit@10", "precision@5", "precision@10"]
    # raglabel's own names carry no note
    warnings, _ = eval_warnings(cli, *files, "--metrics", "ndcg_exp@10,ap@100,hit@10")
    assert warnings == []


def test_ir_measures_judged_says_it_is_raglabels_own(cli: Cli, tmp_path: Path) -> None:
    qrels = tmp_path / "j.qrels"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\nq1 0 d9 1\n")
    run = tmp_path / "j.run"
    run.write_text("q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 1.0 r\n")
    files = ("--qrels", qrels, "--run", f"r={run}", "--grade-map", "0:2,1:5")
    warnings, report = eval_warnings(cli, *files, "--metrics", "Judged@10")
    # Two returned, both judged: 1.0 here, 2/10 in ir_measures; the note says which.
    assert report["runs"]["r"]["mean"] == {"judged@10": 1.0}  # type: ignore[index]
    assert any("Judged@10 is read as raglabel's judged@10" in w for w in warnings)
    assert any("ir_measures' Judged@10 divides by 10" in w for w in warnings)
    warnings, _ = eval_warnings(cli, *files, "--metrics", "judged@10")
    assert warnings == []  # raglabel's own spelling


def test_ndcg_alone_with_cutoffs_says_it_is_uncut(cli: Cli) -> None:
    files = ("--qrels", QRELS, "--run", RESULTS, "--grade-map", "0:2,1:5")
    warnings, _ = eval_warnings(cli, *files, "--metrics", "ndcg", "-k", "10")
    assert any("ndcg without @k is nDCG over the whole ranking" in w for w in warnings)
    assert any("ndcg@k (ndcg@10)" in w for w in warnings)
    warnings, _ = eval_warnings(cli, *files, "--metrics", "ndcg")
    assert warnings == []  # no cutoff asked for: nothing to mistake it for


def test_trec_names_say_which_labels_are_relevant(cli: Cli, tmp_path: Path) -> None:
    qrels, run = graded_collection()
    qrels_file, run_file = write_trec(qrels, run, tmp_path)
    files = ("--qrels", qrels_file, "--run", run_file)
    warnings, _ = eval_warnings(cli, *files, "--metrics", "map,P_5")
    relevance = [w for w in warnings if "relevant here means grade 4 or higher" in w]
    assert len(relevance) == 1
    assert "label 2, 3" in relevance[0] and "--relevance-threshold 3" in relevance[0]
    empty = sum(1 for labels in qrels.values() if max(labels.values()) < 2)
    assert any(f"{empty} of the 30 queries have no relevant passage" in w for w in warnings)
    # Read as trec_eval reads them, and averaged as it does: nothing left to say.
    warnings, report = eval_warnings(
        cli, *files, "--metrics", "map,P_5", "--relevance-threshold", "3", "--na", "zero"
    )
    assert warnings == []
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"map", "P.5"}).evaluate(run)
    mean = report["runs"]["graded"]["mean"]  # type: ignore[index]
    assert mean["ap"] == pytest.approx(np.mean([v["map"] for v in theirs.values()]), abs=1e-12)
    # raglabel's own names are read with raglabel's conventions, which docs/guide/eval.md states
    warnings, _ = eval_warnings(cli, *files, "--metrics", "ap,precision@5")
    assert not any("relevant here" in w for w in warnings)


def test_gains_unlike_the_labels_are_said(cli: Cli) -> None:
    files = ("--qrels", QRELS, "--run", RESULTS)
    # label 0 -> grade 3, whose default gain is 1: trec_eval gives label 0 no gain
    warnings, _ = eval_warnings(cli, *files, "--grade-map", "0:3,1:5", "--metrics", "ndcg")
    assert any("nDCG's gains here come from the grade map and the gain map" in w for w in warnings)
    # gains in proportion to the labels (binary 0 -> 0, 1 -> 3) give trec_eval's nDCG
    binary = ("--grade-map", "0:2,1:5", "--metrics", "ndcg,ndcg_exp")
    warnings, _ = eval_warnings(cli, *files, *binary)
    assert warnings == []


def test_graded_gains_unlike_ranx_exponential_ones_are_said(cli: Cli, tmp_path: Path) -> None:
    qrels, run = graded_collection()
    qrels_file, run_file = write_trec(qrels, run, tmp_path)
    files = ("--qrels", qrels_file, "--run", run_file, "--metrics")
    # The default maps: gain = label, 2^gain - 1 = 2^label - 1, as ranx.
    assert eval_warnings(cli, *files, "ndcg,ndcg_exp")[0] == []
    # Doubled gains keep linear nDCG, not the exponential one.
    doubled = ("--gain-map", "1:0,2:0,3:2,4:4,5:6")
    assert eval_warnings(cli, *files, "ndcg", *doubled)[0] == []
    warnings, _ = eval_warnings(cli, *files, "ndcg_exp", *doubled)
    assert any("label->gain: 0->0, 1->2, 2->4, 3->6" in w for w in warnings)
