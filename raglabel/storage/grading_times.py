"""When each annotator gave their grades at the keys: the times a lead's progress view
measures pace from (``raglabel progress``).

Only grade events made at the keys count: ``origin = 'app'`` (the terminal app and
served grading, which runs the same app) and the lead's adjudications. A grade read from
a label file carries the file's time, or the import's for every line alike, which says
nothing of how long anyone worked. Every such grade event counts, undone or graded
again later included: each one was a moment of work.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict

from raglabel.storage.labels import ADJUDICATION

#: The ``event.origin`` of a grade given in the app (``session.grading``).
APP = "app"

_TIMES = (
    "SELECT a.name, e.graded_at FROM event e JOIN annotator a ON a.id = e.annotator_id"
    " WHERE e.kind = 'grade' AND e.source = 'human' AND e.origin IN (?, ?)"
    " ORDER BY a.name, e.graded_at, e.id"
)


def grading_times(conn: sqlite3.Connection) -> dict[str, list[str]]:
    """Annotator name -> the times (ISO 8601, UTC) of their grade events made at the
    keys, oldest first; an annotator with none is left out."""
    times: dict[str, list[str]] = defaultdict(list)
    for name, graded_at in conn.execute(_TIMES, (APP, ADJUDICATION)):
        times[name].append(graded_at)
    return dict(times)
