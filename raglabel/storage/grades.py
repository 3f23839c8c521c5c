"""The grade event log of passages: every grade, clear, undo, skip and flag, appended and
never edited.

An item is one (query, passage, annotator). Its current grade is the last grade or clear
among its events that no undo has reverted; ``current_grade`` caches that answer and is
rewritten in the same transaction as the events that change it. The event model, its
rules and the writing and replaying it shares with the answer log are ``events``'s;
``GradeEvent`` is a passage event as a file line or a caller hands it over.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from raglabel.errors import InputError
from raglabel.storage.annotators import person_id
from raglabel.storage.events import (
    PASSAGE_LOG,
    Event,
    EventKind,
    PassageTarget,
    append,
    insert_sql,
    item_standing,
    last_undoable,
    problem,
    undo_of,
    values,
)
from raglabel.storage.items import annotator_id, lookup
from raglabel.storage.log import EventRow, bring_up_to_date, rebuild_current, replay
from raglabel.storage.project import Project

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
    "rebuild_current",
    "record",
    "refresh",
    "replay",
    "undo_last",
]

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
        # The log's own rules, so that a file line breaking one is refused with its line.
        broken = problem(self, "passage")
        if broken is not None:
            raise ValueError(broken)
        return self

    # What the log's rules and rows read (``events.Fields``) under the model's names.
    @property
    def undoes(self) -> int | None:
        return self.target

    @property
    def unsupported(self) -> None:
        return None

    def to_event(self) -> Event:
        """This passage event in the model both logs share."""
        return Event(
            PassageTarget(self.query, self.passage),
            self.annotator,
            self.kind,
            grade=self.grade,
            undoes=self.target,
            note=self.note,
            source=self.source,
            model=self.model,
            origin=self.origin,
            shown_at=self.shown_at,
            graded_at=self.graded_at,
            active_ms=self.active_ms,
            accepted_suggestion=self.accepted_suggestion,
        )


@dataclass(frozen=True)
class Recorded:
    """What the log holds after an event: its id and the item's current grade."""

    event_id: int
    query: str
    passage: str
    grade: int | None


_INSERT = insert_sql(PASSAGE_LOG)


def event_row(
    event: GradeEvent, query_id: int, passage_id: int, annotator: int
) -> tuple[object, ...]:
    """The row ``append_many`` takes for ``event``, with ids already resolved."""
    return values(PASSAGE_LOG, event, (query_id, passage_id, annotator))


def record(project: Project, given: GradeEvent | Event) -> Recorded:
    """Append one passage event; it is committed to disk before this returns. Anything
    inconsistent is an error and writes nothing."""
    event = given.to_event() if isinstance(given, GradeEvent) else given
    target = event.target
    if not isinstance(target, PassageTarget):
        raise InputError(None, "an answer's event goes to the answer log (record_answer)")
    event.check()
    with project.write():
        conn = project.conn
        query_id = lookup(conn, "query", target.query)
        passage_id = lookup(conn, "passage", target.passage)
        if query_id is None:
            raise InputError(None, f"unknown query {target.query!r}")
        if passage_id is None:
            raise InputError(None, f"unknown passage {target.passage!r}")
        # A judge's own events keep the name they carry; a person's name is checked once.
        who = person_id if event.source == "human" else annotator_id
        annotator = who(conn, event.annotator)
        event_id = append(conn, event, (query_id, passage_id, annotator))
        if event.kind == "grade":
            # A graded pair is a candidate, as an imported grade's is: a passage found
            # by searching the corpus joins its query's pool when it is graded.
            conn.execute(
                "INSERT OR IGNORE INTO candidate (query_id, passage_id) VALUES (?, ?)",
                (query_id, passage_id),
            )
        refresh(conn, [(query_id, passage_id, annotator)])
        standing = current(conn, query_id, passage_id, annotator)
    return Recorded(event_id, target.query, target.passage, standing)


def undo_last(project: Project, annotator: str, *, origin: str | None = None) -> Recorded | None:
    """Revert the annotator's latest passage action that is not yet reverted; None if
    there is none."""
    undoable = last_undoable(project.conn, "passage", annotator)
    return None if undoable is None else record(project, undo_of(undoable, annotator, origin))


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
        _store(conn, item, item_standing(conn, PASSAGE_LOG, item))


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
