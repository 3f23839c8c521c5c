"""Build ``project-v4.db``: a project file as raglabel's schema version 4 wrote them.

Version 4 added the full-text index over passages (built here from the passages
stored); version 5 added answer systems, samples and answer grades, which a version-4
file lacks and its upgrade creates empty. The file holds version 2's content
(``make_v2_project``) at schema version 4. Rebuild it (only if this script changes) with:

    .venv/bin/python tests/data/make_v4_project.py
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import make_v1_project
import make_v2_project

TARGET = Path(__file__).with_name("project-v4.db")


def build(path: Path) -> None:
    make_v1_project.build(path, version=4)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO event (id, query_id, passage_id, annotator_id, kind, grade, source,"
            " model, accepted_suggestion, origin, graded_at)"
            " VALUES (?, ?, ?, ?, 'grade', ?, ?, ?, ?, 'app', ?)",
            make_v2_project.EVENTS,
        )
        conn.executemany(
            "INSERT INTO current_grade VALUES (?, ?, ?, ?, ?)", make_v2_project.CURRENT
        )
        conn.executemany(
            "INSERT INTO suggestion (query_id, passage_id, model, grade, reason, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            make_v2_project.SUGGESTIONS,
        )
        conn.execute("INSERT INTO passage_fts (passage_fts) VALUES ('rebuild')")
        conn.execute("COMMIT")
    finally:
        conn.close()


if __name__ == "__main__":
    make_v1_project.main(build, TARGET)
