"""Running a migration's script inside the upgrade's transaction, one statement at a time.

sqlite3's ``executescript()`` would commit the open transaction first, so ``_migrate``
cuts each script into statements itself (``script_statements``). The cut must be
SQLite's own (a semicolon inside a trigger, a string or a comment does not end a
statement), and cheap: every new project, and so nearly every test, runs every script.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

import pytest

from raglabel.storage.project import Project
from raglabel.storage.schema import MIGRATIONS, script_statements


def _schema(conn: sqlite3.Connection) -> list[tuple[str, str, str, str | None]]:
    return conn.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name"
    ).fetchall()


def test_the_statements_build_what_sqlites_own_script_runner_builds() -> None:
    # sqlite3's executescript() splits a script by SQLite's parser: the independent
    # answer, on a connection with no transaction for it to commit.
    reference = sqlite3.connect(":memory:")
    try:
        for step in MIGRATIONS:
            reference.executescript(step.sql)
        with Project.memory() as project:
            assert _schema(project.conn) == _schema(reference)
    finally:
        reference.close()


def test_a_semicolon_inside_a_trigger_a_string_or_a_comment_ends_nothing() -> None:
    script = """
        CREATE TABLE t (a TEXT DEFAULT ';');
        -- a comment; with a semicolon
        CREATE TRIGGER t_added AFTER INSERT ON t
        BEGIN
            UPDATE t SET a = 'x;y' WHERE rowid = new.rowid;
            DELETE FROM t WHERE a = ';';
        END;
        INSERT INTO t VALUES ('1;2');
        -- a last comment
    """
    assert list(script_statements(script)) == [
        "CREATE TABLE t (a TEXT DEFAULT ';');",
        "-- a comment; with a semicolon\n        CREATE TRIGGER t_added AFTER INSERT ON t\n"
        "        BEGIN\n            UPDATE t SET a = 'x;y' WHERE rowid = new.rowid;\n"
        "            DELETE FROM t WHERE a = ';';\n        END;",
        "INSERT INTO t VALUES ('1;2');",
        "-- a last comment",
    ]
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        conn.execute("BEGIN")
        for statement in script_statements(script):
            conn.execute(statement)
        # Still the one transaction the statements ran in, and the trigger fired.
        assert conn.in_transaction
        assert conn.execute("SELECT a FROM t").fetchall() == [("x;y",)]
    finally:
        conn.close()


def test_a_new_project_asks_sqlite_about_each_semicolon_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Asking after every character (as sqlite-utils' script runner did) cost 0.15 s per
    # new project, which every test that makes one paid: 16,000 questions, not ~100.
    asked: list[str] = []
    complete: Callable[[str], bool] = sqlite3.complete_statement

    def counting(sql: str) -> bool:
        asked.append(sql)
        return complete(sql)

    monkeypatch.setattr(sqlite3, "complete_statement", counting)
    with Project.memory() as project:
        assert project.conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] > 0
    semicolons = sum(step.sql.count(";") for step in MIGRATIONS)
    assert 0 < len(asked) <= semicolons
