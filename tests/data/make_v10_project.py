"""Build ``project-v10.db``: a project file as raglabel's schema version 10 wrote them.

Version 10 added the audit sample (``raglabel audit``); version 11 added assignments
(``raglabel assign``), which a version-10 file lacks and its upgrade starts without. The
file holds version 9's content (``make_v9_project``) upgraded to version 10 by version
10's own migration step, as a version-9 file opened by that release was, and then one
audit draw of one query, as ``raglabel audit --sample 1 --seed 4`` recorded it. Rebuild
it (only if this script changes) with:

    .venv/bin/python tests/data/make_v10_project.py
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))

import make_v1_project
import make_v9_project

from raglabel.storage.schema import MIGRATIONS

TARGET = Path(__file__).with_name("project-v10.db")


def build(path: Path) -> None:
    make_v9_project.build(path)
    (step,) = [m for m in MIGRATIONS if m.version == 10]
    assert step.fill is None
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA foreign_keys = ON")
        # The transaction opens inside the script, so executescript() has none to commit
        # first, and the version joins it, as in an upgrade.
        conn.executescript(f"BEGIN IMMEDIATE; {step.sql}")
        conn.execute("PRAGMA user_version = 10")
        conn.execute("COMMIT")
        # A draw as version 10 wrote one: q2 is the first of q1, q2 under seed 4
        # (audit.draw_order); a fixed time, so that rebuilds give the same bytes.
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "INSERT INTO audit_draw (seed, population, drawn_at)"
            " VALUES (4, 2, '2026-11-01T09:00:00+00:00')"
        )
        conn.execute(
            "INSERT INTO audit_member (draw_id, position, query_id)"
            " SELECT 1, 0, id FROM query WHERE ext_id = 'q2'"
        )
        conn.execute("COMMIT")
        conn.execute("VACUUM")  # the same bytes for the same content, rebuild after rebuild
    finally:
        conn.close()


if __name__ == "__main__":
    make_v1_project.main(build, TARGET)
