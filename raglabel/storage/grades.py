"""The grade event log: every grade, clear, undo, skip and flag, appended and never edited.

An item is one (query, passage, annotator). Its current grade is the last grade or clear
among its events that no undo has reverted; ``current_grade`` caches that answer and is
rewritten in the same transaction as the events that change it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from raglabel.errors import InputError
from raglabel.storage.items import annotator_id, lookup
from raglabel.storage.log import EventRow, bring_up_to_date, rebuild_current, replay
from raglabel.storage.project import Project, now

# EventRow, rebuild_current and replay live in storage.log (which loads without
# pydantic) and are the log's API here too.
__all__ = [
    "EventKind",
    "EventRow",
    "GradeEvent",
    "Recorded",
    "append_many",
    "current",
    "event_row",
    "last_undoable_at",
    "rebuild_current",
    "record",
    "refresh",
    "replay",
    "undo_last",
]

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


_INSERT = (
    "INSERT INTO event (query_id, passage_id, annotator_id, kind, grade, target, note, source,"
    " model, origin, shown_at, graded_at, active_ms, accepted_suggestion)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


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
    bring_up_to_date(conn, first)
