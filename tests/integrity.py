"""What "nothing lost, nothing broken" means for a project file, checked the same way
by every fault test: SQLite's own checks, and the grade cache equal to the log."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from raglabel.storage.grades import rebuild_current


def assert_sound(path: Path) -> None:
    """The file passes integrity and foreign-key checks, and every cached current grade
    is what replaying the event log gives."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        cached = sorted(conn.execute("SELECT * FROM current_grade").fetchall())
        conn.execute("BEGIN")
        try:
            rebuild_current(conn)
            replayed = sorted(conn.execute("SELECT * FROM current_grade").fetchall())
        finally:
            conn.execute("ROLLBACK")
        assert cached == replayed
    finally:
        conn.close()


def checksum(path: Path) -> str:
    """The project's content, WAL included: fold the WAL in first so that two files
    holding the same pages compare equal byte for byte."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return hashlib.sha256(path.read_bytes()).hexdigest()
