"""The Answers page, docs/guide/answers.md, run as written on the demo corpus's files.

Every ``raglabel`` command of the page's blocks marked as run here runs in order in one
folder (the app's ``raglabel label`` aside, which needs a person at the keys) and must exit
0. The judge's commands go to a loopback chat server in place of the page's local-model URL.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from docs_pages import examples

if TYPE_CHECKING:
    from chat_server import ChatServer

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "fixtures" / "demo"
PAGE_URL = "http://localhost:11434/v1"


def section_commands() -> list[str]:
    commands: list[str] = []
    for block in examples("guide/answers.md", f"tests/e2e/{Path(__file__).name}", "bash"):
        for line in block.replace("\\\n", " ").splitlines():
            if line.startswith("raglabel "):
                commands.append(line.split("  #", 1)[0].strip())
    return commands


def demo_folder(where: Path) -> None:
    for name in ("queries.jsonl", "passages.jsonl"):
        shutil.copy(DEMO / name, where / name)
    shutil.copy(DEMO / "answers" / "grounded.jsonl", where / "grounded.jsonl")
    shutil.copy(DEMO / "answers" / "grades.jsonl", where / "grades.jsonl")
    # The other system in ragas' v1 layout: a JSON list, ground_truth(s) for the reference.
    ragas = []
    for line in (DEMO / "answers" / "embellished.jsonl").read_text(encoding="utf-8").splitlines():
        sample = json.loads(line)
        entry = {
            "question": sample["question"],
            "answer": sample["answer"],
            "contexts": [context["text"] for context in sample["contexts"]],
        }
        reference = sample.get("reference")
        if isinstance(reference, list):
            entry["ground_truths"] = reference
        elif reference:
            entry["ground_truth"] = reference
        ragas.append(entry)
    (where / "ragas.json").write_text(json.dumps(ragas, indent=2), encoding="utf-8")


def test_the_section_has_every_kind_of_command() -> None:
    joined = "\n".join(section_commands())
    needed_all = ("--answers grounded=", "--answer-grades", "judge project.db --answers")
    for needed in (*needed_all, "eval project.db --answers", "agree project.db --answers"):
        assert needed in joined, needed


def test_every_command_runs(tmp_path: Path, chat_server: type[ChatServer]) -> None:
    demo_folder(tmp_path)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    ran = 0
    with chat_server() as server:
        for command in section_commands():
            if command.startswith("raglabel label "):
                continue
            argv = [server.base_url if word == PAGE_URL else word for word in shlex.split(command)]
            done = subprocess.run(
                argv, capture_output=True, text=True, cwd=tmp_path, env=env, check=False
            )
            assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
            assert "Traceback" not in done.stderr
            ran += 1
    assert ran >= 14
    standing = (tmp_path / "standing.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(standing) == len((tmp_path / "grades.jsonl").read_text().splitlines())
