"""Build ``project-v1.db``: a project file as raglabel's schema version 1 wrote them.

The upgrade tests open a copy of it. It is committed, not built at test time, so that
it stays what version 1 made even as the code that builds projects moves on. Rebuild it
(only if this script changes) with:

    .venv/bin/python tests/data/make_v1_project.py

Events are plain INSERTs with version 1's columns (no ``model`` or
``accepted_suggestion``), and ``current_grade`` holds what version 1 kept in step with
them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parents[1]))

from old_schema import build_at_version

from raglabel.storage.runs import SCORE_DTYPE, encode_ids

TARGET = Path(__file__).with_name("project-v1.db")

QUERIES = [
    ("q1", "How do I reset my password?", "Use the reset link", 5),
    ("q2", "Can I export my data?", None, None),
]
PASSAGES = [
    ("d1", "Passwords", "To reset your password, open Settings and choose Reset."),
    ("d2", None, "Billing happens on the first of each month."),
    ("d3", "Export", "Export your data as CSV from the Account page."),
]
ANNOTATORS = ["alice", "bob"]
# (id, query, passage, annotator, kind, grade, target, note, origin, shown at, graded at,
#  active_ms), ids as version 1 assigned them and times in seconds after START.
START = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
EVENTS = [
    (1, 1, 1, 1, "grade", 3, None, None, "app", None, 0.0, 900),
    (2, 1, 1, 1, "grade", 5, None, None, "app", None, 1.0, 400),
    (3, 1, 1, 1, "undo", None, 2, None, "app", None, 2.0, None),
    (4, 1, 1, 2, "grade", 4, None, None, "qrels:old.txt", None, 60.0, None),
    (5, 1, 2, 2, "grade", 2, None, None, "app", None, 120.0, 1200),
    (6, 1, 2, 2, "clear", None, None, None, "app", None, 125.0, None),
    (7, 2, 3, 1, "grade", 1, None, None, "app", None, 180.0, 700),
    (8, 2, 2, 1, "skip", None, None, "too long to judge", "app", None, 210.0, None),
    (9, 2, 3, 2, "flag", None, None, "duplicate of d1?", "app", None, 240.0, None),
    (10, 2, 3, 2, "grade", 5, None, None, "app", 250.0, 252.5, 1500),
]
# (query, passage, annotator, grade, event): what version 1 cached for the events above.
CURRENT = [(1, 1, 1, 3, 1), (1, 1, 2, 4, 4), (2, 3, 1, 1, 7), (2, 3, 2, 5, 10)]


def _stamp(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return (START + timedelta(seconds=seconds)).isoformat(timespec="milliseconds")


def _scores(*values: float) -> bytes:
    return np.array(values, dtype=SCORE_DTYPE).tobytes()


def build(path: Path, version: int = 1) -> None:
    """Version 1's content; ``make_v2_project`` builds on it at schema version 2."""
    project = build_at_version(path, version)
    conn = project.conn
    with project.write():
        conn.executemany(
            "INSERT INTO query (ext_id, text, expected_answer, k) VALUES (?, ?, ?, ?)", QUERIES
        )
        conn.executemany("INSERT INTO passage (ext_id, title, text) VALUES (?, ?, ?)", PASSAGES)
        conn.executemany("INSERT INTO annotator (name) VALUES (?)", [(a,) for a in ANNOTATORS])
        # The run as version 1's import stored it (depth 2), written out here: today's
        # import writes columns version 1 did not have.
        conn.execute(
            "INSERT INTO run (name, source, imported_at, queries, entries)"
            " VALUES ('bm25', 'runs/bm25.trec', '', 2, 5)"
        )
        conn.executemany(
            "INSERT INTO ranking (run_id, query_id, passage_ids, scores) VALUES (1, ?, ?, ?)",
            [
                (1, encode_ids(["d1", "d2", "d3"]), _scores(12.5, 7.25, 3.0)),
                (2, encode_ids(["d3", "d1"]), _scores(9.0, 1.5)),
            ],
        )
        conn.executemany(
            "INSERT INTO candidate (query_id, passage_id, best_rank) VALUES (?, ?, ?)",
            [(1, 1, 1), (1, 2, 2), (2, 3, 1), (2, 1, 2)],
        )
        # A fixed stamp, so that rebuilding the file gives the same content.
        conn.execute("UPDATE run SET imported_at = '2024-05-01T09:00:00.000+00:00'")
        conn.executemany(
            "INSERT INTO event (id, query_id, passage_id, annotator_id, kind, grade, target,"
            " note, source, origin, shown_at, graded_at, active_ms)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (*event[:8], "human", event[8], _stamp(event[9]), _stamp(event[10]), event[11])
                for event in EVENTS
            ],
        )
        conn.executemany("INSERT INTO current_grade VALUES (?, ?, ?, ?, ?)", CURRENT)
    # One self-contained file: everything moved out of the WAL, and rollback-journal
    # mode so that no -wal or -shm file is expected beside it.
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("PRAGMA journal_mode = DELETE")
    project.close()


def main(builder: Callable[[Path], None] = build, default: Path = TARGET) -> None:
    """Write the file (to the path given on the command line, else the committed one)."""
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else default
    target.unlink(missing_ok=True)
    builder(target)
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
