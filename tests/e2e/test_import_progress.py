"""The import progress bar: drawn on a terminal, absent from logs and pipes."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "fixtures" / "demo"


def _import(db: Path, stderr: int) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "COLUMNS": "100", "TERM": "xterm"}
    env.pop("CI", None)  # rich stays quiet in CI; this test wants the terminal behaviour
    args = ["--qrels", str(DEMO / "qrels.txt"), "--run", str(DEMO / "runs" / "bm25.run")]
    subprocess.run([sys.executable, "-m", "raglabel", "init", str(db)], check=True)
    return subprocess.run(
        [sys.executable, "-m", "raglabel", "import", str(db), *args],
        stdout=subprocess.PIPE,
        stderr=stderr,
        env=env,
        check=True,
    )


def test_progress_bar_is_drawn_on_a_terminal(tmp_path: Path) -> None:
    leader, follower = pty.openpty()
    try:
        _import(tmp_path / "p.db", stderr=follower)
        os.close(follower)
        drawn = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the pty reports EIO once the writer is gone and it is drained
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        os.close(leader)
    assert "━".encode() in drawn or b"storing run" in drawn


def test_no_progress_bar_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    result = _import(tmp_path / "p.db", stderr=subprocess.PIPE)
    assert result.stderr == b""
    assert b"imported into" in result.stdout
