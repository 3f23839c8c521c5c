"""Opening a project for a command that only reads it, saying what the reading assumes."""

from __future__ import annotations

import sys
from pathlib import Path

from raglabel.storage.project import Project


def open_to_read(db: str | Path, command: str) -> Project:
    """``db`` opened read-only; where it had to be read without locks (a read-only
    folder), the command's warning says so on stderr before anything else is read."""
    project = Project.open_read(db)
    note = project.immutable_note
    if note is not None:
        print(f"raglabel {command}: warning: {note}", file=sys.stderr)
    return project
