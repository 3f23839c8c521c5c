"""``raglabel eval`` at first contact (issue 13): names people type, warnings before
silent zeros, absurd input refused cleanly, every output carrying what was asked."""

from __future__ import annotations

import csv
import io
import json
import subprocess
from pathlib import Path

import pytest
from cli_helpers import child

from raglabel.metrics.config import MetricConfig
from raglabel.metrics.definitions import definition, definitions
from raglabel.metrics.names import MetricKey, MetricNameError, parse_metric_list
from raglabel.metrics.stats import adjust_p_values

QRELS = "q1 0 a 3\nq1 0 b 2\nq1 0 c 0\nq2 0 e 1\nq2 0 f 3\nq3 0 g 2\nq3 0 h 0\n"
GOOD = "q1 Q0 a 1 0.9 g\nq1 Q0 b 2 0.8 g\nq1 Q0 x 3 0.7 g\nq2 Q0 f 1 0.9 g\nq3 Q0 g 1 0.5 g\n"
WEAK = "q1 Q0 c 1 0.9 w\nq1 Q0 a 2 0.8 w\nq2 Q0 e 1 0.9 w\nq3 Q0 h 1 0.9 w\nq3 Q0 g 2 0.1 w\n"
BINARY = "q1 0 a 1\nq1 0 b 0\nq2 0 e 1\nq2 0 f 0\n"


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {}
    texts = {"qrels": QRELS, "good": GOOD, "weak": WEAK, "binary": BINARY}
    for name, text in texts.items():
        paths[name] = tmp_path / f"{name}.txt"
        paths[name].write_text(text)
    return paths


def both(files: dict[str, Path], *extra: str) -> subprocess.CompletedProcess[str]:
    return child(
        "eval",
        "--qrels",
        str(files["qrels"]),
        "--run",
        f"good={files['good']}",
        f"weak={files['weak']}",
        *extra,
    )


# ------------------------------------------------------------------------------ names

ALIASES = {
    "P_5": "precision@5",
    "P.5": "precision@5",
    "recall_100": "recall@100",
    "ndcg_cut_10": "ndcg@10",
    "ndcg_cut.10": "ndcg@10",
    "recip_rank": "mrr",
    "map": "ap",
    "map_cut_10": "ap@10",
    "Rprec": "rprec",
    "bpref": "bpref",
    "success_10": "hit@10",
    "P@5": "precision@5",
    "R@100": "recall@100",
    "nDCG@10": "ndcg@10",
    "RR": "mrr",
    "RR@10": "mrr@10",
    "AP": "ap",
    "AP@100": "ap@100",
    "Bpref": "bpref",
    "Success@10": "hit@10",
    "Judged@10": "judged@10",
}


@pytest.mark.parametrize(("alias", "canonical"), sorted(ALIASES.items()))
def test_other_tools_names_are_aliases(alias: str, canonical: str) -> None:
    assert [key.name for key in parse_metric_list(alias, ks=[5])] == [canonical]


def test_unknown_name_suggests_the_closest() -> None:
    with pytest.raises(MetricNameError, match="did you mean 'ndcg_cut_10'"):
        parse_metric_list("ndcg_cutt_10", ks=[5])
    with pytest.raises(MetricNameError, match="did you mean 'precision'"):
        parse_metric_list("precison", ks=[5])
    with pytest.raises(MetricNameError, match="takes no cutoff"):
        parse_metric_list("rprec@10", ks=[5])


def test_report_uses_canonical_names(files: dict[str, Path]) -> None:
    done = both(files, "--metrics", "P_2,nDCG@3,map,Rprec,bpref,RR", "--format", "json")
    assert done.returncode == 0, done.stderr
    mean = json.loads(done.stdout)["runs"]["good"]["mean"]
    assert list(mean) == ["precision@2", "ndcg@3", "ap", "rprec", "bpref", "mrr"]


# --------------------------------------------------------------------------- warnings


def test_binary_qrels_with_the_default_map_warn_with_the_fix(files: dict[str, Path]) -> None:
    done = child(
        "eval", "--qrels", str(files["binary"]), "--run", str(files["good"]), "--format", "json"
    )
    assert done.returncode == 0, done.stderr
    assert "no label reaches the relevance threshold" in done.stderr
    assert "--grade-map 0:2,1:5" in done.stderr
    warnings = json.loads(done.stdout)["warnings"]
    assert any("--grade-map 0:2,1:5" in w for w in warnings)
    fixed = child(
        "eval", "--qrels", str(files["binary"]), "--run", str(files["good"]),
        "--grade-map", "0:2,1:5",
    )  # fmt: skip
    assert "relevance threshold" not in fixed.stderr


def test_run_sharing_no_query(files: dict[str, Path], tmp_path: Path) -> None:
    other = tmp_path / "other.run"
    other.write_text("Q1 Q0 a 1 0.9 t\nQ2 Q0 f 1 0.9 t\n")
    done = child("eval", "--qrels", str(files["qrels"]), "--run", str(other), "--format", "json")
    assert done.returncode == 0
    assert "shares no query with the labels" in done.stderr
    assert any("shares no query" in w for w in json.loads(done.stdout)["warnings"])


def test_run_missing_most_queries(files: dict[str, Path], tmp_path: Path) -> None:
    thin = tmp_path / "thin.run"
    thin.write_text("q1 Q0 a 1 0.9 t\n")
    done = child("eval", "--qrels", str(files["qrels"]), "--run", str(thin))
    assert "retrieves nothing for 2 of the 3 labeled queries" in done.stderr
    # and not for a run that has them all
    assert "retrieves nothing" not in both(files).stderr


def test_qrels_given_as_a_run(files: dict[str, Path]) -> None:
    done = child("eval", "--qrels", str(files["qrels"]), "--run", str(files["qrels"]))
    assert done.returncode == 2
    assert "looks like qrels" in done.stderr and "--qrels" in done.stderr
    assert "Traceback" not in done.stderr


def test_run_given_as_qrels(files: dict[str, Path]) -> None:
    done = child("eval", "--qrels", str(files["good"]), "--run", str(files["good"]))
    assert "looks like a run" in done.stderr


def test_docid_and_score_swapped(files: dict[str, Path], tmp_path: Path) -> None:
    swapped = tmp_path / "swapped.run"
    swapped.write_text("q1 Q0 0.9 1 a t\nq1 Q0 0.8 2 b t\n")
    done = child("eval", "--qrels", str(files["qrels"]), "--run", str(swapped))
    assert done.returncode == 2
    assert "docid and score swapped" in done.stderr
    # numeric passage ids: the file loads, but nothing in it has a label
    numeric = tmp_path / "numeric.run"
    numeric.write_text("q1 Q0 0.9 1 17 t\nq2 Q0 0.8 2 18 t\nq3 Q0 0.7 1 19 t\n")
    done = child("eval", "--qrels", str(files["qrels"]), "--run", str(numeric))
    assert done.returncode == 0
    assert "none of its 3 entries has a label" in done.stderr
    assert "docid and score swapped" in done.stderr


def test_every_report_defines_its_metrics(files: dict[str, Path]) -> None:
    for fmt in ("table", "markdown"):
        done = both(files, "-k", "5", "--metrics", "harm,ndcg", "--format", fmt)
        assert "Harm@5: share of the top 5 graded 2 or lower" in done.stdout
        assert done.stdout.count("Harm@5:") == 1
    done = both(files, "--harm-threshold", "1", "--metrics", "harm@5", "--format", "json")
    config = json.loads(done.stdout)["config"]
    assert config["definitions"] == ["Harm@5: share of the top 5 graded 1 or lower"]


def test_definition_function() -> None:
    assert definition(MetricKey("harm", 5)) == "Harm@5: share of the top 5 graded 2 or lower"
    assert definition(MetricKey("harm", 5), MetricConfig(harm_threshold=1)).endswith(
        "graded 1 or lower"
    )
    assert "graded 5" in definition(MetricKey("hit", 3), MetricConfig(relevance_threshold=5))
    keys = parse_metric_list("harm", ks=[5, 10])
    assert definitions(keys) == ["Harm@5: share of the top 5 graded 2 or lower"]


# ----------------------------------------------------------------------- absurd input

USAGE_ERRORS = [
    ("-k", "0"),
    ("-k", str(2**64)),
    ("-k", "-3"),
    ("--metrics", f"ndcg@{2**64}"),
    ("--metrics", "ndcg@0"),
    ("--resamples", str(10**12)),
    ("--resamples", "0"),
    ("--permutations", str(10**12)),
    ("--seed", "-1"),
    ("--seed", str(2**70)),
    ("--confidence", "nan"),
    ("--confidence", "1"),
    ("--alpha", "nan"),
    ("--alpha", "inf"),
    ("--cap4", "-1"),
    ("--ctx-threshold", "nan"),
    ("--ctx-threshold", "101"),
    ("--relevance-threshold", "9"),
    ("--harm-threshold", str(2**70)),
    ("--gain-map", "5:1e400"),
    ("--grade-map", "0:7"),
    ("--na", "maybe"),
    ("--adjust", "bonferroni"),
]


@pytest.mark.parametrize(("option", "value"), USAGE_ERRORS)
def test_absurd_values_are_usage_errors(files: dict[str, Path], option: str, value: str) -> None:
    done = both(files, f"{option}={value}")
    assert done.returncode == 2, (option, value, done.stderr)
    assert "Traceback" not in done.stderr
    assert "error" in done.stderr


def test_config_file_default_k_too_large(files: dict[str, Path], tmp_path: Path) -> None:
    config = tmp_path / "raglabel.toml"
    config.write_text(f"[metrics]\ndefault_k = {2**64}\n")
    done = both(files, "--config", str(config))
    assert done.returncode == 2 and "Traceback" not in done.stderr


def test_huge_cutoff_is_computed_with_a_note(files: dict[str, Path]) -> None:
    k = 10**15
    done = both(
        files, "-k", str(k), "--metrics", f"ndcg@{k},precision,recall,ra_nwg", "--format", "json"
    )
    assert done.returncode == 0, done.stderr
    assert "beyond every run's depth" in done.stderr
    report = json.loads(done.stdout)
    small = json.loads(
        both(files, "-k", "3", "--metrics", "ndcg@3,recall", "--format", "json").stdout
    )
    good, ref = report["runs"]["good"]["mean"], small["runs"]["good"]["mean"]
    assert good[f"ndcg@{k}"] == pytest.approx(ref["ndcg@3"])
    assert good[f"recall@{k}"] == pytest.approx(ref["recall@3"])
    assert good[f"precision@{k}"] < 1e-14


def test_agree_shares_the_cutoff_and_metric_checks(tmp_path: Path) -> None:
    missing = str(tmp_path / "none.db")
    for extra in (["-k", str(2**64)], ["-k", "0"], ["--metrics", "nDCG@0"], ["--metrics", "ndcgg"]):
        done = child("agree", missing, *extra)
        assert done.returncode == 2 and "Traceback" not in done.stderr, extra
    done = child("agree", missing, "--metrics", "ndcg_cutt_10")
    assert "did you mean" in done.stderr


# ------------------------------------------------------------------ argument handling


def _project(tmp_path: Path, files: dict[str, Path]) -> Path:
    db = tmp_path / "project.db"
    assert child("init", str(db)).returncode == 0
    done = child(
        "import", str(db), "--qrels", str(files["qrels"]), "--run", f"good={files['good']}"
    )
    assert done.returncode == 0, done.stderr
    return db


def test_run_does_not_swallow_the_project(files: dict[str, Path], tmp_path: Path) -> None:
    db = _project(tmp_path, files)
    done = child("eval", "--run", f"weak={files['weak']}", str(db), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert set(json.loads(done.stdout)["runs"]) == {"good", "weak"}
    # with a DB given already, a project file among the runs is refused by name
    done = child("eval", str(db), "--run", str(db))
    assert done.returncode == 2 and "is a project file, not a TREC run" in done.stderr


@pytest.mark.parametrize("option", ["--qrels", "--run", "--samples", "--config", "-o", "DB"])
def test_a_directory_given_as_a_file(files: dict[str, Path], tmp_path: Path, option: str) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    args = ["--qrels", str(files["qrels"]), "--run", str(files["good"])]
    if option == "DB":
        args = [str(folder)]
    elif option == "--samples":
        args = ["--samples", str(folder)]
    elif option in ("--qrels", "--run"):
        args = ["--qrels", str(files["qrels"]), "--run", str(files["good"])]
        args[args.index(option) + 1] = str(folder)
    else:
        args += [option, str(folder)]
    done = child("eval", *args)
    assert done.returncode == 2, done.stderr
    assert "is a folder" in done.stderr and "Traceback" not in done.stderr


def test_compare_with_one_run_says_so(files: dict[str, Path]) -> None:
    done = child("eval", "--qrels", str(files["qrels"]), "--run", str(files["good"]), "--compare")
    assert done.returncode == 0
    assert "only one run, so nothing to compare" in done.stderr


def test_unknown_baseline_lists_the_runs(files: dict[str, Path]) -> None:
    done = both(files, "--compare", "--baseline", "bm25")
    assert done.returncode == 2
    assert "'good', 'weak'" in done.stderr


# ------------------------------------------------------------------------- outputs


def test_per_query_in_the_table(files: dict[str, Path]) -> None:
    done = both(files, "-k", "2", "--metrics", "ndcg", "--per-query")
    assert done.returncode == 0
    assert "good: per query" in done.stdout and "weak: per query" in done.stdout
    assert all(q in done.stdout for q in ("q1", "q2", "q3"))


def test_csv_carries_every_number_of_the_json(files: dict[str, Path]) -> None:
    args = ("-k", "2", "--metrics", "ndcg,mrr", "--ci", "--compare", "--per-query")
    report = json.loads(both(files, *args, "--format", "json").stdout)
    rows = list(csv.DictReader(io.StringIO(both(files, *args, "--format", "csv").stdout)))
    assert list(rows[0]) == ["kind", "run", "metric", "query", "baseline", "value"]
    got = {(r["kind"], r["run"], r["metric"], r["query"], r["baseline"]): r["value"] for r in rows}

    def number(text: str) -> float | None:
        return None if text == "" else float(text)

    for run, result in report["runs"].items():
        for metric, mean in result["mean"].items():
            assert number(got["mean", run, metric, "", ""]) == mean
            assert int(got["valid", run, metric, "", ""]) == result["valid"][metric]
            lo, hi = result["ci"][metric]
            assert number(got["ci_low", run, metric, "", ""]) == lo
            assert number(got["ci_high", run, metric, "", ""]) == hi
        for qid, values in result["per_query"].items():
            for metric, value in values.items():
                assert number(got["per_query", run, metric, qid, ""]) == value
    for c in report["compare"]:
        key = (c["run"], c["metric"], "", c["baseline"])
        assert number(got[("compare_diff", *key)]) == c["mean_difference"]
        assert number(got[("compare_p", *key)]) == c["p_value"]
        assert number(got[("compare_p_adjusted", *key)]) == c["p_adjusted"]
        assert number(got[("compare_ci_low", *key)]) == c["ci"][0]
        assert int(got[("compare_wins", *key)]) == c["wins"]


def test_text_reports_print_conventions_and_whole_fingerprint(files: dict[str, Path]) -> None:
    report = json.loads(both(files, "--format", "json").stdout)
    fingerprint = report["labels"]["fingerprint"]
    for fmt in ("table", "markdown"):
        out = both(files, "--format", fmt, "--na", "zero").stdout
        assert fingerprint in out  # on one line, never split
        assert "harm_threshold=2" in out and "relevance_threshold=4" in out
        assert "na=zero" in out and "grade_map=" in out


def test_adjusted_p_values(files: dict[str, Path], tmp_path: Path) -> None:
    third = tmp_path / "third.run"
    third.write_text(GOOD.replace(" g\n", " t\n").replace("0.5", "0.95"))
    args = ["--qrels", str(files["qrels"]), "--run", f"good={files['good']}"]
    args += [f"weak={files['weak']}", f"third={third}", "--metrics", "ndcg@3,mrr,precision@1"]
    args += ["--compare", "--format", "json", "--permutations", "2000"]
    holm = json.loads(child("eval", *args).stdout)
    assert holm["config"]["adjust"] == "holm"
    # Two families, each adjusted on its own: the first metric's tests (every pair of
    # runs on ndcg@3, the headline) and all the others.
    assert holm["config"]["headline"] == "ndcg@3"
    for family, metrics in (("headline", {"ndcg@3"}), ("secondary", {"mrr", "precision@1"})):
        tests = [c for c in holm["compare"] if c["family"] == family]
        assert {c["metric"] for c in tests} == metrics
        assert len(tests) == 3 * len(metrics)  # three runs, three pairs
        raws = [c["p_value"] for c in tests]
        assert [c["p_adjusted"] for c in tests] == adjust_p_values(raws, "holm")
    assert all(c["p_adjusted"] >= c["p_value"] for c in holm["compare"])
    assert any(c["p_adjusted"] > c["p_value"] for c in holm["compare"])
    none = json.loads(child("eval", *args, "--adjust", "none").stdout)
    assert all(c["p_adjusted"] == c["p_value"] for c in none["compare"])
    assert "p (holm)" in child("eval", *args[:-2], "--format", "markdown").stdout


def test_adjustment_by_hand() -> None:
    # Holm: sorted 0.01, 0.03, 0.04 times 3, 2, 1 -> 0.03, 0.06, 0.04 -> running max
    assert adjust_p_values([0.01, 0.04, 0.03], "holm") == pytest.approx([0.03, 0.06, 0.06])
    # BH: 0.01*3/1, 0.03*3/2, 0.04*3/3 -> 0.03, 0.045, 0.04 -> running min from the top
    assert adjust_p_values([0.01, 0.04, 0.03], "bh") == pytest.approx([0.03, 0.04, 0.04])
    # None (no query to compare) stays None and is not counted: 0.5 x 2, max(0.9 x 1, 1.0)
    assert adjust_p_values([0.5, None, 0.9], "holm") == [1.0, None, 1.0]
    assert adjust_p_values([0.2, 0.3], "none") == [0.2, 0.3]


def test_help_shows_defaults_and_no_stray_percent() -> None:
    done = child("eval", "--help")
    assert "%%" not in done.stdout
    body = " ".join(done.stdout.split())
    for text in ("(default: 1000)", "(default: 42)", "(default: skip)", "(default: holm"):
        assert text in body
    options = [line.split()[0] for line in done.stdout.splitlines() if line.startswith("  -")]
    assert body.count("(default") >= len(options) - 1  # every option but --help
