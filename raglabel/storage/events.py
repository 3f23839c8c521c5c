"""The one event model of both grade logs: an annotator's action on a target, which is a
passage of a query or one criterion of a system's answer (the target kind), and the one
way such an event is checked, appended, undone and replayed.

Each target kind keeps its own table (``event`` for passages, ``answer_event`` for
answers, as the project file has always held them); :class:`EventLog` says where each
kind lives, so that every rule of the log is written once for both: an item's current
grade is the last grade or clear among its events that no undo reverted, an undo
reverts one earlier action of the same item and annotator, once, and undo takes back
the annotator's latest action over both logs.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from operator import attrgetter
from typing import Any, ClassVar, Literal, Protocol, TypeAlias

from raglabel.errors import InputError
from raglabel.formats.sentences import Span
from raglabel.metrics.criteria import CRITERIA
from raglabel.storage.clock import now
from raglabel.storage.log import EventRow, replay

EventKind = Literal["grade", "clear", "undo", "skip", "flag"]
TargetKind = Literal["passage", "answer"]


@dataclass(frozen=True)
class PassageTarget:
    """A passage of a query (external ids, as the log's files name them)."""

    query: str
    passage: str
    kind: ClassVar[TargetKind] = "passage"


@dataclass(frozen=True)
class AnswerTarget:
    """One criterion of one system's answer sample."""

    system: str
    sample_id: str
    criterion: str
    kind: ClassVar[TargetKind] = "answer"


Target: TypeAlias = PassageTarget | AnswerTarget


@dataclass(frozen=True)
class Event:
    """One annotator action on a target, as it goes into its log.

    ``undoes`` is the event an undo reverts (the tables' ``target`` column). Fields a
    target kind has no column for are errors when set: ``note`` and
    ``accepted_suggestion`` belong to passages, ``unsupported`` spans to answers.
    """

    target: Target
    annotator: str
    kind: EventKind = "grade"
    grade: int | None = None
    undoes: int | None = None
    note: str | None = None
    source: Literal["human", "judge"] = "human"
    model: str | None = None
    origin: str | None = None
    shown_at: str | None = None
    graded_at: str | None = None
    active_ms: int | None = None
    accepted_suggestion: bool | None = None
    unsupported: tuple[Span, ...] | None = None

    def check(self) -> None:
        """Raise InputError naming the first rule this event breaks; write nothing."""
        problem = self.problem()
        if problem is not None:
            raise InputError(None, problem)

    def problem(self) -> str | None:
        """The first rule this event breaks, said for a person; None when it keeps them."""
        target = self.target
        return problem(self, target.kind, getattr(target, "criterion", None))


class Fields(Protocol):
    """An event's own fields, as ``Event`` holds them and a passage event's file line
    (``grades.GradeEvent``) shows them: what the rules read and the log stores."""

    @property
    def annotator(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def grade(self) -> int | None: ...
    @property
    def undoes(self) -> int | None: ...
    @property
    def note(self) -> str | None: ...
    @property
    def source(self) -> str: ...
    @property
    def model(self) -> str | None: ...
    @property
    def active_ms(self) -> int | None: ...
    @property
    def accepted_suggestion(self) -> bool | None: ...
    @property
    def unsupported(self) -> tuple[Span, ...] | None: ...


def problem(event: Fields, kind: TargetKind, criterion: str | None = None) -> str | None:
    """The first rule of the log ``event`` breaks, on a target of ``kind`` (an answer's
    with ``criterion``), said for a person; None when it keeps them all."""
    # Each field is read once: a label import checks every line of its file here.
    action, grade, unsupported = event.kind, event.grade, event.unsupported
    if kind == "answer":
        if criterion not in CRITERIA:
            return f"unknown criterion {criterion!r}"
        if action not in ANSWER_KINDS:
            return f"an answer event is a grade, clear or undo, not a {action}"
        if event.note is not None or event.accepted_suggestion is not None:
            return "notes and accepted suggestions belong to passage events"
        if event.source != "human" or event.model is not None:
            # The answer log has no column for either: a judge's grade would be stored,
            # and replayed, as a person's. Judges' answers go to the judgment store.
            return "an answer event is a person's; a judge's answers go to the judgment store"
    elif unsupported is not None:
        return "unsupported spans belong to an answer, not a passage"
    if (action == "grade") != (grade is not None):
        return "a grade event needs a grade 1-5, and only a grade event has one"
    if grade is not None and not 1 <= grade <= 5:
        return f"grade {grade} is not 1-5"
    if (action == "undo") != (event.undoes is not None):
        return "an undo names the event it reverts, and only an undo does"
    if action == "skip" and not (event.note and event.note.strip()):
        return "a skip needs a reason"
    if (event.source == "judge") != bool(event.model):
        return "judge events name their model, and only judge events do"
    if unsupported is not None and action != "grade":
        return "unsupported spans go with a grade"
    if not event.annotator.strip():
        return "an annotator needs a name"
    active = event.active_ms
    if active is not None and active < 0:
        return "active time cannot be negative"
    return None


ANSWER_KINDS: frozenset[EventKind] = frozenset({"grade", "clear", "undo"})

#: The ids of an item in its log's table (the annotator's last): (query, passage,
#: annotator) or (system, sample id, criterion, annotator).
Item: TypeAlias = tuple[int | str, ...]


@dataclass(frozen=True)
class EventLog:
    """Where the events of one target kind live, and how a target is named there."""

    kind: TargetKind
    table: str
    item: tuple[str, ...]  # the columns naming an item, the annotator's last
    columns: tuple[str, ...]  # the event's own columns, after the item's
    #: Which events count (on alias ``e``): the answer log's replay and undo read
    #: people's events only, as they always have.
    counted: str
    #: The target's external names (alias ``e``) and the joins they need.
    names: str
    joins: str
    what: str  # how errors name one of its events

    @cached_property
    def fields(self) -> Callable[[Fields], tuple[Any, ...]]:
        """Reads the event's field behind each of ``columns``, in their order."""
        # The column ``target`` holds the event an undo reverts: the field ``undoes``.
        names = ["undoes" if column == "target" else column for column in self.columns]
        return attrgetter(*names)

    @cached_property
    def stamp(self) -> int:
        """Where ``graded_at`` stands among ``columns``."""
        return self.columns.index("graded_at")

    @cached_property
    def spans(self) -> int | None:
        """Where ``unsupported`` stands among ``columns``, if the log stores spans."""
        return self.columns.index("unsupported") if "unsupported" in self.columns else None

    def target(self, names: tuple[str, ...]) -> Target:
        return AnswerTarget(*names) if self.kind == "answer" else PassageTarget(*names)


PASSAGE_LOG = EventLog(
    kind="passage",
    table="event",
    item=("query_id", "passage_id", "annotator_id"),
    columns=(
        "kind",
        "grade",
        "target",
        "note",
        "source",
        "model",
        "origin",
        "shown_at",
        "graded_at",
        "active_ms",
        "accepted_suggestion",
    ),
    counted="",
    names="q.ext_id, p.ext_id",
    joins=" JOIN query q ON q.id = e.query_id JOIN passage p ON p.id = e.passage_id",
    what="event",
)
ANSWER_LOG = EventLog(
    kind="answer",
    table="answer_event",
    item=("system_id", "sample_id", "criterion", "annotator_id"),
    columns=(
        "kind",
        "grade",
        "unsupported",
        "target",
        "origin",
        "shown_at",
        "graded_at",
        "active_ms",
    ),
    counted=" AND e.source = 'human'",
    names="s.name, e.sample_id, e.criterion",
    joins=" JOIN answer_system s ON s.id = e.system_id",
    what="answer event",
)
LOGS: dict[TargetKind, EventLog] = {"passage": PASSAGE_LOG, "answer": ANSWER_LOG}


def values(log: EventLog, event: Fields, item: Item) -> tuple[object, ...]:
    """The row ``append`` stores for ``event``: the item's ids, then ``log.columns``.

    Stored as the field is, but an event without a time is stamped now and spans are
    stored as JSON. (A bool needs nothing: sqlite3 binds True and False as 1 and 0.)
    """
    # One attrgetter reads every field at C speed: a label import builds a row a line,
    # and its lines have their times, so most rows need nothing changed.
    row = log.fields(event)
    spans = None if log.spans is None else row[log.spans]
    if row[log.stamp] is None or spans is not None:
        changed = list(row)
        changed[log.stamp] = row[log.stamp] or now()
        if log.spans is not None and spans is not None:
            changed[log.spans] = json.dumps([list(span) for span in spans])
        row = tuple(changed)
    return (*item, *row)


def insert_sql(log: EventLog) -> str:
    columns = (*log.item, *log.columns)
    return (
        f"INSERT INTO {log.table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
    )


def append(conn: sqlite3.Connection, event: Event, item: Item) -> int:
    """Append ``event`` (checked, its target resolved to ``item``) inside the caller's
    transaction; an undo is checked against the event it reverts. Returns its id."""
    log = LOGS[event.target.kind]
    if event.undoes is not None:
        _check_undo(conn, log, event.undoes, item)
    cursor = conn.execute(insert_sql(log), values(log, event, item))
    return int(cursor.lastrowid or 0)


def _check_undo(conn: sqlite3.Connection, log: EventLog, undone: int, item: Item) -> None:
    what = log.what
    row = conn.execute(
        f"SELECT {', '.join(log.item)}, kind FROM {log.table} WHERE id = ?", (undone,)
    ).fetchone()
    if row is None:
        raise InputError(None, f"undo: no {what} {undone}")
    if tuple(row[:-1]) != tuple(item):
        raise InputError(None, f"undo: {what} {undone} is another item's or annotator's")
    if row[-1] == "undo":
        raise InputError(None, f"undo: {what} {undone} is itself an undo")
    taken = conn.execute(
        f"SELECT id FROM {log.table} WHERE kind = 'undo' AND target = ?", (undone,)
    ).fetchone()
    if taken is not None:
        raise InputError(None, f"undo: {what} {undone} was already undone by {taken[0]}")


def item_standing(conn: sqlite3.Connection, log: EventLog, item: Item) -> tuple[int, int] | None:
    """(grade, event id) of the item's standing grade, replayed from its counted events;
    None when nothing stands."""
    where = " AND ".join(f"e.{column} = ?" for column in log.item)
    events: list[EventRow] = conn.execute(
        f"SELECT e.id, e.kind, e.grade, e.target FROM {log.table} e"
        f" WHERE {where}{log.counted} ORDER BY e.id",
        item,
    ).fetchall()
    return replay(events)


@dataclass(frozen=True)
class Undoable:
    """An annotator's latest action that no undo reverted, in one log."""

    event_id: int
    target: Target
    made_at: str


def last_undoable(conn: sqlite3.Connection, kind: TargetKind, annotator: str) -> Undoable | None:
    """The annotator's latest action in the log of ``kind`` that no undo reverted."""
    log = LOGS[kind]
    row = conn.execute(
        f"SELECT e.id, e.graded_at, {log.names} FROM {log.table} e"
        f" JOIN annotator a ON a.id = e.annotator_id{log.joins}"
        f" WHERE a.name = ? AND e.kind != 'undo'{log.counted}"
        f" AND NOT EXISTS (SELECT 1 FROM {log.table} u WHERE u.kind = 'undo'"
        " AND u.target = e.id) ORDER BY e.id DESC LIMIT 1",
        (annotator,),
    ).fetchone()
    if row is None:
        return None
    return Undoable(int(row[0]), log.target(tuple(str(name) for name in row[2:])), str(row[1]))


def undo_of(undoable: Undoable, annotator: str, origin: str | None) -> Event:
    """The event that reverts ``undoable``."""
    return Event(undoable.target, annotator, "undo", undoes=undoable.event_id, origin=origin)


def latest_kind(conn: sqlite3.Connection, annotator: str) -> TargetKind | None:
    """Which log holds the annotator's latest action not yet undone, by when the two
    were made (None: neither holds one). A passage action wins a tie, as it always did."""
    passage = last_undoable(conn, "passage", annotator)
    answer = last_undoable(conn, "answer", annotator)
    if answer is None:
        return None if passage is None else "passage"
    return "answer" if passage is None or answer.made_at > passage.made_at else "passage"
