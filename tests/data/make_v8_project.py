"""Build ``project-v8.db``: a project file as raglabel's schema version 8 wrote them.

Version 8 added each ranking's passage rows as integers; version 9 added labels other
judges wrote (``raglabel import --judgments``), kept as suggestions marked by where they
came from, which a version-8 file's suggestions lack and its upgrade marks as the judge's.
The file holds version 7's content (``make_v7_project``) upgraded to version 8 by
version 8's own migration step, as a version-7 file opened by that release was. Rebuild
it (only if this script changes) with:

    .venv/bin/python tests/data/make_v8_project.py
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))

import make_v1_project
import make_v7_project

from raglabel.storage.schema import MIGRATIONS

TARGET = Path(__file__).with_name("project-v8.db")


def build(path: Path) -> None:
    make_v7_project.build(path)
    (step,) = [m for m in MIGRATIONS if m.version == 8]
    assert step.fill is not None
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA foreign_keys = ON")
        # The transaction opens inside the script, so executescript() has none to commit
        # first, and the step's fill and the version join it, as in an upgrade.
        conn.executescript(f"BEGIN IMMEDIATE; {step.sql}")
        step.fill(conn)
        conn.execute("PRAGMA user_version = 8")
        conn.execute("COMMIT")
        conn.execute("VACUUM")  # the same bytes for the same content, rebuild after rebuild
    finally:
        conn.close()


if __name__ == "__main__":
    make_v1_project.main(build, TARGET)
