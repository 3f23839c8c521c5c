"""The grade log's bulk side, free of the event model: imported grades appended in bulk,
and current grades derived from the log (replayed for some items, or all).

It loads without pydantic, which a qrels import otherwise paid for at every start.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from raglabel.storage.items import JSON_CHUNK

#: A row as replay reads it: (event id, kind, grade, target).
EventRow = tuple[int, str, int | None, int | None]


def replay(events: Sequence[EventRow]) -> tuple[int, int] | None:
    """(grade, event id) of the item's standing grade, or None; events in id order."""
    reverted = {target for _, kind, _, target in events if kind == "undo"}
    for event_id, kind, grade, _ in reversed(events):
        if event_id in reverted:
            continue
        if kind == "grade":
            assert grade is not None
            return grade, event_id
        if kind == "clear":
            return None
    return None


_UPSERT_CURRENT = "INSERT OR REPLACE INTO current_grade VALUES (?, ?, ?, ?, ?)"


#: An imported grade's query id, passage id and grade packed into one integer (query id
#: above bit 32, passage id in bits 3-31, grade in bits 0-2), so one JSON array of
#: integers carries every row; ids too large for it take the slower executemany.
_PASSAGE_BITS = 29
_QUERY_LIMIT = 1 << 31


@dataclass(frozen=True)
class ImportedGrades:
    """One annotator's imported grades, in order, with their ids resolved, ready for
    :func:`append_grades`: ``packed`` holds the JSON arrays SQLite reads them from (one
    per chunk), or is None when ids are too large to pack."""

    query_ids: NDArray[np.int64]
    passage_ids: NDArray[np.int64]
    grades: NDArray[np.int64]
    packed: list[str] | None

    @classmethod
    def of(
        cls, query_ids: NDArray[np.int64], passage_ids: NDArray[np.int64], grades: NDArray[np.int64]
    ) -> ImportedGrades:
        if grades.size and (int(grades.min()) < 1 or int(grades.max()) > 5):
            raise ValueError("imported grades must be 1-5")
        packable = not grades.size or (
            int(query_ids.max()) < _QUERY_LIMIT and int(passage_ids.max()) < 1 << _PASSAGE_BITS
        )
        packed = None
        if packable:
            values = (query_ids << 32) | (passage_ids << 3) | grades
            packed = [
                _int_list(values[start : start + JSON_CHUNK])
                for start in range(0, len(values), JSON_CHUNK)
            ]
        return cls(query_ids, passage_ids, grades, packed)


def append_grades(
    conn: sqlite3.Connection,
    imported: ImportedGrades,
    *,
    annotator_id: int,
    origin: str,
    graded_at: str,
) -> None:
    """Append one annotator's grades (an import), in their order, as grade events; make
    their pairs candidates and bring their items up to date. Inside the caller's
    transaction.

    SQLite copies the rows itself and what every event shares is bound once: binding
    fourteen values a row from Python cost most of a large qrels import.
    """
    first = conn.execute("SELECT coalesce(max(id), 0) FROM event").fetchone()[0] + 1
    # Ids are given, not left to SQLite: the log's order is the file's, whatever order
    # SQLite reads the array in.
    columns = (
        "INSERT INTO event (id, query_id, passage_id, annotator_id, kind, grade, source,"
        " origin, graded_at)"
    )
    if imported.packed is not None:
        with _checks_hold(conn):
            for number, text in enumerate(imported.packed):
                conn.execute(
                    f"{columns} SELECT ? + key, value >> 32,"
                    f" (value >> 3) & {(1 << _PASSAGE_BITS) - 1}, ?, 'grade', value & 7,"
                    " 'human', ?, ? FROM json_each(?)",
                    (first + number * JSON_CHUNK, annotator_id, origin, graded_at, text),
                )
    else:
        rows = zip(
            imported.query_ids.tolist(),
            imported.passage_ids.tolist(),
            imported.grades.tolist(),
            strict=True,
        )
        conn.executemany(
            f"{columns} VALUES (?, ?, ?, ?, 'grade', ?, 'human', ?, ?)",
            (
                (first + i, q, p, annotator_id, g, origin, graded_at)
                for i, (q, p, g) in enumerate(rows)
            ),
        )
    # Derived rows go in key order: SQLite then appends to each b-tree instead of
    # splitting pages all over it.
    new_events = _new_events(first, len(imported.grades))
    conn.execute(
        "INSERT OR IGNORE INTO candidate (query_id, passage_id)"
        f" SELECT query_id, passage_id FROM {new_events} WHERE id >= ?"
        " ORDER BY query_id, passage_id",
        (first,),
    )
    earlier = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM event WHERE annotator_id = ? AND id < ?)",
        (annotator_id, first),
    ).fetchone()[0]
    if earlier:
        bring_up_to_date(conn, first)
        return
    # The annotator's first events: each item stands at its last grade here, which
    # replacing in id order within the item leaves; no item needs its history read back.
    conn.execute(
        "INSERT OR REPLACE INTO current_grade"
        f" SELECT query_id, passage_id, annotator_id, grade, id FROM {new_events} WHERE id >= ?"
        " ORDER BY query_id, passage_id, annotator_id, id",
        (first,),
    )


def _new_events(first: int, count: int) -> str:
    """How to read back ``count`` events just appended from id ``first`` on, in item
    order. SQLite walks the whole item index for that ORDER BY, which is the cheapest
    way when the new events are most of the log, and seconds for a thousand labels
    beside millions of older events: there, their id range is read and sorted."""
    return "event NOT INDEXED" if first - 1 >= count else "event"


@contextmanager
def _checks_hold(conn: sqlite3.Connection) -> Iterator[None]:
    """Skip event's CHECK constraints for the statements inside, which hold them by
    construction: kind 'grade', a grade checked 1-5 above, no target, time or flag.
    Testing five constraints a row was a third of writing the events. Foreign keys,
    NOT NULL and uniqueness are still enforced."""
    conn.execute("PRAGMA ignore_check_constraints = ON")
    try:
        yield
    finally:
        conn.execute("PRAGMA ignore_check_constraints = OFF")


def _int_list(values: NDArray[np.int64]) -> str:
    return "[" + ",".join(map(str, values.tolist())) + "]"


def bring_up_to_date(conn: sqlite3.Connection, first: int) -> None:
    """Replay the items the events from id ``first`` on touch into current_grade."""
    conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS touched"
        " (query_id INTEGER, passage_id INTEGER, annotator_id INTEGER,"
        " PRIMARY KEY (query_id, passage_id, annotator_id)) WITHOUT ROWID"
    )
    conn.execute("DELETE FROM touched")
    conn.execute(
        "INSERT OR IGNORE INTO touched"
        " SELECT query_id, passage_id, annotator_id FROM event WHERE id >= ?",
        (first,),
    )
    # CROSS JOIN keeps touched as the outer loop: SQLite knows nothing of the temporary
    # table's size and otherwise walks the whole log once per statement, looking each
    # event up in touched (a second for a thousand labels beside millions of events).
    others = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM touched t CROSS JOIN event e USING"
        " (query_id, passage_id, annotator_id) WHERE e.kind != 'grade')"
    ).fetchone()[0]
    if not others:
        # Every event of these items is a grade (the common import): nothing is cleared
        # or undone, so each item stands at its latest grade, which is what replay()
        # finds. SQLite takes the bare column grade from the row max(id) picks.
        conn.execute(
            "INSERT OR REPLACE INTO current_grade"
            " SELECT e.query_id, e.passage_id, e.annotator_id, e.grade, max(e.id)"
            " FROM touched t CROSS JOIN event e USING (query_id, passage_id, annotator_id)"
            " GROUP BY e.query_id, e.passage_id, e.annotator_id"
        )
        return
    _replay_into_current(
        conn,
        "SELECT e.query_id, e.passage_id, e.annotator_id, e.id, e.kind, e.grade, e.target"
        " FROM touched t CROSS JOIN event e USING (query_id, passage_id, annotator_id)"
        " ORDER BY e.query_id, e.passage_id, e.annotator_id, e.id",
    )


def rebuild_current(conn: sqlite3.Connection) -> None:
    """Throw the cache away and derive every current grade from the log alone."""
    conn.execute("DELETE FROM current_grade")
    _replay_into_current(
        conn,
        "SELECT query_id, passage_id, annotator_id, id, kind, grade, target FROM event"
        " ORDER BY query_id, passage_id, annotator_id, id",
    )


def _replay_into_current(conn: sqlite3.Connection, sql: str) -> None:
    upserts: list[tuple[int, ...]] = []
    deletes: list[tuple[int, int, int]] = []

    def settle(item: tuple[int, int, int], events: list[EventRow]) -> None:
        standing = replay(events)
        if standing is None:
            deletes.append(item)
        else:
            upserts.append((*item, *standing))

    item: tuple[int, int, int] | None = None
    events: list[EventRow] = []
    for q, p, a, event_id, kind, grade, target in conn.execute(sql).fetchall():
        if (q, p, a) != item:
            if item is not None:
                settle(item, events)
            item, events = (q, p, a), []
        events.append((event_id, kind, grade, target))
    if item is not None:
        settle(item, events)
    conn.executemany(
        "DELETE FROM current_grade WHERE query_id = ? AND passage_id = ? AND annotator_id = ?",
        deletes,
    )
    conn.executemany(_UPSERT_CURRENT, upserts)
