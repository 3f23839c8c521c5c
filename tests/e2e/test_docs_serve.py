"""The ``raglabel serve`` commands of docs/guide/serve.md, run as written.

The one command that serves until Ctrl+C runs in the background with ``--port 0``
added (a test never depends on port 8000 being free); the check is that it prints where
it serves and that the invite links the other commands printed open a page there.
The nginx example runs in tests/e2e/test_serve_browser.py.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path
from urllib.error import HTTPError
from urllib.request import urlopen

from cli_helpers import start_serving
from docs_pages import examples

from raglabel.storage.demo import build_demo


def section_commands() -> list[list[str]]:
    commands = []
    for block in examples("guide/serve.md", f"tests/e2e/{Path(__file__).name}", "bash"):
        for line in block.splitlines():
            code = line.split("  #", 1)[0].strip()
            if code:
                commands.append(shlex.split(code))
    return commands


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    assert argv[0] == "raglabel", argv
    return subprocess.run(
        [sys.executable, "-m", "raglabel", *argv[1:]],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def served(argv: list[str], cwd: Path) -> str:
    """Start a serving command with --port 0, read where it serves, then stop it."""
    process = subprocess.Popen(
        [sys.executable, "-m", "raglabel", *argv[1:], "--port", "0"],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("serving project.db at "), line + process.stderr.read()
        return line.rsplit(" at ", 1)[1].strip()
    finally:
        process.terminate()
        process.wait(30)


def test_the_serve_commands_do_what_the_page_says(tmp_path: Path) -> None:
    build_demo(tmp_path / "project.db", "owner", answers=False)
    commands = section_commands()
    assert len(commands) == 7
    invites: dict[str, str] = {}
    for argv in commands:
        rest = argv[3:]
        if rest[:1] == ["--add-annotator"]:
            done = run(argv, tmp_path)
            assert done.returncode == 0, done.stderr
            invites[rest[1]] = done.stdout.strip()
            public = rest[rest.index("--public-url") + 1] if "--public-url" in rest else None
            expected = public or "http://127.0.0.1:8000"
            assert invites[rest[1]].startswith(f"{expected}/?invite=")
        elif rest[:1] == ["--list"]:
            done = run(argv, tmp_path)
            assert [line.split("\t")[0] for line in done.stdout.splitlines()] == ["alice", "bob"]
        elif rest[:1] == ["--revoke"]:
            done = run(argv, tmp_path)
            assert done.returncode == 0 and "bob's invite is revoked" in done.stdout
        else:
            url = served(argv, tmp_path)
            if "--public-url" in rest:
                assert url == rest[rest.index("--public-url") + 1] + "/"
            else:
                assert url.startswith("http://127.0.0.1:")
    assert set(invites) == {"alice", "bob"}


def test_an_invite_link_opens_a_page_where_it_is_served(tmp_path: Path) -> None:
    db = tmp_path / "project.db"
    build_demo(db, "owner", answers=False)
    process, url = start_serving(db)
    try:
        invite = run(
            ["raglabel", "serve", str(db), "--add-annotator", "alice", "--public-url", url],
            tmp_path,
        ).stdout.strip()
        with urlopen(invite, timeout=30) as page:
            assert "Signed in as alice" in page.read().decode()
        try:
            urlopen(url, timeout=30)
            raise AssertionError("a page without an invite was served")
        except HTTPError as refused:
            assert refused.code == 401
    finally:
        process.terminate()
        process.communicate(timeout=30)
