"""Running ``raglabel`` in the test's own process, as several test files do.

Tests take these through the ``cli`` and ``judge_argv`` fixtures of tests/conftest.py.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Protocol

import pytest

from raglabel.cli.main import main


class Cli(Protocol):
    """The ``cli`` fixture: ``cli("eval", db)`` runs ``raglabel eval DB`` in this process."""

    def __call__(self, *args: str | Path) -> tuple[int, str, str]:
        """(exit code, stdout, stderr)."""
        ...


def cli(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``raglabel ARGS``."""
    capsys.readouterr()  # drop anything printed before, e.g. by fixtures
    try:
        code = main([str(a) for a in args])
    except SystemExit as exc:  # argparse and UsageError leave through parser.exit
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def judge_argv(db: Path, base_url: str, *extra: str) -> list[str]:
    """``raglabel judge`` as a child process, with model ``m``, for fault tests."""
    args = [sys.executable, "-m", "raglabel", "judge", str(db), "--base-url", base_url]
    return [*args, "--model", "m", *extra]


def child(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``raglabel ARGS`` as a child process: for what only a fresh interpreter shows
    (start-up imports, exit codes from ``python -m``, the real stdout encoding)."""
    return subprocess.run(
        [sys.executable, "-m", "raglabel", *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        timeout=300,
    )


def start_serving(
    db: Path, *extra: str, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], str]:
    """``raglabel serve DB --port 0`` as a child process, and the URL it says it serves
    at; the caller stops it (and may read its log, on stderr, after)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "raglabel", "serve", str(db), "--port", "0", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("serving "):
        process.kill()
        raise AssertionError(f"serve did not start: {line!r} {process.communicate()[1]}")
    return process, line.rsplit(" at ", 1)[1].strip()


def other_user() -> list[str]:
    """The words that run a command as a user the permission bits bind: none when the
    tests are not root, else ``setpriv`` as ``nobody`` (skipped when either is missing)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("running as root, and there is no 'nobody' user to run as")
    if setpriv is None:
        pytest.skip("running as root, and setpriv (util-linux) is not installed")
    return [setpriv, f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups"]
