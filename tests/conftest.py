"""Fixtures shared by the test files: the demo project, an empty one, ``raglabel`` run in
this process or as a child, a fake chat-completions server, and the checks of a project
file's health.

The helpers behind them live in cli_helpers.py, chat_server.py, integrity.py and
old_schema.py; test files take the fixtures rather than importing those modules.
"""

# ruff: noqa: E402 (the bytecode switch below comes before the imports it is for)

from __future__ import annotations

import sys

# The suite keeps the bytecode of raglabel, of the helpers here and of the test modules
# (pytest's rewritten ones) in __pycache__, even when the shell sets
# PYTHONDONTWRITEBYTECODE: without it every pytest process, and each xdist worker, compiles
# them all again, some 5 s of CPU per process (docs/tests.md). Set before the imports
# below, which are the first of raglabel's; child processes keep the variable and only
# read what is kept.
sys.dont_write_bytecode = False

import shutil
from collections.abc import Callable
from pathlib import Path

import chat_server
import cli_helpers
import examples
import integrity
import old_schema
import pytest

from raglabel.storage.demo import build_demo
from raglabel.storage.project import Project

# Hypothesis' profiles, "quick" by default: tests/examples.py.
examples.register()

#: The annotator whose grades the demo project holds (its first 20 queries).
ME = "ann"


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo project, built once per pytest process (each xdist worker) rather than per
    test module, some 0.3 s each: tests only copy it (demo_db)."""
    path = tmp_path_factory.mktemp("demo") / "demo.db"
    build_demo(path, ME)
    return path


@pytest.fixture
def demo_db(demo_template: Path, tmp_path: Path) -> Path:
    path = tmp_path / "demo.db"
    shutil.copy(demo_template, path)
    return path


@pytest.fixture(scope="session")
def empty_project_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new, empty project made once per process by Project.create, for empty_project to
    copy; its log is folded into the one file when it closes."""
    path = tmp_path_factory.mktemp("empty") / "empty.db"
    Project.create(path).close()
    assert not [p.name for p in path.parent.iterdir() if p != path], "a -wal or -shm file"
    return path


@pytest.fixture
def empty_project(empty_project_template: Path, tmp_path: Path) -> Path:
    """``tmp_path / "p.db"``: a new, empty project, a copy of the template. Project.create
    waits for the disk, tens of milliseconds a test; the copy is what it makes
    (tests/unit/test_empty_project.py compares the two)."""
    path = tmp_path / "p.db"
    shutil.copyfile(empty_project_template, path)
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


@pytest.fixture(name="overrating_grader")
def overrating_grader_fixture() -> Callable[..., Callable[[str], int]]:
    """``overrating_grader(long_chars=N)``: a grader for the fake chat server that rates
    long passages and passages holding the query's words higher (for probes)."""
    return chat_server.overrating_grader


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


#: Test files that time what they do (a deadline, a count of retries within a window), or
#: start Chromium, nginx or many processes that load both cores. Under pytest-xdist
#: (``pytest -n auto``, with ``--dist loadgroup`` from pyproject.toml) they all run on one
#: worker, one after another, so none of them times itself against another's load; the
#: other workers take the in-process tests meanwhile. Paths under tests/.
ONE_AT_A_TIME = frozenset(
    {
        "app/test_app.py",
        "e2e/test_chat_server.py",
        "e2e/test_concurrency.py",
        "e2e/test_crash.py",
        "e2e/test_crowd.py",
        "e2e/test_docs_serve.py",
        "e2e/test_judge_answers_cli.py",
        "e2e/test_judge_cli.py",
        "e2e/test_report_browser.py",
        "e2e/test_serve.py",
        "e2e/test_serve_browser.py",
        "e2e/test_serve_sessions.py",
        "e2e/test_serve_tabs.py",
        "e2e/test_team_done_when.py",
        "unit/judge/test_judge_client.py",
        "unit/judge/test_judge_runner.py",
    }
)


def pytest_report_header() -> str:
    return examples.header()


# First: xdist reads the group marks in a hook of the same name.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    tests = Path(__file__).parent
    for item in items:
        if item.path.relative_to(tests).as_posix() in ONE_AT_A_TIME:
            item.add_marker(pytest.mark.xdist_group("one-at-a-time"))
