"""Fixtures shared by the test files: the demo project, ``raglabel`` run in this process
or as a child, a fake chat-completions server, and the checks of a project file's health.

The helpers behind them live in cli_helpers.py, chat_server.py, integrity.py and
old_schema.py; test files take the fixtures rather than importing those modules.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import chat_server
import cli_helpers
import integrity
import old_schema
import pytest

from raglabel.storage.demo import build_demo
from raglabel.storage.project import Project

#: The annotator whose grades the demo project holds (its first 20 queries).
ME = "ann"


@pytest.fixture(scope="module")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("demo") / "demo.db"
    build_demo(path, ME)
    return path


@pytest.fixture
def demo_db(demo_template: Path, tmp_path: Path) -> Path:
    path = tmp_path / "demo.db"
    shutil.copy(demo_template, path)
    return path


@pytest.fixture(name="cli")
def cli_fixture(capsys: pytest.CaptureFixture[str]) -> cli_helpers.Cli:
    """``raglabel ARGS`` in this process: ``cli("eval", db)`` gives (exit code, stdout,
    stderr), with whatever was printed before it dropped."""

    def run(*args: str | Path) -> tuple[int, str, str]:
        return cli_helpers.cli(capsys, *args)

    return run


@pytest.fixture(name="judge_argv")
def judge_argv_fixture() -> Callable[..., list[str]]:
    """``judge_argv(db, base_url, *extra)``: the argv of ``raglabel judge`` as a child
    process, with model ``m``."""
    return cli_helpers.judge_argv


@pytest.fixture(name="chat_server")
def chat_server_fixture() -> type[chat_server.ChatServer]:
    """The fake chat-completions server: ``with chat_server(latency=0.1) as server:``."""
    return chat_server.ChatServer


@pytest.fixture(name="default_grader")
def default_grader_fixture() -> Callable[[str], int]:
    """The grade the fake chat server gives a request's text when told nothing else."""
    return chat_server.default_grader


@pytest.fixture(name="assert_sound")
def assert_sound_fixture() -> Callable[[Path], None]:
    """``assert_sound(path)``: the project file passes SQLite's checks and its grade cache
    equals the replayed log."""
    return integrity.assert_sound


@pytest.fixture(name="checksum")
def checksum_fixture() -> Callable[[Path], str]:
    """``checksum(path)``: a hash of the project's content, WAL included."""
    return integrity.checksum


@pytest.fixture(name="build_at_version")
def build_at_version_fixture() -> Callable[[Path, int], Project]:
    """``build_at_version(path, version)``: a new file made the way the release of that
    schema version made it, for upgrade tests."""
    return old_schema.build_at_version
