"""Project files as older releases made them, for the tests that open and upgrade them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from raglabel.storage.project import APPLICATION_ID, Project
from raglabel.storage.schema import MIGRATIONS


def build_at_version(path: str | Path, version: int) -> Project:
    """A new file with only the first ``version`` migrations, open and not upgraded.

    Migrations are append-only, so their first steps still build what those releases
    built; the committed old files (``data/make_v1_project.py``) start from here.
    """
    conn = sqlite3.connect(str(path), timeout=30.0, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA journal_mode = WAL")
    steps = "".join(step.sql for step in MIGRATIONS if step.version <= version)
    conn.executescript(
        f"BEGIN IMMEDIATE; {steps}"
        f" PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {version}; COMMIT;"
    )
    return Project(conn, Path(path))
