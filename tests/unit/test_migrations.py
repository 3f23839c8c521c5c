"""Opening project files made by an older raglabel, a newer one, or something else.

``data/project-v1.db`` is a committed file as schema version 1 wrote them (built by
``data/make_v1_project.py``). The tests upgrade copies of it and check that nothing
in it was lost, that the backup beside it is the untouched version-1 file, and that
the new schema's features work on the upgraded file.
"""

from __future__ import annotations

import importlib.util
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from raglabel.errors import InputError
from raglabel.storage.grades import GradeEvent, rebuild_current, record, undo_last
from raglabel.storage.labels import LabelChoice, resolved_labels
from raglabel.storage.project import APPLICATION_ID, Project
from raglabel.storage.runs import SCORE_DTYPE, decode_ids
from raglabel.storage.schema import SCHEMA_VERSION

DATA = Path(__file__).parents[1] / "data"
V1_FILE = DATA / "project-v1.db"
V1_EVENT_COLUMNS = [
    "id",
    "query_id",
    "passage_id",
    "annotator_id",
    "kind",
    "grade",
    "target",
    "note",
    "source",
    "origin",
    "shown_at",
    "graded_at",
    "active_ms",
]
#: What every table of the version-1 file holds, in a fixed order.
CONTENT_QUERIES = {
    "query": "SELECT * FROM query ORDER BY id",
    "passage": "SELECT * FROM passage ORDER BY id",
    "annotator": "SELECT * FROM annotator ORDER BY id",
    "run": "SELECT id, name, source, imported_at, queries, entries FROM run ORDER BY id",
    "ranking": "SELECT run_id, query_id, passage_ids, scores FROM ranking"
    " ORDER BY run_id, query_id",
    "candidate": "SELECT * FROM candidate ORDER BY query_id, passage_id",
    "event": f"SELECT {', '.join(V1_EVENT_COLUMNS)} FROM event ORDER BY id",
    "current_grade": "SELECT * FROM current_grade ORDER BY query_id, passage_id, annotator_id",
}


def _read_only(path: Path) -> sqlite3.Connection:
    # immutable=1: reading must not leave a journal, a WAL or anything else behind.
    return sqlite3.connect(f"file:{path}?immutable=1", uri=True)


def content(path: Path) -> dict[str, list[Any]]:
    conn = _read_only(path)
    try:
        return {table: conn.execute(sql).fetchall() for table, sql in CONTENT_QUERIES.items()}
    finally:
        conn.close()


def header(path: Path) -> tuple[int, int]:
    conn = _read_only(path)
    try:
        return (
            conn.execute("PRAGMA application_id").fetchone()[0],
            conn.execute("PRAGMA user_version").fetchone()[0],
        )
    finally:
        conn.close()


def tables(conn: sqlite3.Connection) -> set[str]:
    return {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


@pytest.fixture
def old_copy(tmp_path: Path) -> Path:
    path = tmp_path / "project.db"
    shutil.copyfile(V1_FILE, path)
    return path


@pytest.fixture
def upgraded(old_copy: Path) -> Iterator[Project]:
    with Project.open(old_copy) as project:
        yield project


# -- the committed file ----------------------------------------------------------------


def test_committed_v1_file_is_one_self_contained_version_1_file() -> None:
    assert sorted(p.name for p in DATA.iterdir() if p.name.startswith("project-v1.")) == [
        "project-v1.db"
    ]
    raw = V1_FILE.read_bytes()
    assert raw.startswith(b"SQLite format 3\x00")
    # Bytes 18-19 are 1 in rollback-journal mode, 2 in WAL mode.
    assert raw[18:20] == b"\x01\x01"
    assert header(V1_FILE) == (APPLICATION_ID, 1)
    conn = _read_only(V1_FILE)
    try:
        assert [row[1] for row in conn.execute("PRAGMA table_info(event)")] == V1_EVENT_COLUMNS
        assert "suggestion" not in tables(conn)
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        conn.close()


def _load_builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_v1_project", DATA / "make_v1_project.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_v1_file_is_what_its_script_builds(tmp_path: Path) -> None:
    # The file and its script must not drift apart: the script documents the file.
    rebuilt = tmp_path / "rebuilt.db"
    _load_builder().build(rebuilt)
    assert content(rebuilt) == content(V1_FILE)
    assert header(rebuilt) == header(V1_FILE)


def test_v1_file_matches_build_at_version(
    tmp_path: Path, build_at_version: Callable[[Path, int], Project]
) -> None:
    built = tmp_path / "built.db"
    build_at_version(built, 1).close()
    schema = "SELECT type, name, sql FROM sqlite_master ORDER BY name"
    fresh, committed = _read_only(built), _read_only(V1_FILE)
    try:
        assert fresh.execute(schema).fetchall() == committed.execute(schema).fetchall()
    finally:
        fresh.close()
        committed.close()


# -- upgrading -------------------------------------------------------------------------


def test_upgrade_keeps_everything(old_copy: Path) -> None:
    before = content(old_copy)
    with Project.open(old_copy) as project:
        assert project.version == SCHEMA_VERSION
        assert project.conn.execute("PRAGMA application_id").fetchone() == (APPLICATION_ID,)
        # Old events have no value for the new columns.
        assert project.conn.execute(
            "SELECT DISTINCT model, accepted_suggestion FROM event"
        ).fetchall() == [(None, None)]
        assert "suggestion" in tables(project.conn)
        assert project.conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert header(old_copy) == (APPLICATION_ID, SCHEMA_VERSION)
    assert content(old_copy) == before
    assert len(before["event"]) == 10
    assert len(before["current_grade"]) == 4


def stored_run(conn: sqlite3.Connection, run: str) -> list[tuple[str, list[str], list[float]]]:
    """``(query id, passage ids, scores)`` of a stored run, by query id."""
    rows = conn.execute(
        "SELECT q.ext_id, r.passage_ids, r.scores FROM ranking r JOIN query q ON q.id = r.query_id"
        " JOIN run ON run.id = r.run_id WHERE run.name = ? ORDER BY q.ext_id",
        (run,),
    )
    return [
        (qid, decode_ids(ids), np.frombuffer(scores, dtype=SCORE_DTYPE).tolist())
        for qid, ids, scores in rows
    ]


def test_upgraded_file_reads_as_before(upgraded: Project) -> None:
    conn = upgraded.conn
    assert stored_run(conn, "bm25") == [
        ("q1", ["d1", "d2", "d3"], [12.5, 7.25, 3.0]),
        ("q2", ["d3", "d1"], [9.0, 1.5]),
    ]
    resolved = resolved_labels(conn, LabelChoice())
    qrels = resolved.qrels
    labels = {(q, p): g for q, p, g in zip(qrels.qids, qrels.docids, qrels.grades, strict=True)}
    # q1/d1: alice 3 (her 5 was undone) and bob 4 -> lower median 3; bob cleared q1/d2.
    assert labels == {("q1", "d1"): 3, ("q2", "d3"): 1}
    # The cache version 1 kept is what the log says.
    cached = conn.execute("SELECT * FROM current_grade ORDER BY 1, 2, 3").fetchall()
    with upgraded.write():
        rebuild_current(conn)
    assert conn.execute("SELECT * FROM current_grade ORDER BY 1, 2, 3").fetchall() == cached


def test_upgraded_schema_equals_a_new_projects(upgraded: Project, tmp_path: Path) -> None:
    schema = "SELECT type, name, sql FROM sqlite_master ORDER BY name"
    with Project.create(tmp_path / "new.db") as new:
        assert upgraded.conn.execute(schema).fetchall() == new.conn.execute(schema).fetchall()


def test_backup_is_the_version_1_file(old_copy: Path) -> None:
    original = old_copy.read_bytes()
    before = content(old_copy)
    with Project.open(old_copy) as project:
        backup = project.backup
    assert backup == old_copy.with_name("project.db.v1.bak")
    assert backup.is_file()
    assert header(backup) == (APPLICATION_ID, 1)
    assert content(backup) == before
    conn = _read_only(backup)
    try:
        assert [row[1] for row in conn.execute("PRAGMA table_info(event)")] == V1_EVENT_COLUMNS
        assert "suggestion" not in tables(conn)
    finally:
        conn.close()
    # Page for page the file as it was: only the 100-byte header (change counter,
    # journal mode, schema cookie) may differ.
    copied = backup.read_bytes()
    assert len(copied) == len(original)
    assert copied[100:] == original[100:]


def test_backup_opens_with_the_old_schema_intact(old_copy: Path) -> None:
    with Project.open(old_copy) as project:
        backup = project.backup
    assert backup is not None
    # Restoring is copying the backup back; it then upgrades like the original did.
    restored = old_copy.with_name("restored.db")
    shutil.copyfile(backup, restored)
    with Project.open(restored) as again:
        assert again.version == SCHEMA_VERSION
        assert again.backup == restored.with_name("restored.db.v1.bak")
    assert content(restored) == content(backup)


def test_opening_again_makes_no_second_backup(old_copy: Path) -> None:
    Project.open(old_copy).close()
    with Project.open(old_copy) as again:
        assert again.backup is None
        assert again.version == SCHEMA_VERSION
    assert sorted(p.name for p in old_copy.parent.glob("*.bak")) == ["project.db.v1.bak"]


def test_an_existing_backup_is_never_overwritten(old_copy: Path) -> None:
    taken = old_copy.with_name("project.db.v1.bak")
    taken.write_bytes(b"someone's own file")
    with Project.open(old_copy) as project:
        backup = project.backup
    assert taken.read_bytes() == b"someone's own file"
    assert backup is not None
    assert backup != taken
    assert backup.name.startswith("project.db.v1.")
    assert backup.name.endswith(".bak")
    assert header(backup) == (APPLICATION_ID, 1)


def test_new_features_work_after_upgrade(upgraded: Project) -> None:
    conn = upgraded.conn
    with upgraded.write():
        conn.execute(
            "INSERT INTO suggestion (query_id, passage_id, model, grade, reason, created_at)"
            " VALUES (1, 3, 'judge-1', 4, 'mentions export', '2024-06-01')"
        )
    accepted = record(
        upgraded,
        GradeEvent(query="q1", passage="d3", annotator="carol", grade=4, accepted_suggestion=True),
    )
    judged = record(
        upgraded,
        GradeEvent(query="q1", passage="d3", annotator="judge", grade=2, source="judge", model="m"),
    )
    assert accepted.event_id == 11
    assert judged.event_id == 12
    assert conn.execute(
        "SELECT kind, grade, source, model, accepted_suggestion FROM event WHERE id >= 11"
    ).fetchall() == [("grade", 4, "human", None, 1), ("grade", 2, "judge", "m", None)]
    resolved = resolved_labels(conn, LabelChoice(fill_with_judge=True))
    assert resolved.judge_filled == 0
    # Old events are still undoable after the upgrade: alice's latest is her skip.
    undone = undo_last(upgraded, "alice")
    assert undone is not None
    assert (undone.query, undone.passage, undone.grade) == ("q2", "d2", None)
    assert conn.execute("SELECT target FROM event WHERE id = ?", (undone.event_id,)).fetchone() == (
        8,
    )


# -- files that are refused ------------------------------------------------------------


def test_a_newer_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    Project.create(path).close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(InputError, match=r"newer raglabel \(schema 99.*upgrade raglabel"):
        Project.open(path)
    assert header(path) == (APPLICATION_ID, 99)
    assert list(tmp_path.glob("*.bak")) == []


def test_a_file_that_is_not_sqlite_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("these are my notes, not a database\n" * 50)
    with pytest.raises(InputError, match="is not a SQLite database"):
        Project.open(path)
    assert path.read_text() == "these are my notes, not a database\n" * 50


def test_a_sqlite_file_that_is_not_a_project_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE things (x)")
    conn.commit()
    conn.close()
    original = path.read_bytes()
    with pytest.raises(InputError, match="is a SQLite file but not a raglabel project"):
        Project.open(path)
    # Refused before anything was written: not even switched to WAL.
    assert path.read_bytes() == original
    assert list(tmp_path.glob("*.bak")) == []


def test_a_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such project file"):
        Project.open(tmp_path / "missing.db")
    assert not (tmp_path / "missing.db").exists()


def test_create_never_overwrites(tmp_path: Path, old_copy: Path) -> None:
    original = old_copy.read_bytes()
    with pytest.raises(InputError, match="already exists"):
        Project.create(old_copy)
    assert old_copy.read_bytes() == original
    with pytest.raises(InputError, match="does not exist"):
        Project.create(tmp_path / "no-such-dir" / "p.db")


def test_create_makes_a_current_project(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    with Project.create(path) as project:
        assert project.version == SCHEMA_VERSION
        assert project.backup is None
        assert project.conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert header(path) == (APPLICATION_ID, SCHEMA_VERSION)
