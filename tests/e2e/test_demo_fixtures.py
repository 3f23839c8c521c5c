"""The bundled demo corpus: valid, evaluable with the README's command, and telling the
story its README promises (a good pool spoiled by a weak reranker)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

DEMO = Path(__file__).resolve().parents[2] / "fixtures" / "demo"


def raglabel(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "raglabel", *args], capture_output=True, text=True, check=False
    )


def test_demo_check_script_passes() -> None:
    result = subprocess.run(
        [sys.executable, str(DEMO / "check_demo.py")], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_demo_runs_tell_the_reranker_story() -> None:
    runs = sorted(str(p) for p in (DEMO / "runs").glob("*.run"))
    qrels = str(DEMO / "qrels.txt")
    result = raglabel("eval", "--qrels", qrels, "--run", *runs, "-k", "5", "--format", "json")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    mean = {name: run["mean"] for name, run in json.loads(result.stdout)["runs"].items()}
    assert set(mean) == {"bm25", "dense", "dense_rerank", "hybrid"}
    # The reranker's pool is nearly as good as anyone's, but it selects badly from it.
    assert mean["dense_rerank"]["proc@5"] > 0.9
    assert mean["dense_rerank"]["pct_proc@5"] == min(m["pct_proc@5"] for m in mean.values())
    # The lexical run is the one that lets outdated, harmful passages in.
    assert mean["bm25"]["harm@5"] == max(m["harm@5"] for m in mean.values())


def test_demo_samples_evaluate_with_containment() -> None:
    samples = str(DEMO / "samples.jsonl")
    result = raglabel("eval", "--samples", samples, "--metrics", "containment", "--format", "json")
    assert result.returncode == 0, result.stderr
    value = json.loads(result.stdout)["runs"]["samples"]["mean"]["containment@5"]
    assert 0.5 < value < 1.0


def test_demo_runs_and_samples_rebuild_byte_for_byte(tmp_path: Path) -> None:
    # In a copy, so the test never rewrites the committed files.
    for name in ("make_runs.py", "queries.jsonl", "passages.jsonl", "qrels.txt"):
        shutil.copy(DEMO / name, tmp_path / name)
    result = subprocess.run(
        [sys.executable, str(tmp_path / "make_runs.py")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    built = sorted(path.name for path in (tmp_path / "runs").iterdir())
    assert built == sorted(path.name for path in (DEMO / "runs").glob("*.run"))
    for name in built:
        assert (tmp_path / "runs" / name).read_bytes() == (DEMO / "runs" / name).read_bytes()
    assert (tmp_path / "samples.jsonl").read_bytes() == (DEMO / "samples.jsonl").read_bytes()
