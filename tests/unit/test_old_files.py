"""A file from every earlier schema version opens, upgrades, and keeps every grade, and
everything of today works on it: the grading session, eval, the judge, agree, export.

``data/project-v1.db`` and ``data/project-v2.db`` are committed files as those versions
wrote them (``data/make_v1_project.py``, ``data/make_v2_project.py``);
``test_migrations.py`` covers the upgrade mechanics on the first in depth.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from raglabel.session.grading import GradingSession
from raglabel.session.options import AppOptions
from raglabel.storage.invites import invites
from raglabel.storage.project import Project
from raglabel.storage.schema import MIGRATIONS, SCHEMA_VERSION

if TYPE_CHECKING:
    from chat_server import ChatServer
    from cli_helpers import Cli

DATA = Path(__file__).parents[1] / "data"
OLD = {version: DATA / f"project-v{version}.db" for version in range(1, SCHEMA_VERSION)}
KEPT = {
    "event": "SELECT id, query_id, passage_id, annotator_id, kind, grade, target, note, source,"
    " origin, shown_at, graded_at, active_ms FROM event ORDER BY id",
    "current_grade": "SELECT * FROM current_grade ORDER BY query_id, passage_id, annotator_id",
    "query": "SELECT * FROM query ORDER BY id",
    "passage": "SELECT * FROM passage ORDER BY id",
    "ranking": "SELECT run_id, query_id, passage_ids, scores FROM ranking"
    " ORDER BY run_id, query_id",
}


def read(path: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


@pytest.fixture(params=sorted(OLD), ids=lambda v: f"v{v}")
def old(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[int, Path]:
    version: int = request.param
    path = tmp_path / "old.db"
    shutil.copyfile(OLD[version], path)
    return version, path


def test_every_earlier_version_has_a_committed_file() -> None:
    assert sorted(OLD) == [m.version for m in MIGRATIONS][:-1]
    for version, path in OLD.items():
        assert read(path, "PRAGMA user_version") == [(version,)]


def test_v2_file_is_what_its_script_builds(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("make_v2_project", DATA / "make_v2_project.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rebuilt = tmp_path / "rebuilt.db"
    module.build(rebuilt)
    for sql in (*KEPT.values(), "SELECT * FROM suggestion ORDER BY id"):
        assert read(rebuilt, sql) == read(OLD[2], sql)


def test_upgrade_keeps_every_grade(
    old: tuple[int, Path], assert_sound: Callable[[Path], None]
) -> None:
    version, path = old
    before = {name: read(path, sql) for name, sql in KEPT.items()}
    suggestions = read(path, "SELECT * FROM suggestion ORDER BY id") if version >= 2 else []
    with Project.open(path) as project:
        assert project.version == SCHEMA_VERSION
        assert project.backup is not None and project.backup.exists()
    assert {name: read(path, sql) for name, sql in KEPT.items()} == before
    after = read(path, "SELECT * FROM suggestion ORDER BY id")
    # Old suggestions keep their columns; the new ones are empty for them, and every
    # one is the judge's (no file of labels was imported before version 9).
    assert [row[:7] for row in after] == [row[:7] for row in suggestions]
    assert all(row[7:14] == (None,) * 7 and row[14:] == ("judge", None) for row in after)
    assert_sound(path)


def test_todays_features_work_on_an_upgraded_file(
    old: tuple[int, Path],
    cli: Cli,
    chat_server: type[ChatServer],
    assert_sound: Callable[[Path], None],
) -> None:
    version, path = old
    code, out, err = cli("eval", path, "--format", "json")
    assert code == 0, err
    assert json.loads(out)["labels"]["queries"] == 2
    session = GradingSession.open(AppOptions(project=path, annotator="alice"))
    try:
        change = session.grade(0, session.catalog.candidates[0][0], 5)
        assert change.grade == 5
        shown = {row.ext_id: row.suggestion for row in session.passages(0)}
    finally:
        session.close()
    if version >= 2:
        old_suggestion = shown["d1"]
        assert old_suggestion is not None and old_suggestion.grade == 4
        assert (old_suggestion.low, old_suggestion.high) == (4, 4)
    with chat_server() as server:
        code, out, err = cli(
            "judge",
            path,
            "--base-url",
            server.base_url,
            "--model",
            "new",
            "--include-graded",
        )
    assert code == 0, err
    code, out, err = cli("agree", path, "--format", "json")
    assert code == 0, err
    assert "new" in json.loads(out)["models"]
    target = path.with_name("s.jsonl")
    code, out, err = cli("export", path, "--jsonl", target, "--suggestions")
    assert code == 0, err
    models = {json.loads(line)["model"] for line in target.read_text().splitlines()}
    assert models == ({"gpt-x", "llama", "new"} if version >= 2 else {"new"})
    assert_sound(path)


def test_upgrade_builds_the_search_index_for_the_passages_there(old: tuple[int, Path]) -> None:
    from raglabel.storage.search import search_passages

    _, path = old
    with Project.open(path) as project:
        hits = search_passages(project.conn, "billing month")
        assert [hit.passage for hit in hits] == ["d2"]
        assert [hit.passage for hit in search_passages(project.conn, "export")] == ["d3"]


def test_v5_upgrade_keeps_answers_and_their_grades(tmp_path: Path, cli: Cli) -> None:
    path = tmp_path / "v5.db"
    shutil.copyfile(OLD[5], path)
    answers = "SELECT * FROM answer_sample ORDER BY id"
    events = "SELECT * FROM answer_event ORDER BY id"
    before = (read(path, answers), read(path, events))
    with Project.open(path) as project:
        assert project.version == SCHEMA_VERSION
    assert (read(path, answers), read(path, events)) == before
    assert read(path, "SELECT count(*) FROM answer_judgment") == [(0,)]
    target = tmp_path / "grades.jsonl"
    code, _, err = cli("export", path, "--answer-grades", target)
    assert code == 0, err
    line = json.loads(target.read_text(encoding="utf-8"))
    assert (line["system"], line["sample_id"], line["grade"]) == ("rag-a", "s1", 4)
    assert line["unsupported"] == [[0, 3]]


def test_v6_upgrade_keeps_the_judges_answers_and_starts_with_no_invite(tmp_path: Path) -> None:
    path = tmp_path / "v6.db"
    shutil.copyfile(OLD[6], path)
    judged = "SELECT * FROM answer_judgment ORDER BY id"
    before = read(path, judged)
    assert len(before) == 1
    with Project.open(path) as project:
        assert project.version == SCHEMA_VERSION
        assert invites(project) == []
    assert read(path, judged) == before


def test_v7_upgrade_keeps_the_invite_and_writes_the_rankings_passage_rows(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v7.db"
    shutil.copyfile(OLD[7], path)
    before = read(path, "SELECT * FROM invite")
    assert len(before) == 1
    with Project.open(path) as project:
        assert project.version == SCHEMA_VERSION
    assert read(path, "SELECT * FROM invite") == before
    rows = read(
        path,
        "SELECT q.ext_id, r.passage_ids, w.passage_rows FROM ranking r"
        " JOIN ranking_rows w USING (run_id, query_id)"
        " JOIN query q ON q.id = r.query_id ORDER BY q.ext_id",
    )
    ids = dict(read(path, "SELECT ext_id, id FROM passage"))
    for _, listed, stored in rows:
        names = bytes(listed).decode().split("\n")
        assert [int.from_bytes(stored[i : i + 4], "little") for i in range(0, len(stored), 4)] == [
            ids[name] for name in names
        ]
    assert read(path, "SELECT passage_rows_upto FROM run") == [(max(ids.values()),)]


def test_v8_file_is_what_its_script_builds(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("make_v8_project", DATA / "make_v8_project.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rebuilt = tmp_path / "rebuilt.db"
    module.build(rebuilt)
    extra = ("SELECT * FROM suggestion ORDER BY id", "SELECT * FROM ranking_rows ORDER BY 1, 2")
    for sql in (*KEPT.values(), *extra, "PRAGMA user_version"):
        assert read(rebuilt, sql) == read(OLD[8], sql)


def test_v8_upgrade_marks_suggestions_as_the_judges_and_takes_imported_labels(
    tmp_path: Path, cli: Cli, assert_sound: Callable[[Path], None]
) -> None:
    path = tmp_path / "v8.db"
    shutil.copyfile(OLD[8], path)
    labels = tmp_path / "other.qrels"
    labels.write_text("q1 0 d1 3\nq2 0 d3 0\n")
    code, _, err = cli("import", path, "--judgments", f"other={labels}")
    assert code == 0, err
    # The judge's suggestions from before stay its own: its model name cannot be imported over.
    code, _, err = cli("import", path, "--judgments", f"gpt-x={labels}")
    assert code == 2
    assert "'gpt-x' is a model raglabel judge asked" in err
    assert read(path, "SELECT model, source, import_id IS NULL FROM suggestion ORDER BY id") == [
        ("gpt-x", "judge", 1),
        ("gpt-x", "judge", 1),
        ("gpt-x", "judge", 1),
        ("llama", "judge", 1),
        ("other", "imported", 0),
        ("other", "imported", 0),
    ]
    # A query text given after the upgrade drops the judge's suggestions about it, as
    # before, and keeps the imported ones.
    queries = tmp_path / "queries.tsv"
    queries.write_text("q1\tHow do I change my password?\n")
    assert cli("import", path, "--queries", queries)[0] == 0
    assert read(
        path,
        "SELECT s.model FROM suggestion s JOIN query q ON q.id = s.query_id"
        " WHERE q.ext_id = 'q1' ORDER BY s.id",
    ) == [("other",)]
    assert_sound(path)


def test_v9_file_is_what_its_script_builds(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("make_v9_project", DATA / "make_v9_project.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rebuilt = tmp_path / "rebuilt.db"
    module.build(rebuilt)
    extra = ("SELECT * FROM suggestion ORDER BY id", "SELECT * FROM judgment_import ORDER BY id")
    for sql in (*KEPT.values(), *extra, "PRAGMA user_version"):
        assert read(rebuilt, sql) == read(OLD[9], sql)


def test_v9_upgrade_keeps_everything_and_starts_with_no_draw(
    tmp_path: Path, cli: Cli, assert_sound: Callable[[Path], None]
) -> None:
    path = tmp_path / "v9.db"
    shutil.copyfile(OLD[9], path)
    tables = [
        name
        for (name,) in read(path, "SELECT name FROM sqlite_master WHERE type = 'table'")
        if not name.startswith("passage_fts")  # FTS5's shadow tables: its own bytes
    ]
    before = {name: read(path, f"SELECT * FROM {name}") for name in tables}
    code, out, err = cli("audit", path, "--list", "--format", "json")
    assert code == 0, err
    assert json.loads(out) == {
        "draws": [],
        "depth": 20,
        "complete": [],
        "incomplete": [],
        "uncovered": [],
        "accepted_only": 0,
    }
    assert {name: read(path, f"SELECT * FROM {name}") for name in tables} == before
    # The two queries the old file's run covers can be drawn, and are recorded.
    code, out, err = cli("audit", path, "--sample", "2", "--seed", "1", "--format", "json")
    assert code == 0, err
    assert sorted(json.loads(out)["drawn"]) == ["q1", "q2"]
    assert read(path, "SELECT seed, population FROM audit_draw") == [(1, 2)]
    assert {name: read(path, f"SELECT * FROM {name}") for name in tables} == before
    assert_sound(path)


def test_v10_file_is_what_its_script_builds(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("make_v10_project", DATA / "make_v10_project.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rebuilt = tmp_path / "rebuilt.db"
    module.build(rebuilt)
    extra = ("SELECT * FROM audit_draw ORDER BY id", "SELECT * FROM audit_member ORDER BY 1, 2")
    for sql in (*KEPT.values(), *extra, "PRAGMA user_version"):
        assert read(rebuilt, sql) == read(OLD[10], sql)


def test_v10_upgrade_keeps_the_draw_and_starts_with_no_assignment(
    tmp_path: Path, cli: Cli, assert_sound: Callable[[Path], None]
) -> None:
    from raglabel.storage.assignments import assigned, overlap, record

    path = tmp_path / "v10.db"
    shutil.copyfile(OLD[10], path)
    tables = [
        name
        for (name,) in read(path, "SELECT name FROM sqlite_master WHERE type = 'table'")
        if not name.startswith("passage_fts")  # FTS5's shadow tables: its own bytes
    ]
    before = {name: read(path, f"SELECT * FROM {name}") for name in tables}
    with Project.open(path) as project:
        assert project.version == SCHEMA_VERSION
        assert assigned(project.conn) == {}
        assert overlap(project.conn) is None
    assert {name: read(path, f"SELECT * FROM {name}") for name in tables} == before
    code, out, err = cli("audit", path, "--list", "--format", "json")
    assert code == 0, err
    assert [d["drawn"] for d in json.loads(out)["draws"]] == [["q2"]]
    # The old annotators take assignments, and a new one is created beside them.
    with Project.open(path) as project:
        record(
            project,
            {"alice": ["q2"], "bob": ["q1", "q2"], "carol": ["q1"]},
            overlap=2,
            seed=5,
            audit=False,
        )
        assert assigned(project.conn)["bob"] == ["q1", "q2"]
        assert overlap(project.conn) == 2
    assert read(path, "SELECT name FROM annotator ORDER BY id") == [
        ("alice",),
        ("bob",),
        ("carol",),
    ]
    assert_sound(path)
