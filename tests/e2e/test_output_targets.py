"""Where an output lands when its path is not a plain file: a symlink keeps pointing
at the file it names, and a pipe or /dev/stdout receives the text instead of being
replaced by a file of that name."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from cli_helpers import Cli, child

from raglabel.formats.output import atomic_text


def test_a_symlinked_output_replaces_the_file_it_names(demo_db: Path, cli: Cli) -> None:
    real = demo_db.with_name("grades.jsonl")
    real.write_text("old\n")
    link = demo_db.with_name("latest.jsonl")
    link.symlink_to(real)
    code, _, err = cli("export", demo_db, "--jsonl", link)
    assert code == 0, err
    assert link.is_symlink() and link.resolve() == real
    assert real.read_text() != "old\n" and real.read_text().count("\n") > 100
    assert not [p for p in demo_db.parent.iterdir() if ".tmp-" in p.name]


def test_a_pipe_is_written_through(demo_db: Path, cli: Cli) -> None:
    fifo = demo_db.with_name("grades.pipe")
    os.mkfifo(fifo)
    got: list[bytes] = []
    # A daemon: were the pipe replaced by a file, nothing would ever open it to write.
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    code, _, err = cli("export", demo_db, "--jsonl", fifo)
    reader.join(10)
    assert code == 0, err
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert got and got[0].count(b"\n") > 100


def test_the_processs_own_stdout_is_written_through(demo_db: Path) -> None:
    # /proc/self/fd/1 rather than /dev/stdout: code that replaced its target would,
    # run as root, replace the machine's /dev/stdout link; under /proc it only fails.
    done = child("export", demo_db, "--jsonl", "/proc/self/fd/1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") > 100 and done.stdout.startswith("{")


def test_the_processs_stdout_keeps_what_was_written_before(demo_db: Path) -> None:
    # `raglabel export DB --jsonl /dev/stdout >> log`: the log keeps its earlier lines.
    log = demo_db.with_name("log.txt")
    log.write_text("previous\n")
    with log.open("a") as appended:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "raglabel",
                "export",
                str(demo_db),
                "--jsonl",
                "/proc/self/fd/1",
            ],
            stdout=appended,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    text = log.read_text()
    assert text.startswith("previous\n{") and text.count("\n") > 100


@pytest.mark.skipif(not Path("/dev/shm").is_dir(), reason="no /dev/shm here")
def test_a_regular_file_under_dev_is_still_replaced_whole() -> None:
    target = Path("/dev/shm") / f"raglabel-{os.getpid()}.txt"
    target.write_text("kept\n")
    try:
        with pytest.raises(RuntimeError), atomic_text(target) as handle:
            handle.write("HALF")
            raise RuntimeError("the write fails halfway")
        assert target.read_text() == "kept\n"
        with atomic_text(target) as handle:
            handle.write("whole\n")
        assert target.read_text() == "whole\n"
    finally:
        target.unlink(missing_ok=True)
