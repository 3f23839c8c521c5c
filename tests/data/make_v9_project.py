"""Build ``project-v9.db``: a project file as raglabel's schema version 9 wrote them.

Version 9 added labels other judges wrote (``raglabel import --judgments``); version 10
added the audit sample (``raglabel audit``), the draws a version-9 file lacks and its
upgrade starts empty. The file holds version 8's content (``make_v8_project``) upgraded
to version 9 by version 9's own migration step, as a version-8 file opened by that
release was. Rebuild it (only if this script changes) with:

    .venv/bin/python tests/data/make_v9_project.py
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))

import make_v1_project
import make_v8_project

from raglabel.storage.schema import MIGRATIONS

TARGET = Path(__file__).with_name("project-v9.db")


def build(path: Path) -> None:
    make_v8_project.build(path)
    (step,) = [m for m in MIGRATIONS if m.version == 9]
    assert step.fill is None
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA foreign_keys = ON")
        # The transaction opens inside the script, so executescript() has none to commit
        # first, and the version joins it, as in an upgrade.
        conn.executescript(f"BEGIN IMMEDIATE; {step.sql}")
        conn.execute("PRAGMA user_version = 9")
        conn.execute("COMMIT")
        conn.execute("VACUUM")  # the same bytes for the same content, rebuild after rebuild
    finally:
        conn.close()


if __name__ == "__main__":
    make_v1_project.main(build, TARGET)
