"""The grade event log: every grade, clear, undo, skip and flag, appended and never edited.

An item is one (query, passage, annotator). Its current grade is the last grade or clear
among its events that no undo has reverted; ``current_grade`` caches that answer and is
rewritten in the same transaction as the events that change it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Literal, Self

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field, model_validator

from raglabel.errors import InputError
from raglabel.storage.items import JSON_CHUNK, annotator_id, lookup
from raglabel.storage.project import Project, now

EventKind = Literal["grade", "clear", "undo", "skip", "flag"]
Grade = Annotated[int, Field(ge=1, le=5)]
Name = Annotated[str, Field(min_length=1)]


class GradeEvent(BaseModel):
    """One annotator action, as the app or an importer hands it to the log."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    query: Name
    passage: Name
    annotator: Name
    kind: EventKind = "grade"
    grade: Grade | None = None
    target: int | None = Field(None, description="The event an undo reverts.")
    note: str | None = Field(None, description="Why a passage was skipped or flagged.")
    source: Literal["human", "judge"] = "human"
    model: str | None = Field(None, description="The judge model, when source is judge.")
    origin: str | None = Field(None, description="Where the event came from: app, or a file.")
    shown_at: str | None = None
    graded_at: str | None = None
    active_ms: Annotated[int, Field(ge=0)] | None = None
    accepted_suggestion: bool | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if (self.kind == "grade") != (self.grade is not None):
            raise ValueError("a grade event needs a grade 1-5, and only a grade event has one")
        if (self.kind == "undo") != (self.target is not None):
            raise ValueError("an undo names the event it reverts, and only an undo does")
        if self.kind == "skip" and not (self.note and self.note.strip()):
            raise ValueError("a skip needs a reason")
        if (self.source == "judge") != bool(self.model):
            raise ValueError("judge events name their model, and only judge events do")
        return self


@dataclass(frozen=True)
class Recorded:
    """What the log holds after an event: its id and the item's current grade."""

    event_id: int
    query: str
    passage: str
    grade: int | None


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


_INSERT = (
    "INSERT INTO event (query_id, passage_id, annotator_id, kind, grade, target, note, source,"
    " model, origin, shown_at, graded_at, active_ms, accepted_suggestion)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


_UPSERT_CURRENT = "INSERT OR REPLACE INTO current_grade VALUES (?, ?, ?, ?, ?)"


def event_row(
    event: GradeEvent, query_id: int, passage_id: int, annotator: int
) -> tuple[object, ...]:
    """The row ``append_many`` takes for ``event``, with ids already resolved."""
    accepted = None if event.accepted_suggestion is None else int(event.accepted_suggestion)
    return (
        query_id,
        passage_id,
        annotator,
        event.kind,
        event.grade,
        event.target,
        event.note,
        event.source,
        event.model,
        event.origin,
        event.shown_at,
        event.graded_at or now(),
        event.active_ms,
        accepted,
    )


def record(project: Project, event: GradeEvent) -> Recorded:
    """Append one event; it is committed to disk before this returns."""
    with project.write():
        conn = project.conn
        query_id = lookup(conn, "query", event.query)
        passage_id = lookup(conn, "passage", event.passage)
        if query_id is None:
            raise InputError(None, f"unknown query {event.query!r}")
        if passage_id is None:
            raise InputError(None, f"unknown passage {event.passage!r}")
        annotator = annotator_id(conn, event.annotator)
        if event.kind == "undo":
            _check_target(conn, event, (query_id, passage_id, annotator))
        cursor = conn.execute(_INSERT, event_row(event, query_id, passage_id, annotator))
        event_id = int(cursor.lastrowid or 0)
        if event.kind == "grade":
            # A graded pair is a candidate, as an imported grade's is: a passage found
            # by searching the corpus joins its query's pool when it is graded.
            conn.execute(
                "INSERT OR IGNORE INTO candidate (query_id, passage_id) VALUES (?, ?)",
                (query_id, passage_id),
            )
        refresh(conn, [(query_id, passage_id, annotator)])
        standing = current(conn, query_id, passage_id, annotator)
    return Recorded(event_id, event.query, event.passage, standing)


def _check_target(conn: sqlite3.Connection, event: GradeEvent, item: tuple[int, int, int]) -> None:
    row = conn.execute(
        "SELECT query_id, passage_id, annotator_id, kind FROM event WHERE id = ?", (event.target,)
    ).fetchone()
    if row is None:
        raise InputError(None, f"undo: no event {event.target}")
    if tuple(row[:3]) != item:
        raise InputError(None, f"undo: event {event.target} is another item's or annotator's")
    if row[3] == "undo":
        raise InputError(None, f"undo: event {event.target} is itself an undo")
    taken = conn.execute(
        "SELECT id FROM event WHERE kind = 'undo' AND target = ?", (event.target,)
    ).fetchone()
    if taken is not None:
        raise InputError(None, f"undo: event {event.target} was already undone by {taken[0]}")


def undo_last(project: Project, annotator: str, *, origin: str | None = None) -> Recorded | None:
    """Revert the annotator's latest action that is not yet reverted; None if there is none."""
    row = project.conn.execute(
        "SELECT q.ext_id, p.ext_id, e.id FROM event e"
        " JOIN annotator a ON a.id = e.annotator_id"
        " JOIN query q ON q.id = e.query_id JOIN passage p ON p.id = e.passage_id"
        " WHERE a.name = ? AND e.kind != 'undo'"
        " AND NOT EXISTS (SELECT 1 FROM event u WHERE u.kind = 'undo' AND u.target = e.id)"
        " ORDER BY e.id DESC LIMIT 1",
        (annotator,),
    ).fetchone()
    if row is None:
        return None
    return record(
        project,
        GradeEvent(
            query=row[0],
            passage=row[1],
            annotator=annotator,
            kind="undo",
            target=int(row[2]),
            origin=origin,
        ),
    )


def last_undoable_at(conn: sqlite3.Connection, annotator: str) -> str | None:
    """When the annotator's latest passage action that no undo reverted was made (what
    ``undo_last`` would revert), so an undo can weigh it against an answer action."""
    row = conn.execute(
        "SELECT e.graded_at FROM event e JOIN annotator a ON a.id = e.annotator_id"
        " WHERE a.name = ? AND e.kind != 'undo'"
        " AND NOT EXISTS (SELECT 1 FROM event u WHERE u.kind = 'undo' AND u.target = e.id)"
        " ORDER BY e.id DESC LIMIT 1",
        (annotator,),
    ).fetchone()
    return None if row is None else str(row[0])


def current(conn: sqlite3.Connection, query_id: int, passage_id: int, annotator: int) -> int | None:
    row = conn.execute(
        "SELECT grade FROM current_grade"
        " WHERE query_id = ? AND passage_id = ? AND annotator_id = ?",
        (query_id, passage_id, annotator),
    ).fetchone()
    return None if row is None else int(row[0])


def refresh(conn: sqlite3.Connection, items: Iterable[tuple[int, int, int]]) -> None:
    """Recompute ``current_grade`` for these items from their events."""
    for item in dict.fromkeys(items):
        events = conn.execute(
            "SELECT id, kind, grade, target FROM event"
            " WHERE query_id = ? AND passage_id = ? AND annotator_id = ? ORDER BY id",
            item,
        ).fetchall()
        _store(conn, item, replay(events))


def _store(
    conn: sqlite3.Connection, item: tuple[int, int, int], standing: tuple[int, int] | None
) -> None:
    if standing is None:
        conn.execute(
            "DELETE FROM current_grade WHERE query_id = ? AND passage_id = ? AND annotator_id = ?",
            item,
        )
    else:
        conn.execute(
            "INSERT OR REPLACE INTO current_grade VALUES (?, ?, ?, ?, ?)", (*item, *standing)
        )


def append_many(conn: sqlite3.Connection, rows: Iterable[tuple[object, ...]]) -> None:
    """Bulk-append events (rows as ``event_row`` builds them) and bring their items up to date.

    Runs inside the importer's transaction. Only the items these events touch are
    replayed, in one pass over their events.
    """
    first = conn.execute("SELECT coalesce(max(id), 0) FROM event").fetchone()[0] + 1
    conn.executemany(_INSERT, rows)
    _bring_up_to_date(conn, first)


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
    conn.execute(
        "INSERT OR IGNORE INTO candidate (query_id, passage_id)"
        " SELECT query_id, passage_id FROM event WHERE id >= ? ORDER BY query_id, passage_id",
        (first,),
    )
    earlier = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM event WHERE annotator_id = ? AND id < ?)",
        (annotator_id, first),
    ).fetchone()[0]
    if earlier:
        _bring_up_to_date(conn, first)
        return
    # The annotator's first events: each item stands at its last grade here, which
    # replacing in id order within the item leaves; no item needs its history read back.
    conn.execute(
        "INSERT OR REPLACE INTO current_grade"
        " SELECT query_id, passage_id, annotator_id, grade, id FROM event WHERE id >= ?"
        " ORDER BY query_id, passage_id, annotator_id, id",
        (first,),
    )


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


def _bring_up_to_date(conn: sqlite3.Connection, first: int) -> None:
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
    others = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM touched t JOIN event e USING"
        " (query_id, passage_id, annotator_id) WHERE e.kind != 'grade')"
    ).fetchone()[0]
    if not others:
        # Every event of these items is a grade (the common import): nothing is cleared
        # or undone, so each item stands at its latest grade, which is what replay()
        # finds. SQLite takes the bare column grade from the row max(id) picks.
        conn.execute(
            "INSERT OR REPLACE INTO current_grade"
            " SELECT e.query_id, e.passage_id, e.annotator_id, e.grade, max(e.id)"
            " FROM touched t JOIN event e USING (query_id, passage_id, annotator_id)"
            " GROUP BY e.query_id, e.passage_id, e.annotator_id"
        )
        return
    _replay_into_current(
        conn,
        "SELECT e.query_id, e.passage_id, e.annotator_id, e.id, e.kind, e.grade, e.target"
        " FROM touched t JOIN event e USING (query_id, passage_id, annotator_id)"
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
