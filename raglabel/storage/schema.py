"""The database schema, as the ordered list of migrations that build it.

A new file runs every migration; a file made by an older raglabel runs the ones it
lacks. Migrations are append-only: once released, a step is never edited, because
files in the wild were built by it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Migration:
    version: int
    purpose: str
    sql: str
    # What SQL alone cannot write (rows computed from the stored data), run after ``sql``
    # in the same transaction.
    fill: Callable[[sqlite3.Connection], None] | None = None


def _fill_passage_rows(conn: sqlite3.Connection) -> None:
    # Imported here: only an upgrade from before these rows needs the runs module (and the
    # numpy it brings); opening a project does not.
    from raglabel.storage.runs import fill_passage_rows

    fill_passage_rows(conn)


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
    Migration(
        3,
        "judge runs, prompts and every raw judge answer, so runs resume and repeat from cache",
        """
        -- Templates are kept whole so a suggestion's prompt version can always be read
        -- back, and so the grading app can rerun the judge exactly as the CLI last did.
        CREATE TABLE prompt (
            version TEXT PRIMARY KEY,
            text TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        -- The endpoint is stored without user info or query string, and the API key
        -- never: only the name of the environment variable that held it.
        CREATE TABLE judge_run (
            id INTEGER PRIMARY KEY,
            endpoint TEXT NOT NULL,
            models TEXT NOT NULL,
            prompt_version TEXT NOT NULL REFERENCES prompt(version),
            params TEXT NOT NULL,
            api_key_env TEXT,
            repeats INTEGER NOT NULL CHECK (repeats >= 1),
            limits TEXT,
            started_at TEXT NOT NULL,
            finished_at TEXT,
            status TEXT NOT NULL CHECK (status IN ('running', 'done', 'interrupted', 'stopped')),
            planned INTEGER NOT NULL DEFAULT 0,
            cached INTEGER NOT NULL DEFAULT 0,
            ok INTEGER NOT NULL DEFAULT 0,
            failed INTEGER NOT NULL DEFAULT 0,
            retries INTEGER NOT NULL DEFAULT 0,
            note TEXT
        );
        -- One row per answer slot tried: (pair, model, repeat) under one prompt and
        -- parameter set. A failed slot is tried again by the next run; the failure stays.
        CREATE TABLE judgment (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES judge_run(id),
            query_id INTEGER NOT NULL REFERENCES query(id),
            passage_id INTEGER NOT NULL REFERENCES passage(id),
            model TEXT NOT NULL,
            repeat INTEGER NOT NULL CHECK (repeat >= 0),
            cache_key TEXT NOT NULL,
            -- Which texts the answer was about: a suggestion is made only from answers
            -- about the query and passage as they read now.
            text_key TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
            grade INTEGER CHECK (grade BETWEEN 1 AND 5),
            reason TEXT,
            raw TEXT,
            error TEXT,
            attempts INTEGER NOT NULL CHECK (attempts >= 0),
            repaired INTEGER NOT NULL DEFAULT 0 CHECK (repaired IN (0, 1)),
            latency_ms INTEGER,
            prompt_tokens INTEGER,
            completion_tokens INTEGER,
            created_at TEXT NOT NULL,
            CHECK ((status = 'ok') = (grade IS NOT NULL)),
            CHECK ((status = 'failed') = (error IS NOT NULL))
        );
        CREATE INDEX judgment_cache ON judgment (cache_key, status);
        CREATE INDEX judgment_item ON judgment (query_id, passage_id);
        ALTER TABLE suggestion ADD COLUMN endpoint TEXT;
        ALTER TABLE suggestion ADD COLUMN prompt_version TEXT;
        ALTER TABLE suggestion ADD COLUMN params TEXT;
        ALTER TABLE suggestion ADD COLUMN answers INTEGER;
        ALTER TABLE suggestion ADD COLUMN low INTEGER;
        ALTER TABLE suggestion ADD COLUMN high INTEGER;
        ALTER TABLE suggestion ADD COLUMN flagged TEXT;
        -- A suggestion is about the texts the judge read: when an import changes them,
        -- it no longer applies (the answers stay, as history, and the next run asks
        -- again because their cache keys name the old texts).
        CREATE TRIGGER passage_text_changed AFTER UPDATE OF title, text ON passage
        WHEN old.text IS NOT new.text OR old.title IS NOT new.title
        BEGIN
            DELETE FROM suggestion WHERE passage_id = new.id;
        END;
        CREATE TRIGGER query_text_changed AFTER UPDATE OF text ON query
        WHEN old.text IS NOT new.text
        BEGIN
            DELETE FROM suggestion WHERE query_id = new.id;
        END;
        """,
    ),
    Migration(
        4,
        "full-text search over every passage (FTS5, BM25), built from the passages stored",
        """
        -- External content: the text lives in passage only. No triggers keep it in step:
        -- the import that writes passages rebuilds it in the same transaction, which
        -- costs half of what a trigger per row does on a large import (see search.py).
        CREATE VIRTUAL TABLE passage_fts USING fts5(
            title, text, content = 'passage', content_rowid = 'id',
            tokenize = 'unicode61 remove_diacritics 2'
        );
        INSERT INTO passage_fts (passage_fts) VALUES ('rebuild');
        """,
    ),
    Migration(
        5,
        "answer files: each system's answers with their contexts, and human answer grades",
        """
        -- A system is one answer file's producer (NAME of --answers NAME=FILE). Its row is
        -- kept across re-imports, which replace its samples, so grades keep their system.
        CREATE TABLE answer_system (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            format TEXT NOT NULL,
            source TEXT NOT NULL,
            imported_at TEXT NOT NULL
        );
        -- question: as the file gave it (the query may be matched by id or text);
        -- answer and reference NULL when missing or empty (criteria needing them are NA);
        -- reference: JSON, a string or a list of key facts; metadata: JSON object.
        CREATE TABLE answer_sample (
            id INTEGER PRIMARY KEY,
            system_id INTEGER NOT NULL REFERENCES answer_system(id),
            sample_id TEXT NOT NULL,
            query_id INTEGER NOT NULL REFERENCES query(id),
            question TEXT,
            answer TEXT,
            reference TEXT,
            metadata TEXT,
            line INTEGER NOT NULL,
            UNIQUE (system_id, sample_id)
        );
        -- Contexts in file order (position 0-based); rank is the file's ranks entry, if any;
        -- text is the chunk as retrieved (NULL when the file named the passage by id only).
        CREATE TABLE answer_context (
            sample_id INTEGER NOT NULL REFERENCES answer_sample(id) ON DELETE CASCADE,
            position INTEGER NOT NULL CHECK (position >= 0),
            passage_id INTEGER NOT NULL REFERENCES passage(id),
            rank INTEGER CHECK (rank IS NULL OR rank >= 0),
            text TEXT,
            PRIMARY KEY (sample_id, position)
        ) WITHOUT ROWID;
        -- Human (and later judge) answer grades: append-only, like event, with the same
        -- kinds and meaning (current grade = last grade or clear no undo reverted). A
        -- table of its own because event's item is a (query, passage) pair, NOT NULL and
        -- referenced by current_grade, labels and every passage-level reader. Keyed by
        -- the sample's id text, so a re-import of the system keeps its grades.
        CREATE TABLE answer_event (
            id INTEGER PRIMARY KEY,
            system_id INTEGER NOT NULL REFERENCES answer_system(id),
            sample_id TEXT NOT NULL,
            criterion TEXT NOT NULL
                CHECK (criterion IN ('faithfulness', 'answer_relevancy', 'context_recall')),
            annotator_id INTEGER NOT NULL REFERENCES annotator(id),
            kind TEXT NOT NULL CHECK (kind IN ('grade', 'clear', 'undo')),
            grade INTEGER CHECK (grade BETWEEN 1 AND 5),
            unsupported TEXT,
            target INTEGER REFERENCES answer_event(id),
            source TEXT NOT NULL DEFAULT 'human',
            model TEXT,
            origin TEXT,
            shown_at TEXT,
            graded_at TEXT NOT NULL,
            active_ms INTEGER CHECK (active_ms IS NULL OR active_ms >= 0),
            CHECK ((kind = 'grade') = (grade IS NOT NULL)),
            CHECK ((kind = 'undo') = (target IS NOT NULL))
        );
        CREATE INDEX answer_event_item
            ON answer_event (system_id, sample_id, criterion, annotator_id);
        """,
    ),
    Migration(
        6,
        "judge answers about answer samples: one per (sample, criterion, model, repeat)",
        """
        -- A run judges passages or answers; the app reruns the latest passage run only.
        ALTER TABLE judge_run ADD COLUMN kind TEXT NOT NULL DEFAULT 'passages'
            CHECK (kind IN ('passages', 'answers'));
        -- Like judgment, for an answer sample. criterion is one of the three answer
        -- criteria, or ctx_rank_prec, whose reply grades every chunk (chunks: JSON list
        -- of {"position", "grade", "reason"}, positions 1-based, one per context) and has
        -- no single grade. Keyed by the sample's id text, as answer_event is, so a
        -- re-import keeps the answers; text_key names the texts they were about, so an
        -- answer about texts that changed no longer counts.
        CREATE TABLE answer_judgment (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES judge_run(id),
            system_id INTEGER NOT NULL REFERENCES answer_system(id),
            sample_id TEXT NOT NULL,
            criterion TEXT NOT NULL CHECK (criterion IN
                ('faithfulness', 'answer_relevancy', 'context_recall', 'ctx_rank_prec')),
            model TEXT NOT NULL,
            repeat INTEGER NOT NULL CHECK (repeat >= 0),
            cache_key TEXT NOT NULL,
            text_key TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
            grade INTEGER CHECK (grade BETWEEN 1 AND 5),
            chunks TEXT,
            reason TEXT,
            raw TEXT,
            error TEXT,
            attempts INTEGER NOT NULL CHECK (attempts >= 0),
            repaired INTEGER NOT NULL DEFAULT 0 CHECK (repaired IN (0, 1)),
            latency_ms INTEGER,
            prompt_tokens INTEGER,
            completion_tokens INTEGER,
            created_at TEXT NOT NULL,
            CHECK ((status = 'ok') = (grade IS NOT NULL OR chunks IS NOT NULL)),
            CHECK ((status = 'failed') = (error IS NOT NULL)),
            CHECK ((criterion = 'ctx_rank_prec') = (grade IS NULL) OR status = 'failed')
        );
        CREATE INDEX answer_judgment_cache ON answer_judgment (cache_key, status);
        CREATE INDEX answer_judgment_item ON answer_judgment (system_id, sample_id, criterion);
        """,
    ),
    Migration(
        7,
        "invites to grade in a browser (raglabel serve): a salted hash of each token",
        """
        -- One live invite per annotator; revoking deletes it. The token itself is never
        -- stored, so a copied project file hands out no access.
        CREATE TABLE invite (
            annotator_id INTEGER PRIMARY KEY REFERENCES annotator(id),
            salt BLOB NOT NULL,
            token_hash BLOB NOT NULL,
            created_at TEXT NOT NULL
        );
        """,
    ),
    Migration(
        8,
        "each ranking's passage rows as int32, for readers of runs as integers",
        """
        -- Per (run, query), little-endian int32 per entry in rank order: the entry's passage
        -- row, or 0 where the file held no such passage when the ranking was written
        -- (below the pool depth). A table of its own: reading every run's rows must not
        -- read the ids and scores beside them.
        CREATE TABLE ranking_rows (
            run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
            query_id INTEGER NOT NULL REFERENCES query(id),
            passage_rows BLOB NOT NULL,
            PRIMARY KEY (run_id, query_id)
        ) WITHOUT ROWID;
        -- The largest passage row when the run's rows were written: a 0 may stand for a
        -- passage that got a row since, and only for a row above this one.
        ALTER TABLE run ADD COLUMN passage_rows_upto INTEGER;
        """,
        _fill_passage_rows,
    ),
    Migration(
        9,
        "labels other judges wrote, imported as suggestions with the file they came from",
        """
        -- One row per file of labels imported under a model name (raglabel import
        -- --judgments MODEL=FILE). The same bytes under the same model are one import:
        -- importing them again adds nothing. grade_map is the map that turned the file's
        -- labels into grades, as --grade-map takes it back; NULL when every line gave a
        -- grade (1-5) itself.
        CREATE TABLE judgment_import (
            id INTEGER PRIMARY KEY,
            model TEXT NOT NULL,
            file TEXT NOT NULL,
            sha256 TEXT NOT NULL,
            format TEXT NOT NULL CHECK (format IN ('qrels', 'jsonl')),
            grade_map TEXT,
            labels INTEGER NOT NULL CHECK (labels >= 1),
            imported_at TEXT NOT NULL,
            UNIQUE (model, sha256)
        );
        -- Where a suggestion came from: raglabel judge ('judge'), or an imported file
        -- ('imported', with that import's row). An imported suggestion names no
        -- endpoint, prompt or parameters.
        ALTER TABLE suggestion ADD COLUMN source TEXT NOT NULL DEFAULT 'judge'
            CHECK (source IN ('judge', 'imported'));
        ALTER TABLE suggestion ADD COLUMN import_id INTEGER REFERENCES judgment_import(id)
            CHECK ((source = 'imported') = (import_id IS NOT NULL));
        -- An imported label is about the pair's ids, as a qrels line is: which texts its
        -- judge read is not known, so a text changed (or first given) here leaves it
        -- standing. The judge's own suggestions still go when the texts they read change.
        DROP TRIGGER passage_text_changed;
        CREATE TRIGGER passage_text_changed AFTER UPDATE OF title, text ON passage
        WHEN old.text IS NOT new.text OR old.title IS NOT new.title
        BEGIN
            DELETE FROM suggestion WHERE passage_id = new.id AND source = 'judge';
        END;
        DROP TRIGGER query_text_changed;
        CREATE TRIGGER query_text_changed AFTER UPDATE OF text ON query
        WHEN old.text IS NOT new.text
        BEGIN
            DELETE FROM suggestion WHERE query_id = new.id AND source = 'judge';
        END;
        """,
    ),
    Migration(
        10,
        "the audit sample: queries drawn at random for people to grade in full",
        """
        -- One row per raglabel audit --sample, its id in draw order: the seed that
        -- reproduces it, how many queries it drew from (those a stored run covered that
        -- no earlier draw had taken) and when.
        CREATE TABLE audit_draw (
            id INTEGER PRIMARY KEY,
            seed INTEGER NOT NULL CHECK (seed >= 0),
            population INTEGER NOT NULL CHECK (population >= 1),
            drawn_at TEXT NOT NULL
        );
        -- Each drawn query at its place in its draw (0-based). A query is drawn once at
        -- most, whichever draw took it.
        CREATE TABLE audit_member (
            draw_id INTEGER NOT NULL REFERENCES audit_draw(id),
            position INTEGER NOT NULL CHECK (position >= 0),
            query_id INTEGER NOT NULL UNIQUE REFERENCES query(id),
            PRIMARY KEY (draw_id, position)
        ) WITHOUT ROWID;
        """,
    ),
    Migration(
        11,
        "assignments: which annotators grade which queries (raglabel assign)",
        """
        -- One row per raglabel assign: the overlap it asked for, the seed that reproduces
        -- its plan (NULL when no draw was made), whether it drew on the audit sample's
        -- queries, and when.
        CREATE TABLE assign_run (
            id INTEGER PRIMARY KEY,
            overlap INTEGER NOT NULL CHECK (overlap >= 1),
            seed INTEGER CHECK (seed IS NULL OR seed >= 0),
            audit INTEGER NOT NULL CHECK (audit IN (0, 1)),
            assigned_at TEXT NOT NULL
        );
        -- The assignment as it stands: an annotator's queries at their place in that
        -- annotator's queue (0-based), each with the assign that first gave it to them.
        -- Assigning again rewrites the places and keeps the older rows' assign.
        CREATE TABLE assignment (
            annotator_id INTEGER NOT NULL REFERENCES annotator(id),
            position INTEGER NOT NULL CHECK (position >= 0),
            query_id INTEGER NOT NULL REFERENCES query(id),
            assign_id INTEGER NOT NULL REFERENCES assign_run(id),
            PRIMARY KEY (annotator_id, position),
            UNIQUE (annotator_id, query_id)
        ) WITHOUT ROWID;
        CREATE INDEX assignment_query ON assignment (query_id);
        """,
    ),
)

SCHEMA_VERSION = MIGRATIONS[-1].version


def script_statements(sql: str) -> Iterator[str]:
    """The statements of a migration script, one at a time, stripped.

    A migration runs inside the upgrade's write transaction, and sqlite3's
    ``executescript()`` would COMMIT it first, so each statement is executed on its own.
    The script is cut only at a semicolon that ends a statement for SQLite itself
    (``sqlite3.complete_statement``): one inside a trigger's ``BEGIN ... END``, a string or
    a comment does not. Only the semicolons are tried, not every character, so creating a
    file costs one check per semicolon rather than one per character of the schema.
    """
    start = 0
    end = sql.find(";")
    while end != -1:
        piece = sql[start : end + 1]
        if sqlite3.complete_statement(piece):
            yield piece.strip()
            start = end + 1
        end = sql.find(";", end + 1)
    rest = sql[start:].strip()
    if rest:
        yield rest
