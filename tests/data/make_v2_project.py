"""Build ``project-v2.db``: a project file as raglabel's schema version 2 wrote them.

Version 2 added judge suggestions (one row per pair and model, no prompt version,
parameters or spread) and two event columns: the judge model of a judge-sourced event,
and whether a human grade accepted a suggestion. The file holds version 1's content
(``make_v1_project``) plus such rows. Rebuild it (only if this script changes) with:

    .venv/bin/python tests/data/make_v2_project.py
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import make_v1_project

TARGET = Path(__file__).with_name("project-v2.db")
# (id, query, passage, annotator, grade, source, model, accepted, graded at)
EVENTS = [
    (11, 1, 3, 2, 4, "human", None, 1, "2024-06-01T10:00:00.000+00:00"),
    (12, 2, 1, 1, 2, "judge", "old-judge", None, "2024-06-01T10:05:00.000+00:00"),
]
CURRENT = [(1, 3, 2, 4, 11), (2, 1, 1, 2, 12)]
# (query, passage, model, grade, reason, created at)
SUGGESTIONS = [
    (1, 1, "gpt-x", 4, "lists the reset steps", "2024-06-01T09:00:00.000+00:00"),
    (1, 3, "gpt-x", 4, "about exporting, not passwords", "2024-06-01T09:00:01.000+00:00"),
    (2, 1, "gpt-x", 2, None, "2024-06-01T09:00:02.000+00:00"),
    (2, 1, "llama", 3, "partly related", "2024-06-01T09:00:03.000+00:00"),
]


def build(path: Path) -> None:
    make_v1_project.build(path, version=2)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO event (id, query_id, passage_id, annotator_id, kind, grade, source,"
            " model, accepted_suggestion, origin, graded_at)"
            " VALUES (?, ?, ?, ?, 'grade', ?, ?, ?, ?, 'app', ?)",
            EVENTS,
        )
        conn.executemany("INSERT INTO current_grade VALUES (?, ?, ?, ?, ?)", CURRENT)
        conn.executemany(
            "INSERT INTO suggestion (query_id, passage_id, model, grade, reason, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            SUGGESTIONS,
        )
        conn.execute("COMMIT")
    finally:
        conn.close()


if __name__ == "__main__":
    make_v1_project.main(build, TARGET)
