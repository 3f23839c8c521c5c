"""Skips and flags: the marks an annotator left on passages, and has not undone."""

from __future__ import annotations

import sqlite3

#: A standing mark: (query id, passage id, "skip" or "flag", reason or note, when).
Mark = tuple[str, str, str, str | None, str]

_STANDING = (
    # "+e.annotator_id" keeps SQLite on the (query, passage, annotator) index: by
    # the annotator's own index it would walk every event they ever wrote.
    "SELECT q.ext_id, p.ext_id, e.kind, e.note, e.graded_at FROM event e"
    " JOIN annotator a ON a.id = +e.annotator_id"
    " JOIN query q ON q.id = e.query_id JOIN passage p ON p.id = e.passage_id"
    " WHERE a.name = ? AND e.kind IN ('skip', 'flag') {where}"
    " AND NOT EXISTS (SELECT 1 FROM event u WHERE u.kind = 'undo' AND u.target = e.id)"
    " ORDER BY e.id"
)


def standing_marks(conn: sqlite3.Connection, annotator: str, query_row: int) -> list[Mark]:
    """One annotator's standing marks on one query, oldest first."""
    return conn.execute(
        _STANDING.format(where="AND e.query_id = ?"), (annotator, query_row)
    ).fetchall()


def all_marks(conn: sqlite3.Connection, annotator: str) -> list[Mark]:
    """Every standing mark of one annotator, on any query, oldest first."""
    sql = _STANDING.format(where="").replace("+e.annotator_id", "e.annotator_id")
    return conn.execute(sql, (annotator,)).fetchall()
