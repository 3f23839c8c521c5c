"""The session's undo stack: the actions it wrote and has not undone, oldest first.

Passage and answer actions are events of one model (``storage.events``) kept in two logs,
and undo takes back the latest action of the session, whichever log holds it. Each entry
names the target it touched (a passage, or an answer's criterion) and the event that
recorded it; the target's kind says which log to undo in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # Only named here: the event model loads with the first write, not the app's start.
    from raglabel.storage.events import Target


@dataclass(frozen=True)
class UndoEntry:
    """One action of this session: a passage's grade, clear, skip, flag or adjudication,
    or an answer criterion's grade, clear or marks."""

    target: Target
    event_id: int


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
