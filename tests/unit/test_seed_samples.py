"""Seed 001's own samples mean what the seed says: a list is binary relevance, a map is
``id -> gain`` for nDCG (read with ``--grade-map 0:2,1:3,2:4,3:5``, refused without it),
and a sample's ``metadata.k`` names the columns its values are in."""

from __future__ import annotations

import csv
import io
import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_helpers import Cli

from raglabel.errors import InputError
from raglabel.formats.samples import GAINS_GRADE_MAP, read_samples
from raglabel.metrics.cutoffs import out_of_column, own_k_note, with_own_cutoffs
from raglabel.metrics.names import MetricKey
from raglabel.metrics.run import RankedRun

SEED = Path(__file__).parents[1] / "data" / "seed001"
SAMPLES = SEED / "samples.jsonl"
OWN_K = SEED / "own_k.jsonl"
CLASSIC = "hit@5,recall@5,mrr,ndcg@5"


def dcg(gains: list[float]) -> float:
    return sum(g / math.log2(rank + 2) for rank, g in enumerate(gains))


# The seed's figures, from its formula: hits at ranks 2 and 4 of [doc-7, doc-3, doc-1,
# doc-9, doc-2]; the ideal puts the same gains at ranks 1 and 2.
BINARY_NDCG = dcg([0, 1, 0, 1]) / dcg([1, 1])
GAINS_NDCG = dcg([0, 3, 0, 1]) / dcg([3, 1])


def eval_json(cli: Cli, *args: str | Path) -> dict[str, Any]:
    code, out, err = cli("eval", *args, "--format", "json")
    assert code == 0, err
    report: dict[str, Any] = json.loads(out)
    return report


def only_binary(tmp_path: Path) -> Path:
    path = tmp_path / "binary.jsonl"
    path.write_text(SAMPLES.read_text().splitlines()[0] + "\n")
    return path


def test_the_seed_figures() -> None:
    assert round(BINARY_NDCG, 4) == 0.6509
    assert round(GAINS_NDCG, 4) == 0.6399


def test_binary_example_gives_the_seed_figures(cli: Cli, tmp_path: Path) -> None:
    report = eval_json(cli, "--samples", only_binary(tmp_path), "--metrics", CLASSIC, "--per-query")
    values = report["runs"]["binary"]["per_query"]["q-1"]
    assert values["hit@5"] == 1.0 and values["recall@5"] == 1.0 and values["mrr"] == 0.5
    assert values["ndcg@5"] == pytest.approx(BINARY_NDCG, abs=1e-12)


def test_gain_map_is_used_as_gains_with_the_grade_map(cli: Cli) -> None:
    report = eval_json(
        cli, "--samples", SAMPLES, "--grade-map", GAINS_GRADE_MAP, "--metrics", CLASSIC,
        "--per-query",
    )  # fmt: skip
    per_query = report["runs"]["samples"]["per_query"]
    graded = per_query["q-2"]
    assert graded["ndcg@5"] == pytest.approx(GAINS_NDCG, abs=1e-12)
    # Relevant under a gain map: gain 2 or more (grade 4+), doc-3 here; never NA.
    assert graded["hit@5"] == 1.0 and graded["recall@5"] == 1.0 and graded["mrr"] == 0.5
    # The binary sample of the same file keeps its figures.
    assert per_query["q-1"]["ndcg@5"] == pytest.approx(BINARY_NDCG, abs=1e-12)
    assert report["config"]["grade_map"] == GAINS_GRADE_MAP
    assert report["warnings"] == []


def test_gain_map_without_the_option_is_refused(cli: Cli) -> None:
    code, out, err = cli("eval", "--samples", SAMPLES, "--metrics", CLASSIC)
    assert code == 2 and out == ""
    assert f"{SAMPLES}:2: no expected_output map grades a passage 4 or higher" in err
    assert f"--grade-map {GAINS_GRADE_MAP}" in err
    assert "--grade-map 1:1,2:2,3:3,4:4,5:5" in err and "--relevance-threshold 3" in err


def test_grades_said_explicitly_are_read_as_grades(cli: Cli) -> None:
    report = eval_json(
        cli, "--samples", SAMPLES, "--grade-map", "1:1,2:2,3:3,4:4,5:5", "--metrics", CLASSIC,
        "--per-query",
    )  # fmt: skip
    graded = report["runs"]["samples"]["per_query"]["q-2"]
    assert graded["ndcg@5"] == pytest.approx(dcg([0, 1]) / dcg([1]), abs=1e-12)  # grade 3: gain 1
    assert graded["recall@5"] is None
    (warning,) = report["warnings"]
    assert "q-2 (line 2)" in warning and "--relevance-threshold 3" in warning


def test_refusal_follows_the_relevance_threshold(cli: Cli) -> None:
    # Read as grades with grade 3 relevant, the map has a relevant passage: no refusal.
    report = eval_json(
        cli, "--samples", SAMPLES, "--relevance-threshold", "3", "--metrics", CLASSIC,
        "--per-query",
    )  # fmt: skip
    assert report["runs"]["samples"]["per_query"]["q-2"]["recall@5"] == 1.0


def test_a_map_without_a_relevant_passage_is_said(cli: Cli, tmp_path: Path) -> None:
    lines = SAMPLES.read_text().splitlines()
    weak = json.loads(lines[1])
    weak["id"], weak["expected_output"] = "q-3", {"doc-9": 1}
    path = tmp_path / "weak.jsonl"
    path.write_text("\n".join([*lines, json.dumps(weak)]) + "\n")
    # With gains, q-3's only passage has gain 1: below the relevance threshold.
    report = eval_json(
        cli, "--samples", path, "--grade-map", GAINS_GRADE_MAP, "--metrics", CLASSIC,
        "--per-query",
    )  # fmt: skip
    assert report["runs"]["weak"]["per_query"]["q-3"]["recall@5"] is None
    (warning,) = report["warnings"]
    assert "1 expected_output map(s) grade no passage 4 or higher: q-3 (line 3)" in warning
    assert "hit, recall" in warning and "--relevance-threshold 3" in warning
    # Read as grades, q-2 has no relevant passage either; q-3 (grade 1) neither, while
    # another map has one: a warning naming the gains reading, not a refusal.
    strong = json.loads(lines[1])
    strong["id"], strong["expected_output"] = "q-4", {"doc-3": 5}
    path.write_text("\n".join([*lines, json.dumps(weak), json.dumps(strong)]) + "\n")
    report = eval_json(cli, "--samples", path, "--metrics", CLASSIC)
    (warning,) = report["warnings"]
    assert "2 expected_output map(s) grade no passage 4 or higher: q-2 (line 2), q-3" in warning
    assert f"--grade-map {GAINS_GRADE_MAP}" in warning


def test_read_samples_refuses_gains_read_as_grades() -> None:
    with pytest.raises(InputError) as caught:
        read_samples(SAMPLES)
    assert caught.value.line == 2
    from raglabel.formats.maps import parse_grade_map

    samples = read_samples(SAMPLES, parse_grade_map(GAINS_GRADE_MAP))
    gold = dict(zip(samples.qrels.docids[2:], samples.qrels.grades[2:], strict=True))
    assert gold == {"doc-3": 5, "doc-9": 3}  # gain g is grade g + 2
    assert samples.warnings == []


def test_import_refuses_gains_read_as_grades(cli: Cli, tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    assert cli("init", db)[0] == 0
    code, _, err = cli("import", db, "--samples", f"seed={SAMPLES}")
    assert code == 2 and f"--grade-map {GAINS_GRADE_MAP}" in err
    assert "--relevance-threshold" not in err  # import takes no such option
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM query").fetchone() == (0,)
    code, _, err = cli("import", db, "--samples", f"seed={SAMPLES}", "--grade-map", GAINS_GRADE_MAP)
    assert code == 0, err
    report = eval_json(cli, db, "--metrics", CLASSIC, "--per-query")
    per_query = report["runs"]["seed"]["per_query"]
    assert per_query["q-2"]["ndcg@5"] == pytest.approx(GAINS_NDCG, abs=1e-12)
    assert per_query["q-1"]["ndcg@5"] == pytest.approx(BINARY_NDCG, abs=1e-12)


# ------------------------------------------------------------------ a sample's own k


def test_own_k_names_its_columns(cli: Cli) -> None:
    report = eval_json(cli, "--samples", OWN_K, "-k", "5", "--metrics", "recall,mrr", "--per-query")
    run = report["runs"]["own_k"]
    # q-1 sets k=2: its recall is in recall@2 and nowhere else; q-2 follows the caller's 5.
    assert run["per_query"] == {
        "q-1": {"recall@2": 0.5, "mrr": 0.5},
        "q-2": {"recall@5": 1.0, "mrr": 1 / 3},
    }
    assert report["config"]["metrics"] == ["recall@5", "recall@2", "mrr"]
    assert run["mean"] == {"recall@2": 0.5, "recall@5": 1.0, "mrr": pytest.approx(5 / 12)}
    assert run["valid"] == {"recall@2": 1, "recall@5": 1, "mrr": 2}
    assert report["config"]["query_k"] == {"q-1": 2}
    (note,) = report["warnings"]
    assert "1 query sets its own cutoff (metadata.k): 1 at k=2 (q-1)" in note


def test_own_k_in_csv_and_table(cli: Cli) -> None:
    code, out, err = cli(
        "eval", "--samples", OWN_K, "-k", "5,10", "--metrics", "recall", "--per-query",
        "--format", "csv",
    )  # fmt: skip
    assert code == 0, err
    rows = [r for r in csv.DictReader(io.StringIO(out)) if r["kind"] == "per_query"]
    assert {(r["query"], r["metric"], r["value"]) for r in rows} == {
        ("q-1", "recall@2", "0.5"),
        ("q-2", "recall@5", "1.0"),
        ("q-2", "recall@10", "1.0"),
    }
    code, out, err = cli(
        "eval", "--samples", OWN_K, "-k", "5,10", "--metrics", "recall", "--per-query"
    )
    assert code == 0, err
    q1 = next(line for line in out.splitlines() if line.strip().startswith("q-1"))
    assert q1.split() == ["q-1", "-", "-", "0.5000"]  # recall@5, recall@10, recall@2


def test_own_k_stays_out_of_na_zero(cli: Cli) -> None:
    report = eval_json(cli, "--samples", OWN_K, "-k", "5", "--metrics", "recall", "--na", "zero")
    run = report["runs"]["own_k"]
    # --na zero counts NA as 0; a query outside a column is no value there at all.
    assert run["mean"] == {"recall@2": 0.5, "recall@5": 1.0}
    assert run["valid"] == {"recall@2": 1, "recall@5": 1}


def test_own_k_when_it_is_the_callers_k(cli: Cli) -> None:
    report = eval_json(cli, "--samples", OWN_K, "-k", "2", "--metrics", "recall", "--per-query")
    run = report["runs"]["own_k"]
    assert run["per_query"] == {"q-1": {"recall@2": 0.5}, "q-2": {"recall@2": 0.0}}
    assert report["warnings"] == []


def test_a_run_file_beside_the_samples_takes_their_k(cli: Cli, tmp_path: Path) -> None:
    run = tmp_path / "other.run"
    run.write_text("q-1 Q0 doc-3 1 2.0 x\nq-1 Q0 doc-7 2 1.0 x\nq-2 Q0 doc-4 1 1.0 x\n")
    report = eval_json(
        cli, "--samples", OWN_K, "--run", f"other={run}", "-k", "5", "--metrics", "recall",
        "--per-query",
    )  # fmt: skip
    assert report["runs"]["other"]["per_query"] == {
        "q-1": {"recall@2": 0.5},
        "q-2": {"recall@5": 1.0},
    }


def test_with_own_cutoffs_follow_the_callers_columns() -> None:
    keys = [MetricKey("recall", 5), MetricKey("recall", 10), MetricKey("mrr", None)]
    keys.append(MetricKey("ndcg", 10))
    out, only = with_own_cutoffs(keys, {"a": 2, "b": 7, "c": 5})
    # The caller's first metric stays first: it is the report's headline by default.
    assert [key.name for key in out] == [
        "recall@5", "recall@10", "recall@2", "recall@7", "mrr", "ndcg@10", "ndcg@2", "ndcg@5",
        "ndcg@7",
    ]  # fmt: skip
    # The added columns hold only the queries whose own k they are: recall@5 was asked
    # for, so it is every query's, but ndcg@5 was added by query c alone.
    assert only == {MetricKey("recall", 2), MetricKey("recall", 7)} | {
        MetricKey("ndcg", k) for k in (2, 5, 7)
    }
    assert with_own_cutoffs(keys, {}) == (keys, frozenset())


def test_out_of_column() -> None:
    run = RankedRun.from_lists("r", [[5], [5], [5]], k_override=[2, 0, 5])
    added = frozenset({MetricKey("recall", 2)})
    assert out_of_column(run, MetricKey("recall", 5), added).tolist() == [
        True,
        False,
        False,
    ]
    assert out_of_column(run, MetricKey("recall", 2), added).tolist() == [
        False,
        True,
        True,
    ]
    assert not out_of_column(run, MetricKey("mrr", None), added).any()
    # ndcg@2 was asked for: the queries without an own k belong in it.
    assert out_of_column(run, MetricKey("ndcg", 2), added).tolist() == [False, False, True]
    unpinned = RankedRun.from_lists("r", [[5], [5]])
    assert np.array_equal(out_of_column(unpinned, MetricKey("recall", 2), added), [True, True])
    assert own_k_note({"a": 5}, [MetricKey("recall", 5)]) == []


def test_a_gain_that_is_not_whole_is_refused_by_name(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "half.jsonl"
    sample = json.loads(SAMPLES.read_text().splitlines()[1])
    sample["expected_output"] = {"doc-3": 2.5}
    path.write_text(json.dumps(sample) + "\n")
    code, _, err = cli("eval", "--samples", path, "--grade-map", GAINS_GRADE_MAP)
    assert code == 2
    assert f"{path}:1: field expected_output: the value of 'doc-3' is 2.5" in err
    assert "whole numbers" in err


def test_import_says_which_maps_reach_no_relevant_passage(cli: Cli, tmp_path: Path) -> None:
    lines = SAMPLES.read_text().splitlines()
    weak = json.loads(lines[1])
    weak["id"], weak["expected_output"] = "q-3", {"doc-9": 1}
    path = tmp_path / "weak.jsonl"
    path.write_text("\n".join([*lines, json.dumps(weak)]) + "\n")
    db = tmp_path / "p.db"
    assert cli("init", db)[0] == 0
    code, _, err = cli("import", db, "--samples", path, "--grade-map", GAINS_GRADE_MAP)
    assert code == 0, err
    assert "1 expected_output map(s) grade no passage 4 or higher: q-3 (line 3)" in err


def test_a_run_file_against_a_project_takes_its_samples_k(cli: Cli, tmp_path: Path) -> None:
    # The project keeps each sample's metadata.k; a run file evaluated against it is
    # cut at that k too, as the stored runs are.
    db = tmp_path / "p.db"
    assert cli("init", db)[0] == 0
    code, _, err = cli("import", db, "--samples", OWN_K)
    assert code == 0, err
    run = tmp_path / "other.run"
    run.write_text("q-1 Q0 doc-3 1 2.0 x\nq-1 Q0 doc-7 2 1.0 x\nq-2 Q0 doc-4 1 1.0 x\n")
    report = eval_json(
        cli, db, "--run", f"other={run}", "-k", "5", "--metrics", "recall", "--per-query"
    )
    assert report["runs"]["other"]["per_query"] == {
        "q-1": {"recall@2": 0.5},
        "q-2": {"recall@5": 1.0},
    }


def test_a_column_one_metric_asks_for_does_not_open_anothers(cli: Cli) -> None:
    # recall@2 is asked for; ndcg@2 exists only for q-1, whose own k is 2.
    report = eval_json(
        cli, "--samples", OWN_K, "--metrics", "recall@2,ndcg@5", "--per-query"
    )  # fmt: skip
    per_query = report["runs"]["own_k"]["per_query"]
    assert set(per_query["q-2"]) == {"recall@2", "ndcg@5"}
    assert set(per_query["q-1"]) == {"recall@2", "ndcg@2"}
