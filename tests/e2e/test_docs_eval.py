"""The `raglabel eval` examples of docs/guide/eval.md, run as written on the demo corpus's
files.

Every command of the page's block marked as run here runs in a folder holding the files it
names (``qrels.txt``, ``bm25.run``, ``dense.run``, ``rerank.run``, ``first.run``,
``samples.jsonl``) and must exit 0; the trec_eval-parity example must print trec_eval's
means (checked against pytrec_eval).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import pytrec_eval
from docs_pages import examples

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "fixtures" / "demo"


def eval_examples() -> list[str]:
    blocks = examples("guide/eval.md", f"tests/e2e/{Path(__file__).name}", "bash")
    return [line for block in blocks for line in block.splitlines() if line.startswith("raglabel ")]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("docs")
    shutil.copy(DEMO / "qrels.txt", where / "qrels.txt")
    shutil.copy(DEMO / "samples.jsonl", where / "samples.jsonl")
    runs = DEMO / "runs"
    for name, source in {
        "bm25": "bm25.run",
        "dense": "dense.run",
        "rerank": "dense_rerank.run",
        "first": "dense.run",
    }.items():
        shutil.copy(runs / source, where / f"{name}.run")
    return where


def run_shell(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, cwd=cwd, env=env, check=False
    )


def test_examples_are_there() -> None:
    examples = eval_examples()
    assert len(examples) >= 5
    assert any("--na zero" in line for line in examples)


@pytest.mark.parametrize("command", eval_examples())
def test_example_runs(folder: Path, command: str) -> None:
    done = run_shell(command, folder)
    assert done.returncode == 0, f"{command}\n{done.stderr}"
    assert "Traceback" not in done.stderr


def test_trec_eval_parity_example_prints_trec_eval_means(folder: Path) -> None:
    command = next(line for line in eval_examples() if "--na zero" in line)
    done = run_shell(command + " --format json", folder)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    means = report["runs"]["bm25"]["mean"]
    qrels: dict[str, dict[str, int]] = {}
    for line in (folder / "qrels.txt").read_text().splitlines():
        if line.strip():
            q, _, d, label = line.split()[:4]
            # trec_eval reads a negative label as unjudged, raglabel as grade 1 (judged
            # junk): written as 0 for trec_eval, both judge it non-relevant (docs/guide/eval.md).
            qrels.setdefault(q, {})[d] = max(int(label), 0)
    run: dict[str, dict[str, float]] = {}
    for line in (folder / "bm25.run").read_text().splitlines():
        if line.strip():
            q, _, d, _, score = line.split()[:5]
            run.setdefault(q, {})[d] = float(score)
    measures = {"map", "P.10", "ndcg_cut.10", "recip_rank", "bpref", "Rprec"}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=2).evaluate(run)
    # trec_eval -c: the mean over every query of the qrels, a query the run lacks as 0
    names = {"ap": "map", "precision@10": "P_10", "ndcg@10": "ndcg_cut_10"}
    names |= {"mrr": "recip_rank", "bpref": "bpref", "rprec": "Rprec"}
    for ours, theirs in names.items():
        expected = sum(per_query.get(q, {}).get(theirs, 0.0) for q in qrels) / len(qrels)
        assert means[ours] == pytest.approx(expected, abs=1e-12), ours
