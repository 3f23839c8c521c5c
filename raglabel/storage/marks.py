"""Skips and flags: the marks an annotator left on passages, and has not undone."""

from __future__ import annotations

import sqlite3


def standing_marks(
    conn: sqlite3.Connection, annotator: str, query_row: int
) -> list[tuple[str, str]]:
    """``(passage id, "skip" or "flag")`` of one annotator's standing marks on one query."""
    return conn.execute(
        # "+e.annotator_id" keeps SQLite on the (query, passage, annotator) index: by
        # the annotator's own index it would walk every event they ever wrote.
        "SELECT p.ext_id, e.kind FROM event e JOIN annotator a ON a.id = +e.annotator_id"
        " JOIN passage p ON p.id = e.passage_id"
        " WHERE a.name = ? AND e.query_id = ? AND e.kind IN ('skip', 'flag')"
        " AND NOT EXISTS (SELECT 1 FROM event u WHERE u.kind = 'undo' AND u.target = e.id)",
        (annotator, query_row),
    ).fetchall()
