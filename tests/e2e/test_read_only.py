"""A project in a read-only folder, or a read-only project file: the commands that only
read it (eval, report, export, backup, agree, progress, assign --list, audit --list, and
``raglabel.open_project``) work, and those that must write it (import, label, judge,
serve, init) say what is read-only, exit 1 and leave every file as it was.

How read-only is made honest here: these tests run as root, and root writes through any
permission bit, so ``chmod`` alone would prove nothing. Each command therefore runs as a
child process of the unprivileged ``nobody`` user (``setpriv --reuid``, util-linux), which
the permission bits do bind: the very situation of a user given a folder they may only
read. Run as an ordinary user, the tests run the commands directly, for whom ``chmod`` is
enough. Where neither is possible (root without ``setpriv`` or a ``nobody`` user), they
are skipped, never faked.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest
from cli_helpers import other_user

from raglabel.errors import StorageError
from raglabel.storage.project import Project, _connect_read_only

if TYPE_CHECKING:
    from cli_helpers import Cli

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "fixtures" / "demo" / "runs" / "bm25.run"


class Place:
    """A folder the other user can reach: ``ro`` holds the project and may be made
    read-only; ``out`` and ``home`` are theirs to write."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.ro = base / "ro"
        self.out = base / "out"
        self.home = base / "home"
        self.prefix = other_user()

    def run(self, *args: str | Path, code: str | None = None) -> subprocess.CompletedProcess[str]:
        """``raglabel ARGS`` (or ``python -c CODE``) as the other user, in ``out``."""
        argv = ["-c", code] if code is not None else ["-m", "raglabel", *map(str, args)]
        env = {**os.environ, "HOME": str(self.home), "RAGLABEL_ALLOW_NO_TTY": "1"}
        return subprocess.run(
            [*self.prefix, sys.executable, *argv],
            capture_output=True,
            text=True,
            check=False,
            cwd=self.out,
            env=env,
            stdin=subprocess.DEVNULL,
            timeout=300,
        )

    def listing(self) -> dict[str, str]:
        return {
            path.name: hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(self.ro.iterdir())
        }


@pytest.fixture
def place(demo_template: Path) -> Iterator[Place]:
    # Not tmp_path: pytest makes its folders for root alone, which nobody cannot enter.
    base = Path(tempfile.mkdtemp(prefix="raglabel-ro-"))
    here = Place(base)
    try:
        base.chmod(0o755)
        here.ro.mkdir()
        for folder in (here.out, here.home):
            folder.mkdir()
            folder.chmod(0o777)
        shutil.copy(demo_template, here.ro / "demo.db")
        (here.ro / "demo.db").chmod(0o644)
        yield here
    finally:
        for path in (here.ro, *here.ro.glob("*")):
            path.chmod(0o755)
        shutil.rmtree(base)


def lock(place: Place) -> Path:
    """The project read-only, folder and file; its path."""
    db = place.ro / "demo.db"
    db.chmod(0o444)
    place.ro.chmod(0o555)
    return db


def test_reading_commands_work_in_a_read_only_folder(
    place: Place, cli: Cli, tmp_path: Path
) -> None:
    shutil.copy(place.ro / "demo.db", tmp_path / "writable.db")
    code, expected, err = cli("eval", tmp_path / "writable.db", "--format", "json")
    assert code == 0, err
    db = lock(place)
    before = place.listing()
    assert before.keys() == {"demo.db"}

    done = place.run("eval", db, "--format", "json")
    assert done.returncode == 0, done.stderr
    # The numbers of the same file read where it could be written.
    assert json.loads(done.stdout)["runs"] == json.loads(expected)["runs"]
    assert "not a SQLite database" not in done.stderr
    # Read without locks: every command says what that assumes (eval in its JSON too).
    unlocked = "is read as it stands (SQLite immutable)"
    assert unlocked in done.stderr
    assert any(unlocked in w for w in json.loads(done.stdout)["warnings"])

    done = place.run("report", db, "-o", place.out / "report.html")
    assert done.returncode == 0, done.stderr
    assert (place.out / "report.html").read_text().startswith("<!DOCTYPE html>")
    assert unlocked in done.stderr

    done = place.run("export", db, "--qrels", place.out / "labels.txt")
    assert done.returncode == 0, done.stderr
    assert len((place.out / "labels.txt").read_text().splitlines()) > 100
    assert f"raglabel export: warning: {db} {unlocked}" in done.stderr

    done = place.run("backup", db, place.out / "copy.db")
    assert done.returncode == 0, done.stderr
    assert f"raglabel backup: warning: {db} {unlocked}" in done.stderr
    with Project.open(place.out / "copy.db") as copy:
        assert copy.conn.execute("SELECT count(*) FROM query").fetchone()[0] == 30

    done = place.run("agree", db, "--format", "json")
    assert done.returncode == 0, done.stderr
    assert f"raglabel agree: warning: {db} {unlocked}" in done.stderr

    # Nothing was written, nor made beside the file (no -wal, no -shm).
    assert place.listing() == before


@pytest.mark.parametrize(
    "command",
    [
        ["import", "{db}", "--run", f"x={RUN}"],
        ["label", "{db}"],
        ["judge", "{db}", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"],
        ["serve", "{db}", "--port", "0"],
    ],
    ids=lambda words: words[0],
)
def test_writing_commands_say_what_is_read_only(place: Place, command: list[str]) -> None:
    db = lock(place)
    before = place.listing()
    done = place.run(*(word.format(db=db) for word in command))
    assert done.returncode == 1, done.stderr
    err = done.stderr
    assert f"raglabel {command[0]}: error: nothing was saved: {db} is read-only" in err
    assert f"the folder {place.ro} is read-only, and SQLite must create demo.db-wal" in err
    assert "not a SQLite database" not in err and "Traceback" not in err
    assert place.listing() == before


def test_init_in_a_read_only_folder_says_so(place: Place) -> None:
    lock(place)
    done = place.run("init", place.ro / "new.db")
    assert done.returncode == 1
    assert done.stderr == (
        f"raglabel init: error: nothing was created: the folder {place.ro} is read-only\n"
    )
    assert not (place.ro / "new.db").exists()


def test_a_read_only_file_in_a_folder_one_may_write(place: Place) -> None:
    db = place.ro / "demo.db"
    db.chmod(0o444)
    place.ro.chmod(0o777)
    done = place.run("import", db, "--run", f"x={RUN}")
    assert done.returncode == 1
    assert f"nothing was saved: {db} is read-only. Commands that only read it work" in done.stderr
    assert "folder" not in done.stderr.split("Commands")[0]
    done = place.run("eval", db, "--format", "json")
    assert done.returncode == 0, done.stderr


def _with_unfolded_log(source: Path, target: Path, *, shm: bool) -> None:
    """``target`` as a copy of the project taken while a write sits in its -wal (a
    copied folder, or a grader's app killed): the query q01 reads CHANGED only there."""
    conn = sqlite3.connect(source, isolation_level=None)
    try:
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        conn.execute("UPDATE query SET text = 'CHANGED' WHERE ext_id = 'q01'")
        suffixes = ["", "-wal", "-shm"] if shm else ["", "-wal"]
        for suffix in suffixes:
            shutil.copy(f"{source}{suffix}", f"{target}{suffix}")
    finally:
        conn.close()
    for suffix in suffixes:
        Path(f"{target}{suffix}").chmod(0o444)


READ_Q01 = """
import sys, warnings
import raglabel
warnings.simplefilter("always")
try:
    with warnings.catch_warnings(record=True) as caught:
        with raglabel.open_project(sys.argv[1]) as project:
            texts = {q["query_id"]: q["text"] for q in project.queries()}
    print(texts["q01"])
    for w in caught:
        print(w.category.__name__, w.message)
except ValueError as exc:
    print("ValueError", exc)
"""


def read_q01(place: Place, db: Path) -> str:
    done = place.run(code=READ_Q01.replace("sys.argv[1]", repr(str(db))))
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_log_with_writes_and_no_index_is_refused_saying_what_to_do(
    place: Place, tmp_path: Path
) -> None:
    source = tmp_path / "source.db"
    shutil.copy(place.ro / "demo.db", source)
    (place.ro / "demo.db").unlink()
    db = place.ro / "demo.db"
    _with_unfolded_log(source, db, shm=False)
    place.ro.chmod(0o555)
    before = place.listing()
    done = place.run("eval", db)
    assert done.returncode == 2
    assert "demo.db-wal beside it holds writes not yet copied into the file" in done.stderr
    assert "Copy demo.db and demo.db-wal together into a folder you can write" in done.stderr
    said = read_q01(place, db)
    assert said.startswith("ValueError ") and "holds writes not yet copied" in said
    assert place.listing() == before
    # What the message says to do works: the copy holds the write.
    for name in ("demo.db", "demo.db-wal"):
        shutil.copy(place.ro / name, place.out / name)
        (place.out / name).chmod(0o666)
    assert read_q01(place, place.out / "demo.db").splitlines() == ["CHANGED"]


def test_a_log_with_its_index_beside_it_reads_the_newest_writes(
    place: Place, tmp_path: Path
) -> None:
    source = tmp_path / "source.db"
    shutil.copy(place.ro / "demo.db", source)
    (place.ro / "demo.db").unlink()
    db = place.ro / "demo.db"
    _with_unfolded_log(source, db, shm=True)
    place.ro.chmod(0o555)
    assert read_q01(place, db).splitlines() == ["CHANGED"]


def test_open_project_reads_a_read_only_folder_and_says_how(place: Place) -> None:
    db = lock(place)
    lines = read_q01(place, db).splitlines()
    assert lines[0] == "How long does Vault keep deleted files on the Business plan?"
    assert len(lines) == 2
    assert lines[1].startswith(f"RaglabelWarning {db} is read as it stands (SQLite immutable)")


def test_an_older_file_in_a_read_only_folder_says_it_needs_an_upgrade(place: Place) -> None:
    (place.ro / "demo.db").unlink()
    db = place.ro / "old.db"
    shutil.copy(ROOT / "tests" / "data" / "project-v1.db", db)
    lock_folder = place.ro
    lock_folder.chmod(0o555)
    done = place.run("eval", db)
    assert done.returncode == 2
    assert "was written by an older raglabel (schema 1)" in done.stderr
    assert f"the folder {place.ro} is read-only" in done.stderr
    assert "copy it (with its -wal file, if there is one) into a folder you can write" in (
        done.stderr
    )


def test_reading_opens_the_file_read_only_whatever_its_name(tmp_path: Path) -> None:
    """Runs as any user: what a reading command opens cannot write, and a path with
    the characters a URI gives a meaning to (?, #, %, a space) opens as itself."""
    folder = tmp_path / "a folder?#%20"
    folder.mkdir()
    db = folder / "p.db"
    with Project.create(db) as project:
        project.conn.execute("INSERT INTO query (ext_id, text) VALUES ('q', 'text')")
    with Project.open_read(db) as project:
        assert project.conn.execute("SELECT ext_id FROM query").fetchall() == [("q",)]
        assert not project.immutable
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            project.conn.execute("INSERT INTO query (ext_id) VALUES ('r')")
    text = tmp_path / "notes.db"
    text.write_text("not a database at all, but long enough to have a header\n" * 10)
    with pytest.raises(Exception, match="is not a SQLite database"):
        Project.open_read(text)


class _WriterMeanwhile:
    """A connection whose backup is joined by a write to the file, as the folder's owner
    could make while an unlocked reader copies it."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn = conn
        self._path = path

    def backup(self, target: sqlite3.Connection) -> None:
        self._conn.backup(target)
        later = time.time_ns() + 10**9
        os.utime(self._path, ns=(later, later))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def test_a_backup_read_without_locks_refuses_a_file_that_changed_under_it(
    place: Place, tmp_path: Path
) -> None:
    # This process is root, for whom no folder is read-only, so the project is opened
    # as open_read opens it in one (immutable, without locks).
    db = place.ro / "demo.db"
    conn = _connect_read_only(db, immutable=True)
    project = Project(conn, db)
    project.immutable = True
    project.conn = cast(sqlite3.Connection, _WriterMeanwhile(conn, db))
    with pytest.raises(StorageError, match="changed while it was copied without locks"):
        project.backup_to(tmp_path / "copy.db")
    conn.close()
    assert list(tmp_path.glob("copy.db*")) == []
