"""Build ``project-v5.db``: a project file as raglabel's schema version 5 wrote them.

Version 5 added answer systems, samples, contexts and human answer grades; version 6
added the judge's answers about answer samples, which a version-5 file lacks and its
upgrade creates empty. The file holds version 2's content (``make_v2_project``) at
schema version 5, plus one answer system with a sample, its contexts and an answer
grade, so the upgrade can be seen to keep them. Rebuild it (only if this script
changes) with:

    .venv/bin/python tests/data/make_v5_project.py
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import make_v1_project
import make_v3_project

TARGET = Path(__file__).with_name("project-v5.db")
STAMP = "2026-11-20T10:00:00+00:00"


def build(path: Path, version: int = 5) -> None:
    """This file's content at schema ``version`` (5 or later)."""
    make_v3_project.build(path, version=version)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN")
        query, passage = conn.execute(
            "SELECT c.query_id, c.passage_id FROM current_grade c ORDER BY 1, 2 LIMIT 1"
        ).fetchone()
        annotator = conn.execute("SELECT min(id) FROM annotator").fetchone()[0]
        conn.execute(
            "INSERT INTO answer_system (id, name, format, source, imported_at)"
            " VALUES (1, 'rag-a', 'raglabel', 'answers.jsonl', ?)",
            (STAMP,),
        )
        conn.execute(
            "INSERT INTO answer_sample (id, system_id, sample_id, query_id, question, answer,"
            " reference, metadata, line) VALUES (1, 1, 's1', ?, 'a question', 'An answer.',"
            " '\"a reference\"', NULL, 1)",
            (query,),
        )
        conn.execute(
            "INSERT INTO answer_context (sample_id, position, passage_id, rank, text)"
            " VALUES (1, 0, ?, NULL, 'a context')",
            (passage,),
        )
        conn.execute(
            "INSERT INTO answer_event (id, system_id, sample_id, criterion, annotator_id, kind,"
            " grade, unsupported, source, origin, graded_at)"
            " VALUES (1, 1, 's1', 'faithfulness', ?, 'grade', 4, '[[0, 3]]', 'human', 'app', ?)",
            (annotator, STAMP),
        )
        conn.execute("COMMIT")
    finally:
        conn.close()


if __name__ == "__main__":
    make_v1_project.main(build, TARGET)
