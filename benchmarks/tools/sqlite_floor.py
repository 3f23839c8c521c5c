"""The label-import floor: the fewest rows SQLite must hold for a qrels file's labels to
be events in a grade log, written the fastest way Python's sqlite3 has, as a whole
process.

    python benchmarks/tools/sqlite_floor.py QRELS DB

What a label import cannot do without, and nothing else: one transaction (all or
nothing) in WAL mode with synchronous FULL (what the project promises a reader and a
commit); the passages by name with a unique index on it; one event row per label,
as lean as a row can be (integer ids, kind and grade), with the index that replays an
item's history; each pair as a candidate; each pair's current grade. Ids are given in
the order that lets every b-tree grow at its end; the names and the events are read
from JSON arrays, one statement a table (binding rows from Python costs more), and the
candidates and current grades are copied from the events by SQLite.

It prints, as JSON, the number of labels and the seconds spent in SQLite (statements,
commit, and the close that copies the log into the file); the caller times the process.
DB must not exist; it is made, then deleted unless --keep.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

SCHEMA = """
CREATE TABLE query (id INTEGER PRIMARY KEY, ext_id TEXT NOT NULL UNIQUE);
CREATE TABLE passage (id INTEGER PRIMARY KEY, ext_id TEXT NOT NULL UNIQUE);
CREATE TABLE event (
    id INTEGER PRIMARY KEY, query_id INTEGER NOT NULL, passage_id INTEGER NOT NULL,
    annotator_id INTEGER NOT NULL, kind INTEGER NOT NULL, grade INTEGER
);
CREATE INDEX event_item ON event (query_id, passage_id, annotator_id);
CREATE TABLE candidate (
    query_id INTEGER NOT NULL, passage_id INTEGER NOT NULL,
    PRIMARY KEY (query_id, passage_id)
) WITHOUT ROWID;
CREATE TABLE current_grade (
    query_id INTEGER NOT NULL, passage_id INTEGER NOT NULL, annotator_id INTEGER NOT NULL,
    grade INTEGER NOT NULL, event_id INTEGER NOT NULL,
    PRIMARY KEY (query_id, passage_id, annotator_id)
) WITHOUT ROWID;
"""
PASSAGE_BITS = 29


def main(argv: list[str]) -> int:
    keep = "--keep" in argv
    paths = [a for a in argv if a != "--keep"]
    if len(paths) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    qrels, db = Path(paths[0]), Path(paths[1])
    if db.exists():
        print(f"{db} exists", file=sys.stderr)
        return 2
    frame = (
        pl.scan_csv(
            qrels,
            separator=" ",
            has_header=False,
            schema={
                "qid": pl.String,
                "iteration": pl.String,
                "docid": pl.String,
                "label": pl.Int64,
            },
        )
        .select("qid", "docid", "label")
        .collect()
    )
    # Queries numbered in order of first mention, passages in name order (the orders
    # in which the unique indexes on names grow at their ends too).
    queries = frame["qid"].unique(maintain_order=True)
    passages = frame["docid"].unique().sort()
    query_ids = frame["qid"].replace_strict(queries, np.arange(1, queries.len() + 1))
    passage_ids = frame["docid"].replace_strict(passages, np.arange(1, passages.len() + 1))
    grades = (frame["label"].clip(0, 4) + 1).to_numpy().astype(np.int64)
    packed = (
        (query_ids.to_numpy().astype(np.int64) << 32)
        | (passage_ids.to_numpy().astype(np.int64) << 3)
        | grades
    )
    # The arrays' text is made before the clock starts: the SQL alone is timed.
    names = {
        table: json.dumps(ids.to_list())
        for table, ids in (("query", queries), ("passage", passages))
    }
    events = "[" + ",".join(map(str, packed.tolist())) + "]"
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA cache_size = -262144")
        conn.execute("PRAGMA temp_store = MEMORY")
        conn.executescript(SCHEMA)
        started = time.perf_counter()
        conn.execute("BEGIN")
        for table, text in names.items():
            conn.execute(f"INSERT INTO {table} (ext_id) SELECT value FROM json_each(?)", (text,))
        conn.execute(
            "INSERT INTO event SELECT 1 + key, value >> 32,"
            f" (value >> 3) & {(1 << PASSAGE_BITS) - 1}, 1, 1, value & 7 FROM json_each(?)",
            (events,),
        )
        conn.execute(
            "INSERT INTO candidate SELECT query_id, passage_id FROM event NOT INDEXED"
            " ORDER BY query_id, passage_id"
        )
        conn.execute(
            "INSERT INTO current_grade SELECT query_id, passage_id, annotator_id, grade, id"
            " FROM event NOT INDEXED ORDER BY query_id, passage_id, annotator_id"
        )
        conn.execute("COMMIT")
        conn.close()  # it copies the log into the file, as the end of an import does
        sql_s = time.perf_counter() - started
    finally:
        conn.close()  # (again, after an error; a second close does nothing)
        if not keep:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{db}{suffix}").unlink(missing_ok=True)
    print(json.dumps({"labels": frame.height, "sql_s": sql_s}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
