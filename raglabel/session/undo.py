"""The session's undo stack: the actions it wrote and has not undone, oldest first.

Passage and answer actions go to two logs (the grade log and the answer log), and undo
takes back the latest action of the session, whichever log holds it. Each entry names
what it touched and the event that recorded it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias


@dataclass(frozen=True)
class PassageEntry:
    """A passage's grade, clear, skip, flag or adjudication, in the grade log."""

    query: str  # external ids, as the log holds them
    passage: str
    event_id: int


@dataclass(frozen=True)
class AnswerEntry:
    """An answer criterion's grade, clear or marks, in the answer log."""

    query: str
    system: str
    sample_id: str
    criterion: str
    event_id: int


UndoEntry: TypeAlias = PassageEntry | AnswerEntry


class UndoStack:
    """What this session wrote, for its annotator, in the order it was written."""

    def __init__(self) -> None:
        self._entries: list[UndoEntry] = []

    def __len__(self) -> int:
        return len(self._entries)

    def push(self, entry: UndoEntry) -> None:
        self._entries.append(entry)

    def pop(self) -> UndoEntry | None:
        """The latest action not undone yet, taken off; None when there is none."""
        return self._entries.pop() if self._entries else None

    def clear(self) -> None:
        """Forget every action (another annotator: their own log is what undo reads)."""
        self._entries.clear()
