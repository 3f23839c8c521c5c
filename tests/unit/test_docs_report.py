"""The ``raglabel report`` commands of docs/guide/report.md, run as written in a folder
holding the files they name (the demo project, its qrels and two of its runs)."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from docs_pages import examples

from raglabel.storage.demo import build_demo

if TYPE_CHECKING:
    import pytest
    from cli_helpers import Cli

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "fixtures" / "demo"


def section_commands() -> list[list[str]]:
    [block] = examples("guide/report.md", f"tests/unit/{Path(__file__).name}", "bash")
    return [shlex.split(line.split("  #", 1)[0]) for line in block.splitlines() if line.strip()]


def test_the_report_commands_write_what_the_page_says(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_demo(tmp_path / "project.db", "owner", answers=True)
    shutil.copy(DEMO / "qrels.txt", tmp_path / "qrels.txt")
    for name in ("bm25", "dense"):
        shutil.copy(DEMO / "runs" / f"{name}.run", tmp_path / f"{name}.run")
    monkeypatch.chdir(tmp_path)
    commands = section_commands()
    assert len(commands) == 4
    for argv in commands:
        assert argv[:2] == ["raglabel", "report"]
        code, _, err = cli(*argv[1:])
        assert code == 0, (argv, err)
        target = Path(argv[argv.index("-o") + 1])
        if "--format" in argv:
            text = (target / "report.md").read_text(encoding="utf-8")
            assert text.startswith("# raglabel report") and list(target.glob("*.svg"))
        else:
            html = target.read_text(encoding="utf-8")
            assert "<script" not in html and "<svg " in html
            if "--answers" in argv:
                assert "Answer criteria" in html
            else:
                assert "Answer criteria" not in html
