"""``raglabel agree DB --probe length|stuffing`` as a child process, against the loopback
chat server playing a judge that overrates long and stuffed passages (tests/
chat_server.py, "An overrating judge"), on the probe project (tests/probe_project.py);
and the examples of docs/guide/judge.md's section "Probing the judge", run as written
with the page's endpoint pointed at that server, their printed text compared with the
page's."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import probe_project
from docs_pages import ROOT, examples
from pydantic import TypeAdapter

from raglabel.formats.probe_report import ProbeDocument

if TYPE_CHECKING:
    from chat_server import ChatServer

PAGE = "guide/judge.md"
PAGE_URL = "http://localhost:11434/v1"
Grader = Callable[..., Callable[[str], int]]


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    env.pop("OPENAI_API_KEY", None)
    return subprocess.run(
        argv, capture_output=True, text=True, cwd=cwd, env=env, check=False, timeout=300
    )


def page_commands(url: str) -> list[list[str]]:
    [block] = examples(PAGE, f"tests/e2e/{Path(__file__).name}", "bash")
    return [
        [url if word == PAGE_URL else word for word in shlex.split(line)]
        for line in block.splitlines()
        if line.strip()
    ]


def test_the_page_s_probe_commands_print_what_the_page_shows(
    tmp_path: Path, chat_server: type[ChatServer], overrating_grader: Grader
) -> None:
    probe_project.build(tmp_path / "project.db")
    [shown] = examples(PAGE, f"tests/e2e/{Path(__file__).name}", "text")
    with chat_server(grader=overrating_grader(long_chars=probe_project.LONG_CHARS)) as server:
        commands = page_commands(server.base_url)
        assert [words[:4] for words in commands] == [
            ["raglabel", "agree", "project.db", "--probe"]
        ] * len(commands)
        done = [run(words, tmp_path) for words in commands]
    for words, result in zip(commands, done, strict=True):
        assert result.returncode == 0, f"{words}\n{result.stdout}\n{result.stderr}"
        assert "Traceback" not in result.stderr
    text, as_json = done
    # The page shows the first command's figures, as printed.
    assert shown.strip() in text.stdout, text.stdout
    data: dict[str, Any] = json.loads(as_json.stdout)
    TypeAdapter(ProbeDocument).validate_python(data)
    schema = json.loads((ROOT / "schemas/agree-probe.schema.json").read_text(encoding="utf-8"))
    assert set(schema["properties"]) == set(data) == {"probe"}
    report = data["probe"]
    assert report["probe"] == "stuffing" and report["stored"] is False
    [model] = report["models"]
    # The overrating judge adds one to every stuffed passage it did not already grade 5.
    assert model["fell"] == 0 and model["rose"] + model["stayed"] == model["compared"]
    assert all(a["perturbed"] == min(5, a["control"] + 1) for a in model["answers"] if a["control"])


def test_an_incomplete_probe_is_refused_before_any_request(
    tmp_path: Path, chat_server: type[ChatServer]
) -> None:
    db = tmp_path / "project.db"
    probe_project.build(db)
    with chat_server() as server:
        missing = run(["raglabel", "agree", str(db), "--probe", "length"], tmp_path)
        unused = run(["raglabel", "agree", str(db), "--model", "m"], tmp_path)
        wrong = run(
            ["raglabel", "agree", str(db), "--probe", "loud", "--base-url", server.base_url],
            tmp_path,
        )
        assert server.count() == 0
    assert missing.returncode == 2 and "--probe: give --base-url URL" in missing.stderr
    assert unused.returncode == 2 and "--model: only with --probe" in unused.stderr
    assert wrong.returncode == 2 and "invalid choice: 'loud'" in wrong.stderr


def test_ctrl_c_prints_the_figures_of_what_came_back_and_exits_130(
    tmp_path: Path, chat_server: type[ChatServer], overrating_grader: Grader
) -> None:
    db = tmp_path / "project.db"
    probe_project.build(db)
    argv = [
        sys.executable, "-m", "raglabel", "agree", str(db), "--probe", "stuffing",
        "--limit", "30", "--concurrency", "1", "--model", "m",
    ]  # fmt: skip
    grader = overrating_grader(long_chars=probe_project.LONG_CHARS)
    with chat_server(latency=0.1, grader=grader) as server:
        child = subprocess.Popen(
            [*argv, "--base-url", server.base_url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 30
        while server.count() < 8 and time.monotonic() < deadline:
            time.sleep(0.05)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=30)
        asked = server.count()
    assert child.returncode == 130, err
    assert asked < 60  # it stopped asking
    assert "interrupted: the figures cover the answers that came back" in out
    compared = int(out.split("compared ", 1)[1].split(" ", 1)[0])
    assert 3 <= compared < 30
    assert "probe answers are not stored" in out
