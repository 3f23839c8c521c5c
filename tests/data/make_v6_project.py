"""Build ``project-v6.db``: a project file as raglabel's schema version 6 wrote them.

Version 6 added the judge's answers about answer samples; version 7 added invites to
grade in a browser, which a version-6 file lacks and its upgrade creates empty. The file
holds version 5's content (``make_v5_project``) at schema version 6, plus one judge run
over answers with one answer, so the upgrade can be seen to keep it. Rebuild it (only if
this script changes) with:

    .venv/bin/python tests/data/make_v6_project.py
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import make_v1_project
import make_v5_project

TARGET = Path(__file__).with_name("project-v6.db")
STAMP = "2026-11-22T10:00:00+00:00"


def build(path: Path, version: int = 6) -> None:
    """This file's content at schema ``version`` (6 or later)."""
    make_v5_project.build(path, version=version)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN")
        conn.execute(
            "INSERT OR IGNORE INTO prompt (version, text, created_at)"
            " VALUES ('answers-v1', 'grade the answer', ?)",
            (STAMP,),
        )
        conn.execute(
            "INSERT INTO judge_run (id, endpoint, models, prompt_version, params, repeats,"
            " started_at, finished_at, status, planned, ok, kind)"
            " VALUES (100, 'http://127.0.0.1:9/v1', '[\"m1\"]', 'answers-v1', '{}', 1, ?, ?,"
            " 'done', 1, 1, 'answers')",
            (STAMP, STAMP),
        )
        conn.execute(
            "INSERT INTO answer_judgment (run_id, system_id, sample_id, criterion, model,"
            " repeat, cache_key, text_key, status, grade, reason, raw, attempts, created_at)"
            " VALUES (100, 1, 's1', 'faithfulness', 'm1', 0, 'c1', 't1', 'ok', 4,"
            " 'supported', '{\"grade\": 4}', 1, ?)",
            (STAMP,),
        )
        conn.execute("COMMIT")
    finally:
        conn.close()


if __name__ == "__main__":
    make_v1_project.main(build, TARGET)
