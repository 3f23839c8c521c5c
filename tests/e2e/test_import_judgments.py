"""Public labels end to end: LLMJudge's human labels imported as qrels and two of its
submissions as other judges' labels (``raglabel import --judgments``), then ``agree
--format json`` compares each model with the people, and the figures equal
scikit-learn's computed straight from the slice files (``tests/data/llmjudge``). Also runs
the examples of docs/guide/judge.md's section "Other judges' labels"."""

from __future__ import annotations

import hashlib
import json
import shlex
import shutil
from collections.abc import Callable
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from cli_helpers import child
from docs_pages import examples
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score

LLMJUDGE = Path(__file__).parents[1] / "data" / "llmjudge"
MODELS = ("umbrela1", "gpt4o")
#: The project's default grade map: TREC labels 0-3 to grades 2-5.
TREC_GRADES = {0: 2, 1: 3, 2: 4, 3: 5}


def labels(name: str) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for line in (LLMJUDGE / f"{name}.qrels").read_text(encoding="utf-8").splitlines():
        qid, _, docid, label = line.split()
        out[qid, docid] = int(label)
    return out


def ok(*args: str | Path) -> str:
    result = child(*args)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("llmjudge") / "p.db"
    ok("init", db)
    said = ok(
        "import",
        db,
        "--qrels",
        LLMJUDGE / "humans.qrels",
        "--annotator",
        "nist",
        *[arg for model in MODELS for arg in ("--judgments", f"{model}={LLMJUDGE}/{model}.qrels")],
        # Synthetic runs over the slice's pairs (make_runs.py says how they were made):
        # the LLMJudge repositories hold labels, not runs, and tau needs run orders.
        *[arg for run in sorted((LLMJUDGE / "runs").glob("*.run")) for arg in ("--run", run)],
    )
    assert "grades: 240" in said and "suggestions: 480" in said and "runs: 6" in said
    return db


def test_the_slice_is_three_label_sets_on_the_same_pairs_on_the_trec_scale() -> None:
    humans = labels("humans")
    assert len(humans) == 240
    assert len({qid for qid, _ in humans}) == 10
    for model in MODELS:
        assert labels(model).keys() == humans.keys()
    for name in ("humans", *MODELS):
        assert set(labels(name).values()) == {0, 1, 2, 3}


def test_agree_gives_each_model_against_the_people_as_scikit_learn_does(project: Path) -> None:
    report = json.loads(ok("agree", project, "--format", "json"))
    assert report["annotators"] == ["nist"]
    assert report["models"] == sorted(MODELS)
    humans = labels("humans")
    pairs = sorted(humans)
    people = [TREC_GRADES[humans[p]] for p in pairs]
    for model in MODELS:
        (entry,) = [e for e in report["pairs"] if e["a"] == model and e["b"] == "humans"]
        theirs = labels(model)
        judge = [TREC_GRADES[theirs[p]] for p in pairs]
        assert entry["n"] == 240
        assert entry["kappa"] == pytest.approx(
            cohen_kappa_score(judge, people, weights="quadratic"), abs=1e-12
        )
        # Quadratic weights see only label distances: the grades' kappa is the labels'.
        labels_only = cohen_kappa_score(
            [theirs[p] for p in pairs], [humans[p] for p in pairs], weights="quadratic"
        )
        assert entry["kappa"] == pytest.approx(labels_only, abs=1e-12)
        exact = sum(a == b for a, b in zip(judge, people, strict=True)) / len(pairs)
        assert entry["exact"] == pytest.approx(exact, abs=1e-12)


def test_export_lists_the_imported_labels_with_their_files(project: Path, tmp_path: Path) -> None:
    target = tmp_path / "s.jsonl"
    ok("export", project, "--jsonl", target, "--suggestions")
    lines = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 480
    for model in MODELS:
        sha = hashlib.sha256((LLMJUDGE / f"{model}.qrels").read_bytes()).hexdigest()
        mine = [x for x in lines if x["model"] == model]
        assert {(x["source"], x["file_sha256"]) for x in mine} == {("imported", sha)}
        theirs = labels(model)
        assert {(x["query_id"], x["passage_id"]): x["grade"] for x in mine} == {
            pair: TREC_GRADES[label] for pair, label in theirs.items()
        }


def test_the_same_file_again_is_a_no_op_and_a_bad_one_changes_nothing(
    project: Path, tmp_path: Path, checksum: Callable[[Path], str]
) -> None:
    copy = tmp_path / "copy.db"
    copy.write_bytes(project.read_bytes())
    before = checksum(copy)
    again = ok("import", copy, "--judgments", f"gpt4o={LLMJUDGE}/gpt4o.qrels")
    assert "the same file was imported as 'gpt4o'" in again
    assert "nothing new" in again
    bad = tmp_path / "bad.qrels"
    bad.write_text("q22 0 p814 2\nq22 0 p282 10\n")
    result = child(
        "import",
        copy,
        "--judgments",
        f"other={LLMJUDGE}/umbrela1.qrels",
        "--judgments",
        f"bad={bad}",
    )
    assert result.returncode == 2
    assert f"{bad}:2: relevance 10 is not covered by the grade map" in result.stderr
    assert checksum(copy) == before


def test_every_figure_of_agree_equals_the_independent_implementation(project: Path) -> None:
    """The issue's test: on LLMJudge's public labels, each model's kappas equal
    scikit-learn's, its alpha the krippendorff package's and each run metric's taus
    scipy's, all computed here from the slice files and agree's per-run means."""
    report = json.loads(
        ok("agree", project, "--format", "json", "--metrics", "ndcg@10,p@5", "--top-runs", "4")
    )
    humans = labels("humans")
    pairs = sorted(humans)
    people = np.array([TREC_GRADES[humans[p]] for p in pairs])
    for model in MODELS:
        (entry,) = [e for e in report["pairs"] if e["a"] == model and e["b"] == "humans"]
        theirs = labels(model)
        judge = np.array([TREC_GRADES[theirs[p]] for p in pairs])
        assert entry["kappa_unweighted"] == pytest.approx(cohen_kappa_score(judge, people))
        # Relevant at grade >= 4 (the default --relevance-threshold): TREC label >= 2.
        assert entry["kappa_binary"] == pytest.approx(cohen_kappa_score(judge >= 4, people >= 4))
        alpha = krippendorff.alpha(
            reliability_data=np.vstack([judge, people]).astype(float),
            level_of_measurement="ordinal",
            value_domain=[1, 2, 3, 4, 5],
        )
        assert entry["alpha"] == pytest.approx(alpha)
        for key in ("kappa", "kappa_unweighted", "kappa_binary", "alpha"):
            low, high = entry["ci"][key]
            assert low <= high
    assert [run["metric"] for run in report["runs"]] == ["ndcg@10", "precision@5"]
    for run in report["runs"]:
        names = sorted(run["human"])
        assert len(names) == 6
        human = [run["human"][name] for name in names]
        judged = [run["judge"][name] for name in names]
        assert run["tau"] == pytest.approx(kendalltau(human, judged, variant="b").statistic)
        best = sorted(names, key=lambda name: (-run["human"][name], name))[:4]
        assert run["top_runs"] == 4
        assert run["tau_top"] == pytest.approx(
            kendalltau(
                [run["human"][n] for n in best], [run["judge"][n] for n in best], variant="b"
            ).statistic
        )


# -- docs/guide/judge.md, "Other judges' labels" -----------------------------------------

PAGE = "guide/judge.md"
THIS = f"tests/e2e/{Path(__file__).name}"


def test_the_pages_commands_run_as_shown(tmp_path: Path) -> None:
    for name in ("humans", *MODELS):
        shutil.copyfile(LLMJUDGE / f"{name}.qrels", tmp_path / f"{name}.qrels")
    [block] = examples(PAGE, THIS, "bash")
    outputs = []
    for line in block.splitlines():
        words = shlex.split(line)
        assert words[0] == "raglabel", line
        result = child(*words[1:], cwd=tmp_path)
        assert result.returncode == 0, f"{line}\n{result.stderr}"
        outputs.append(result.stdout)
    report = json.loads(outputs[2])
    assert report["models"] == sorted(MODELS)
    exported = (tmp_path / "suggestions.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(exported) == 480


def test_the_pages_jsonl_lines_import_as_it_says(tmp_path: Path) -> None:
    [block] = examples(PAGE, THIS, "json")
    path = tmp_path / "mine.jsonl"
    path.write_text(block, encoding="utf-8")
    db = tmp_path / "p.db"
    ok("init", db)
    ok("import", db, "--judgments", f"mine={path}")
    target = tmp_path / "s.jsonl"
    ok("export", db, "--jsonl", target, "--suggestions")
    lines = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    # relevance 3 through the default TREC map is grade 5; grade 1 is taken as it is.
    assert [(x["passage_id"], x["grade"], x["reason"], x["source"]) for x in lines] == [
        ("p282", 1, None, "imported"),
        ("p814", 5, "states the answer", "imported"),
    ]
