"""The figures of the lead's Progress screen: ``raglabel progress``'s, read in a worker
thread on a read-only connection of its own, so that the app's keys never wait for them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from raglabel.analysis.progress import Progress, progress
from raglabel.storage.project import Project

if TYPE_CHECKING:
    from raglabel.session.grading import GradingSession


@dataclass(frozen=True)
class ProgressRequest:
    """What a read of the figures needs: the project file, and the depth a query is done
    to. An in-memory project (tests) has no file to open again: its figures are read on
    the spot, on the session's own connection, and carried here."""

    path: Path | None
    depth: int
    read: Progress | None = None


def progress_request(session: GradingSession) -> ProgressRequest:
    """The request for ``session``'s project, a query done to the deepest cutoff the app
    shows (as ``raglabel audit`` and ``raglabel progress`` default to the default's)."""
    depth = max(session.options.cutoffs)
    path = session.project.path
    if path is None:
        return ProgressRequest(None, depth, progress(session.project, depth))
    return ProgressRequest(path, depth)


def read_progress(request: ProgressRequest) -> Progress:
    """The team's figures now. Safe in a worker thread: the file is read on a read-only
    connection of its own, in one read transaction, which sees every committed grade,
    whoever made it, and holds up no writer."""
    if request.read is not None:
        return request.read
    assert request.path is not None
    with Project.reader(request.path) as reader:
        return progress(reader, request.depth)
