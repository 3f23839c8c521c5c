"""``raglabel audit`` as a child process: a draw printed with its seed and made again
from it, a later draw that extends the sample, bad sizes refused with exit 2 and nothing
written, and a read-only project refused for a draw (exit 1, every file as it was) while
``--list`` reads it; and the commands of docs/guide/audit.md, run as written.

Read-only is made honest as in test_read_only.py: run as root, the command runs as the
unprivileged ``nobody`` user (``setpriv``), whom the permission bits bind; skipped, never
faked, where that is not possible.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import child, other_user
from docs_pages import examples

from raglabel.storage.audit import covered_queries, draw_order
from raglabel.storage.demo import build_demo

DRAWN = re.compile(r"drew (\d+) quer(?:y|ies) \(seed (\d+)\): (.*)")


def covered(db: Path) -> list[str]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return covered_queries(conn)
    finally:
        conn.close()


def members(db: Path) -> int:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT count(*) FROM audit_member").fetchone()[0])
    finally:
        conn.close()


def test_a_draw_prints_its_seed_and_the_seed_makes_it_again(
    demo_db: Path, demo_template: Path
) -> None:
    population = covered(demo_db)
    done = child("audit", demo_db, "--sample", "5")
    assert done.returncode == 0, done.stderr
    found = DRAWN.fullmatch(done.stdout.strip())
    assert found is not None, done.stdout
    count, seed, drawn = int(found[1]), int(found[2]), found[3].split()
    assert count == 5 and drawn == draw_order(population, seed)[:5]
    # The same seed on a fresh copy of the same project draws the same queries.
    again = demo_db.with_name("again.db")
    shutil.copy(demo_template, again)
    done = child("audit", again, "--sample", "5", "--seed", str(seed))
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"drew 5 queries (seed {seed}): {' '.join(drawn)}\n"
    # A later draw takes only queries not drawn yet.
    done = child("audit", demo_db, "--sample", "3", "--seed", "1", "--format", "json")
    assert done.returncode == 0, done.stderr
    later = json.loads(done.stdout)
    left = [q for q in population if q not in drawn]
    assert later == {"seed": 1, "population": len(left), "drawn": draw_order(left, 1)[:3]}
    done = child("audit", demo_db, "--list")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"draw 1: 5 of {len(population)} queries, seed {seed}, ")
    assert lines[0].endswith(f": {' '.join(drawn)}")
    assert lines[1].startswith(f"draw 2: 3 of {len(left)} queries, seed 1, ")
    assert lines[2] == (
        "audit 0/8 complete (every passage in a stored run's top 20 graded by a person)"
    )
    assert lines[3] == f"incomplete: {' '.join(drawn + later['drawn'])}"


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["--sample", "0"], "argument --sample: must be a whole number from 1 to"),
        (
            ["--sample", "-3"],
            "argument --sample: must be a whole number from 1 to 1,000,000,000, got -3",
        ),
        (["--sample", "ten"], "argument --sample: 'ten' is not a whole number"),
        (["--sample", "31"], "--sample 31: only 30 queries are left to draw (30 covered"),
        (["--sample", "2", "--seed", "-1"], "argument --seed: must be a whole number from 0"),
        (["--sample", "2", "--depth", "5"], "--depth goes with --list"),
        (["--list", "--seed", "4"], "--seed goes with --sample, not --list"),
        (["--list", "--sample", "2"], "argument --sample: not allowed with argument --list"),
        ([], "one of the arguments --sample --list is required"),
    ],
)
def test_bad_requests_exit_2_and_draw_nothing(
    demo_db: Path, words: list[str], message: str
) -> None:
    done = child("audit", demo_db, *words)
    assert done.returncode == 2, done.stdout
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
    assert members(demo_db) == 0


@pytest.fixture
def locked(demo_template: Path) -> Iterator[tuple[Path, list[str]]]:
    """The demo project with one draw, read-only, file and folder; and the words that
    run a command as a user that binds."""
    prefix = other_user()
    # Not tmp_path: pytest makes its folders for root alone, which nobody cannot enter.
    base = Path(tempfile.mkdtemp(prefix="raglabel-audit-ro-"))
    folder = base / "ro"
    try:
        base.chmod(0o755)
        folder.mkdir()
        db = folder / "demo.db"
        shutil.copy(demo_template, db)
        done = child("audit", db, "--sample", "2", "--seed", "3")
        assert done.returncode == 0, done.stderr
        conn = sqlite3.connect(db)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        for leftover in folder.glob("demo.db-*"):
            leftover.unlink()
        db.chmod(0o444)
        folder.chmod(0o555)
        yield db, prefix
    finally:
        folder.chmod(0o755)
        shutil.rmtree(base)


def _listing(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def test_a_read_only_project_refuses_a_draw_and_lists_its_draws(
    locked: tuple[Path, list[str]],
) -> None:
    db, prefix = locked
    before = _listing(db.parent)

    def run(*words: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*prefix, sys.executable, "-m", "raglabel", "audit", str(db), *words],
            capture_output=True,
            text=True,
            check=False,
            cwd=tempfile.gettempdir(),
            timeout=300,
        )

    done = run("--sample", "1", "--seed", "5")
    assert done.returncode == 1, done.stderr
    assert f"raglabel audit: error: nothing was saved: {db} is read-only" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert _listing(db.parent) == before
    done = run("--list", "--format", "json")
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert [d["seed"] for d in listed["draws"]] == [3]
    assert len(listed["incomplete"]) == 2
    assert "is read as it stands (SQLite immutable)" in done.stderr
    assert _listing(db.parent) == before


def test_the_pages_commands_print_what_the_page_says(tmp_path: Path) -> None:
    here = f"tests/e2e/{Path(__file__).name}"
    [commands] = examples("guide/audit.md", here, "bash")
    [printed] = examples("guide/audit.md", here, "text")
    build_demo(tmp_path / "project.db", "owner")
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    outputs = []
    for line in commands.splitlines():
        done = subprocess.run(
            shlex.split(line), capture_output=True, text=True, cwd=tmp_path, env=env, check=False
        )
        assert done.returncode == 0, f"{line}\n{done.stderr}"
        outputs.append(done.stdout)
    assert outputs[0] == printed
    second = DRAWN.fullmatch(outputs[1].strip())
    assert second is not None and second[1] == "5"
    listed = json.loads(outputs[3])
    assert [d["seed"] for d in listed["draws"]] == [7, int(second[2])]
    assert [d["population"] for d in listed["draws"]] == [30, 20]
    assert listed["incomplete"] == printed.split(": ")[1].split() + second[3].split()
    assert outputs[2].splitlines()[2] == (
        "audit 0/15 complete (every passage in a stored run's top 20 graded by a person)"
    )
