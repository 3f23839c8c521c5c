"""The database schema, as the ordered list of migrations that build it.

A new file runs every migration; a file made by an older raglabel runs the ones it
lacks. Migrations are append-only: once released, a step is never edited, because
files in the wild were built by it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Migration:
    version: int
    purpose: str
    sql: str


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "queries, passages, runs, candidates and the grade event log",
        """
        CREATE TABLE query (
            id INTEGER PRIMARY KEY,
            ext_id TEXT NOT NULL UNIQUE,
            text TEXT,
            expected_answer TEXT,
            k INTEGER CHECK (k IS NULL OR k >= 1),
            metadata TEXT
        );
        CREATE TABLE passage (
            id INTEGER PRIMARY KEY,
            ext_id TEXT NOT NULL UNIQUE,
            title TEXT,
            text TEXT,
            metadata TEXT
        );
        CREATE TABLE annotator (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE
        );
        CREATE TABLE run (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            source TEXT NOT NULL,
            imported_at TEXT NOT NULL,
            queries INTEGER NOT NULL,
            entries INTEGER NOT NULL
        );
        -- One row per (run, query): ids newline-joined and float64 scores, both in rank
        -- order. A row per entry would make a 10M-line run several times its file size.
        CREATE TABLE ranking (
            run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
            query_id INTEGER NOT NULL REFERENCES query(id),
            passage_ids BLOB NOT NULL,
            scores BLOB,
            PRIMARY KEY (run_id, query_id)
        ) WITHOUT ROWID;
        -- The passages annotators are asked to grade: each run's top entries (the pool
        -- depth) and every passage a label file names.
        CREATE TABLE candidate (
            query_id INTEGER NOT NULL REFERENCES query(id),
            passage_id INTEGER NOT NULL REFERENCES passage(id),
            best_rank INTEGER,
            PRIMARY KEY (query_id, passage_id)
        ) WITHOUT ROWID;
        CREATE TABLE event (
            id INTEGER PRIMARY KEY,
            query_id INTEGER NOT NULL REFERENCES query(id),
            passage_id INTEGER NOT NULL REFERENCES passage(id),
            annotator_id INTEGER NOT NULL REFERENCES annotator(id),
            kind TEXT NOT NULL CHECK (kind IN ('grade', 'clear', 'undo', 'skip', 'flag')),
            grade INTEGER CHECK (grade BETWEEN 1 AND 5),
            target INTEGER REFERENCES event(id),
            note TEXT,
            source TEXT NOT NULL DEFAULT 'human',
            origin TEXT,
            shown_at TEXT,
            graded_at TEXT NOT NULL,
            active_ms INTEGER CHECK (active_ms IS NULL OR active_ms >= 0),
            CHECK ((kind = 'grade') = (grade IS NOT NULL)),
            CHECK ((kind = 'undo') = (target IS NOT NULL))
        );
        CREATE INDEX event_item ON event (query_id, passage_id, annotator_id);
        CREATE INDEX event_target ON event (target) WHERE target IS NOT NULL;
        CREATE INDEX event_annotator ON event (annotator_id, id);
        -- Derived from the event log and kept in step with it in the same transaction;
        -- rebuild_current() recomputes it from the log alone.
        CREATE TABLE current_grade (
            query_id INTEGER NOT NULL,
            passage_id INTEGER NOT NULL,
            annotator_id INTEGER NOT NULL,
            grade INTEGER NOT NULL CHECK (grade BETWEEN 1 AND 5),
            event_id INTEGER NOT NULL REFERENCES event(id),
            PRIMARY KEY (query_id, passage_id, annotator_id)
        ) WITHOUT ROWID;
        """,
    ),
    Migration(
        2,
        "judge suggestions kept apart from human grades; grades record an accepted suggestion",
        """
        ALTER TABLE event ADD COLUMN model TEXT;
        ALTER TABLE event ADD COLUMN accepted_suggestion INTEGER
            CHECK (accepted_suggestion IS NULL OR accepted_suggestion IN (0, 1));
        CREATE TABLE suggestion (
            id INTEGER PRIMARY KEY,
            query_id INTEGER NOT NULL REFERENCES query(id),
            passage_id INTEGER NOT NULL REFERENCES passage(id),
            model TEXT NOT NULL,
            grade INTEGER NOT NULL CHECK (grade BETWEEN 1 AND 5),
            reason TEXT,
            created_at TEXT NOT NULL
        );
        CREATE INDEX suggestion_item ON suggestion (query_id, passage_id, model);
        """,
    ),
)

SCHEMA_VERSION = MIGRATIONS[-1].version
