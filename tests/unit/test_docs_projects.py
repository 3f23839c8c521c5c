"""The commands at the head of docs/reference/project-file.md, run as written.

They run in order in one folder holding the files they name: the demo corpus's queries,
passages, qrels, two of its runs and its samples file, and ``scifact``, a BEIR folder of
two passages and one query written here in BEIR's layout (the real one is a download).
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from docs_pages import examples

if TYPE_CHECKING:
    import pytest
    from cli_helpers import Cli

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "fixtures" / "demo"


def page_commands() -> list[list[str]]:
    [block] = examples("reference/project-file.md", f"tests/unit/{Path(__file__).name}", "bash")
    return [shlex.split(line.split("  #", 1)[0]) for line in block.splitlines() if line.strip()]


def write_beir(folder: Path) -> None:
    (folder / "qrels").mkdir(parents=True)
    corpus = [
        {"_id": "s1", "title": "Claims", "text": "Aspirin lowers fever in adults."},
        {"_id": "s2", "title": "", "text": "Vitamin C does not cure colds."},
    ]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(row) + "\n" for row in corpus))
    (folder / "queries.jsonl").write_text(
        json.dumps({"_id": "c1", "text": "Does aspirin lower fever?"}) + "\n"
    )
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nc1\ts1\t1\nc1\ts2\t0\n")


def test_the_project_commands_do_what_the_page_says(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("queries.jsonl", "passages.jsonl", "qrels.txt", "samples.jsonl"):
        shutil.copy(DEMO / name, tmp_path / name)
    for name in ("bm25", "dense"):
        shutil.copy(DEMO / "runs" / f"{name}.run", tmp_path / f"{name}.run")
    write_beir(tmp_path / "scifact")
    monkeypatch.chdir(tmp_path)
    commands = page_commands()
    assert [argv[1] for argv in commands] == ["init", *["import"] * 4, "eval", "export"]
    said = {}
    for argv in commands:
        assert argv[0] == "raglabel", argv
        code, out, err = cli(*argv[1:])
        assert code == 0, (argv, err)
        assert "Traceback" not in err
        said[" ".join(argv[2:])] = out
    imports = [out for words, out in said.items() if words.startswith("project.db --")]
    assert "queries added: 30, passages added: 303" in imports[0]
    assert "runs: 2" in imports[1]
    assert "queries added: 1, passages added: 2, grades: 2" in imports[2]
    assert "samples: 30" in imports[3]
    evaluated = said["project.db -k 5,10 --ci --compare"]
    for run in ("bm25", "dense", "rag"):
        assert run in evaluated
    labels = (tmp_path / "labels.txt").read_text(encoding="utf-8").splitlines()
    assert any(line.startswith("c1 ") for line in labels) and len(labels) > 600
