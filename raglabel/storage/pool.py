"""The candidate pool: the pairs annotators are asked to grade, each run's top entries
(to the pool depth) and every pair a label file names."""

from __future__ import annotations

import sqlite3


def pool_order(conn: sqlite3.Connection) -> list[tuple[int, int | None, str]]:
    """Every candidate as ``(query row id, best rank, passage id)``, query by query in row
    id order, and within a query best rank first, then the passages only a label file
    named (no rank), each group by passage id."""
    rows: list[tuple[int, int | None, str]] = conn.execute(
        "SELECT c.query_id, c.best_rank, p.ext_id FROM candidate c"
        " JOIN passage p ON p.id = c.passage_id"
    ).fetchall()
    # Sorting here is cheaper than SQLite's ORDER BY over the join.
    rows.sort(key=lambda row: (row[0], row[1] is None, row[1] or 0, row[2]))
    return rows
