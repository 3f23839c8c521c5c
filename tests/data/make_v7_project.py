"""Build ``project-v7.db``: a project file as raglabel's schema version 7 wrote them.

Version 7 added invites to grade in a browser; version 8 added each ranking's passage
rows as integers, which a version-7 file lacks and its upgrade writes from the ranking's
passage ids. The file holds version 6's content (``make_v6_project``) at schema version
7, plus one invite, so the upgrade can be seen to keep it. Rebuild it (only if this
script changes) with:

    .venv/bin/python tests/data/make_v7_project.py
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import make_v1_project
import make_v6_project

TARGET = Path(__file__).with_name("project-v7.db")
STAMP = "2026-11-25T10:00:00+00:00"


def build(path: Path) -> None:
    make_v6_project.build(path, version=7)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN")
        # A fixed salt and hash: no token opens it, and rebuilding gives the same file.
        conn.execute(
            "INSERT INTO invite (annotator_id, salt, token_hash, created_at) VALUES (2, ?, ?, ?)",
            (bytes(16), bytes(32), STAMP),
        )
        conn.execute("COMMIT")
    finally:
        conn.close()


if __name__ == "__main__":
    make_v1_project.main(build, TARGET)
