"""Build ``project-v3.db``: a project file as raglabel's schema version 3 wrote them.

Version 3 added judge runs, prompts and raw judgments; version 4 added the full-text
index over passages, which a version-3 file lacks and its upgrade builds. The file holds
version 2's content (``make_v2_project``) at schema version 3. Rebuild it (only if this
script changes) with:

    .venv/bin/python tests/data/make_v3_project.py
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import make_v1_project
import make_v2_project

TARGET = Path(__file__).with_name("project-v3.db")


def build(path: Path, version: int = 3) -> None:
    """Version 2's content at schema ``version`` (3 or later)."""
    make_v1_project.build(path, version=version)
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
        if version >= 4:
            # The full-text index (version 4) is built from the passages stored.
            conn.execute("INSERT INTO passage_fts (passage_fts) VALUES ('rebuild')")
        conn.execute("COMMIT")
    finally:
        conn.close()


if __name__ == "__main__":
    make_v1_project.main(build, TARGET)
