"""The ``raglabel judge`` commands at the head of docs/guide/judge.md, run as written.

They run in order on the demo project, against the loopback chat server (tests/
chat_server.py) in place of OpenAI's endpoint and the local model server the page names:
each of the page's URLs, and the ``...`` it leaves for yours, becomes the server's URL,
and a ``--model ...`` becomes a model of the server. ``export NAME=VALUE`` sets that
variable for the commands after it.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from docs_pages import examples

from raglabel.storage.demo import build_demo

if TYPE_CHECKING:
    from chat_server import ChatServer

PAGE_URLS = {"https://api.openai.com/v1", "http://localhost:11434/v1"}


def page_lines() -> list[str]:
    [block] = examples("guide/judge.md", f"tests/e2e/{Path(__file__).name}", "bash")
    return [line.split("  #", 1)[0].strip() for line in block.splitlines() if line.strip()]


def as_run(words: list[str], url: str) -> list[str]:
    """The page's command with its endpoint and placeholders pointed at the test server."""
    argv = []
    for before, word in zip(["", *words], words, strict=False):
        if word in PAGE_URLS or (before == "--base-url" and word == "..."):
            argv.append(url)
        elif before == "--model" and word == "...":
            argv.append("local-model")
        else:
            argv.append(word)
    return argv


def test_the_judge_commands_do_what_the_page_says(
    tmp_path: Path, chat_server: type[ChatServer]
) -> None:
    build_demo(tmp_path / "project.db", "owner", answers=False)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    env.pop("OPENAI_API_KEY", None)
    lines = page_lines()
    assert lines[0].startswith("export OPENAI_API_KEY=")
    said: list[tuple[list[str], int]] = []
    with chat_server() as server:
        for line in lines:
            words = shlex.split(line)
            if words[0] == "export":
                name, _, value = words[1].partition("=")
                env[name] = value
                continue
            argv = as_run(words, server.base_url)
            assert argv[0] == "raglabel", line
            done = subprocess.run(
                argv, capture_output=True, text=True, cwd=tmp_path, env=env, check=False
            )
            assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
            assert "Traceback" not in done.stderr
            said.append((words, server.count()))
        keys = {record.headers.get("authorization") for record in server.requests}
    # The dry run sends nothing; each judge run after it asks the server.
    commands = [words[1] for words, _ in said]
    assert commands == ["judge"] * 3 + ["export"] * 2 + ["judge", "agree"]
    asked = [count for _, count in said]
    assert "--dry-run" in said[0][0] and asked[0] == 0
    assert 0 < asked[1] < asked[2] == asked[3] == asked[4] < asked[5] == asked[6]
    assert keys == {f"Bearer {env['OPENAI_API_KEY']}"}
    suggestions = (tmp_path / "suggestions.jsonl").read_text(encoding="utf-8").splitlines()
    models = {json.loads(line)["model"] for line in suggestions}
    assert {"gpt-4o-mini", "llama3.1", "qwen2.5"} <= models
    assert (tmp_path / "debug.jsonl").exists()
