"""How long an annotator looked at what they graded, passed along with each action."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Timing:
    """When a passage (or an answer) was put in front of the annotator, and how long they
    worked on it."""

    shown_at: str | None = None
    active_ms: int | None = None
