"""The README's section "Can you trust the judge?": its commands run in bash (the glob
included) on a copy of the LLMJudge slice (tests/data/llmjudge), and the lines it shows
are lines `agree` prints. Its probe lines are the probe output that docs/guide/judge.md
shows, which tests/e2e/test_agree_probe.py runs against the loopback judge."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from docs_pages import ROOT, blocks

LLMJUDGE = ROOT / "tests" / "data" / "llmjudge"
THIS = f"tests/e2e/{Path(__file__).name}"


def readme_blocks(language: str) -> list[str]:
    found = [
        block.code
        for block in blocks("README.md", docs=ROOT)
        if block.language == language and block.mark == f"<!-- run by {THIS} -->"
    ]
    assert found, f"README.md has no {language} block run by {THIS}"
    return found


def test_the_readme_s_agree_lines_are_what_agree_prints(tmp_path: Path) -> None:
    shutil.copytree(LLMJUDGE, tmp_path / "llmjudge")
    work = tmp_path / "llmjudge"
    [commands] = readme_blocks("bash")
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    outputs = []
    for line in commands.splitlines():
        done = subprocess.run(
            ["bash", "-c", line],
            check=False,
            capture_output=True,
            text=True,
            cwd=work,
            env=env,
            timeout=300,
        )
        assert done.returncode == 0, f"{line}\n{done.stderr}"
        outputs.append(done.stdout)
    assert "runs: 6" in outputs[1]
    printed = outputs[-1].splitlines()
    shown, _ = readme_blocks("text")
    for row in shown.splitlines():
        assert row in printed, row


def test_the_readme_s_probe_lines_are_the_guide_s_tested_output() -> None:
    [_, probe] = readme_blocks("text")
    guide = "\n".join(block.code for block in blocks("guide/judge.md") if block.language == "text")
    # (Blocks come dedented: the README shows the lines without the guide's indent.)
    lines = [line.strip() for line in guide.splitlines()]
    for row in probe.splitlines():
        assert row.strip() in lines, row
