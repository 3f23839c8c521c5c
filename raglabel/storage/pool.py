"""The candidate pool: the pairs annotators are asked to grade, each run's top entries
(to the pool depth) and every pair a label file names."""

from __future__ import annotations

import sqlite3

import numpy as np
from numpy.typing import NDArray


def candidate_rows(conn: sqlite3.Connection) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Every candidate as parallel arrays of query rows and passage rows, in query row
    order (ordering by the grouped column costs SQLite no sort of its own).

    Integers only: a big project has millions of candidates, and their passage ids as
    strings cost seconds that the session does not need until a query is opened.
    """
    rows = conn.execute(
        "SELECT query_id, count(*), group_concat(passage_id) FROM candidate GROUP BY query_id"
        " ORDER BY query_id"
    ).fetchall()
    queries, sizes = (np.array([row[i] for row in rows], dtype=np.int64) for i in (0, 1))
    return in_chunks(queries, sizes), joined_ints([row[2] for row in rows])


# The app reads these in a thread beside its screens, and joining, parsing or repeating
# millions of values in one numpy call holds the interpreter's lock throughout (a tenth
# of a second and more on a big project) while the app's keys wait: a chunk of groups
# at a time, a few milliseconds each, lets the app's thread in between.
_GROUPS_A_CHUNK = 500  # ~50,000 values with a big project's 100 candidates a query


def in_chunks(values: NDArray[np.int64], counts: NDArray[np.int64]) -> NDArray[np.int64]:
    """``np.repeat(values, counts)``, a chunk of values at a time."""
    parts = [
        np.repeat(values[start : start + _GROUPS_A_CHUNK], counts[start : start + _GROUPS_A_CHUNK])
        for start in range(0, values.size, _GROUPS_A_CHUNK)
    ]
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def joined_ints(texts: list[str]) -> NDArray[np.int64]:
    """Comma-separated integers (SQLite's ``group_concat``) as one array: a row per group
    and one parse in C cost a fraction of a row per value."""
    parts = [
        np.fromstring(",".join(texts[start : start + _GROUPS_A_CHUNK]), dtype=np.int64, sep=",")
        for start in range(0, len(texts), _GROUPS_A_CHUNK)
    ]
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def query_pool(conn: sqlite3.Connection, query_row: int) -> list[tuple[int, str]]:
    """One query's candidates as ``(passage row, passage id)`` in pool order: best rank
    first, then the passages only a label file named (no rank), each group by passage id."""
    rows: list[tuple[int, int | None, str]] = conn.execute(
        "SELECT c.passage_id, c.best_rank, p.ext_id FROM candidate c"
        " JOIN passage p ON p.id = c.passage_id WHERE c.query_id = ?",
        (query_row,),
    ).fetchall()
    rows.sort(key=lambda row: (row[1] is None, row[1] or 0, row[2]))
    return [(row, ext) for row, _, ext in rows]
