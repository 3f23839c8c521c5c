"""Several processes grading one project file at once, and a reader beside them.

Each worker is a separate process (spawned, so it shares nothing with this one but the
file) and records its events as fast as it can. Whatever the interleaving, every event
must land, none may fail with "database is locked", and the cached current grades must
be what the log says.
"""

from __future__ import annotations

import multiprocessing
import random
import sqlite3
import traceback
from collections.abc import Callable, Iterator
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier, Event
from pathlib import Path
from typing import Any

import pytest

from raglabel.storage.grades import GradeEvent, rebuild_current, record, undo_last
from raglabel.storage.items import ensure_passages, ensure_queries
from raglabel.storage.labels import LabelChoice, resolved_labels
from raglabel.storage.project import Project
from raglabel.storage.schema import SCHEMA_VERSION

WORKERS = 4
EVENTS_PER_WORKER = 250
QUERIES = [f"q{i}" for i in range(4)]
PASSAGES = [f"d{i}" for i in range(6)]
JOIN_TIMEOUT_S = 60.0

Item = tuple[str, str]


def _writer(path: str, name: str, seed: int, start: Barrier, out: Queue[Any]) -> None:
    """Record EVENTS_PER_WORKER events as ``name``; report what was written, or the error."""
    written: list[tuple[int, str, int | None, str, str, str]] = []
    final: dict[Item, int | None] = {}
    try:
        rng = random.Random(seed)
        with Project.open(path) as project:
            start.wait()
            for i in range(EVENTS_PER_WORKER):
                query, passage = rng.choice(QUERIES), rng.choice(PASSAGES)
                origin = f"{name}:{i}"
                roll = rng.random()
                if roll < 0.1 and written:
                    undone = undo_last(project, name, origin=origin)
                    assert undone is not None
                    written.append(
                        (undone.event_id, "undo", None, undone.query, undone.passage, origin)
                    )
                    final[(undone.query, undone.passage)] = undone.grade
                    continue
                if roll < 0.2:
                    event = GradeEvent(
                        query=query, passage=passage, annotator=name, kind="clear", origin=origin
                    )
                else:
                    event = GradeEvent(
                        query=query,
                        passage=passage,
                        annotator=name,
                        grade=rng.randint(1, 5),
                        origin=origin,
                    )
                recorded = record(project, event)
                written.append((recorded.event_id, event.kind, event.grade, query, passage, origin))
                final[(query, passage)] = recorded.grade
        out.put((name, written, final, None))
    except BaseException:
        out.put((name, written, final, traceback.format_exc()))


def _reader(path: str, start: Barrier, stop: Event, out: Queue[Any]) -> None:
    """Read as ``eval`` does, over and over, until told to stop; report what it saw."""
    counts: list[int] = []
    try:
        with Project.open(path) as project:
            conn = project.conn
            start.wait()
            while not stop.is_set():
                resolved_labels(conn, LabelChoice())
                # One statement reads one snapshot: the cache never names an event the
                # log does not hold yet.
                (count, dangling) = conn.execute(
                    "SELECT (SELECT count(*) FROM event), (SELECT count(*) FROM current_grade c"
                    " WHERE NOT EXISTS (SELECT 1 FROM event e WHERE e.id = c.event_id))"
                ).fetchone()
                assert dangling == 0
                counts.append(count)
        out.put(("reader", counts, None))
    except BaseException:
        out.put(("reader", counts, traceback.format_exc()))


@pytest.fixture
def project_file(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "shared.db"
    with Project.create(path) as project, project.write():
        ensure_queries(project.conn, QUERIES)
        ensure_passages(project.conn, PASSAGES)
    yield path


def test_concurrent_writers_and_a_reader(project_file: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(WORKERS + 1)
    stop = ctx.Event()
    results: Queue[Any] = ctx.Queue()
    reader_out: Queue[Any] = ctx.Queue()
    names = [f"annotator-{i}" for i in range(WORKERS)]
    writers = [
        ctx.Process(target=_writer, args=(str(project_file), name, seed, start, results))
        for seed, name in enumerate(names)
    ]
    reader = ctx.Process(target=_reader, args=(str(project_file), start, stop, reader_out))
    for process in [*writers, reader]:
        process.start()
    try:
        # Results come before join: a child blocks on exit until its queue is drained.
        reports = {}
        for _ in writers:
            name, written, final, error = results.get(timeout=JOIN_TIMEOUT_S)
            reports[name] = (written, final, error)
        stop.set()
        _, counts, reader_error = reader_out.get(timeout=JOIN_TIMEOUT_S)
        for process in [*writers, reader]:
            process.join(timeout=JOIN_TIMEOUT_S)
    finally:
        stop.set()
        for process in [*writers, reader]:
            if process.is_alive():
                process.kill()
                process.join()

    errors = {name: error for name, (_, _, error) in reports.items() if error}
    assert errors == {}, "\n".join(f"{n}:\n{e}" for n, e in errors.items())
    assert reader_error is None, reader_error
    assert [p.exitcode for p in [*writers, reader]] == [0] * (WORKERS + 1)

    with Project.open(project_file) as project:
        conn = project.conn
        total = WORKERS * EVENTS_PER_WORKER
        assert conn.execute("SELECT count(*) FROM event").fetchone() == (total,)

        # Every event each worker was told it wrote is in the log exactly as written,
        # and each worker's events keep the order it wrote them in.
        stored = {
            row[0]: row[1:]
            for row in conn.execute(
                "SELECT e.id, a.name, e.kind, e.grade, q.ext_id, p.ext_id, e.origin FROM event e"
                " JOIN annotator a ON a.id = e.annotator_id"
                " JOIN query q ON q.id = e.query_id JOIN passage p ON p.id = e.passage_id"
            )
        }
        claimed = 0
        for name, (written, _, _) in reports.items():
            assert len(written) == EVENTS_PER_WORKER
            ids = [event_id for event_id, *_ in written]
            assert ids == sorted(ids)
            for event_id, kind, grade, query, passage, origin in written:
                assert stored[event_id] == (name, kind, grade, query, passage, origin)
                claimed += 1
        assert claimed == len(stored) == total

        # What each worker last heard from record() is what stands now: nobody else
        # writes an annotator's items.
        standing = {
            (a, q, p): g
            for a, q, p, g in conn.execute(
                "SELECT a.name, q.ext_id, p.ext_id, c.grade FROM current_grade c"
                " JOIN annotator a ON a.id = c.annotator_id"
                " JOIN query q ON q.id = c.query_id JOIN passage p ON p.id = c.passage_id"
            )
        }
        expected = {
            (name, *item): grade
            for name, (_, final, _) in reports.items()
            for item, grade in final.items()
            if grade is not None
        }
        assert standing == expected

        cached = conn.execute("SELECT * FROM current_grade ORDER BY 1, 2, 3").fetchall()
        with project.write():
            rebuild_current(conn)
        assert conn.execute("SELECT * FROM current_grade ORDER BY 1, 2, 3").fetchall() == cached

    # The reader ran while the writers wrote, and never saw the log shrink.
    assert counts, "the reader never read"
    assert counts == sorted(counts)
    assert any(0 < count < total for count in counts), "the reader never overlapped a writer"


def _opener(path: str, start: Barrier, out: Queue[Any]) -> None:
    try:
        start.wait()
        with Project.open(path) as project:
            out.put((project.version, None if project.backup is None else str(project.backup)))
    except BaseException:
        out.put((None, traceback.format_exc()))


def test_concurrent_upgrades_of_an_old_file(
    tmp_path: Path, build_at_version: Callable[[Path, int], Project]
) -> None:
    # Several processes opening a version-1 file at once: each must end up with a
    # current file, the upgrade must run once (a second run would fail on ALTER TABLE
    # ADD COLUMN of a column that already exists), and only the process that upgrades
    # may back the file up, so that the one backup is of the file as version 1 left it.
    path = tmp_path / "old.db"
    old = build_at_version(path, 1)
    with old.write():
        ensure_queries(old.conn, ["q1"])
    old.close()

    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(3)
    out: Queue[Any] = ctx.Queue()
    openers = [ctx.Process(target=_opener, args=(str(path), start, out)) for _ in range(3)]
    for process in openers:
        process.start()
    try:
        answers = [out.get(timeout=JOIN_TIMEOUT_S) for _ in openers]
        for process in openers:
            process.join(timeout=JOIN_TIMEOUT_S)
    finally:
        for process in openers:
            if process.is_alive():
                process.kill()
                process.join()
    assert [version for version, _ in answers] == [SCHEMA_VERSION] * 3, answers
    backups = [backup for _, backup in answers if backup is not None]
    assert backups == [str(tmp_path / "old.db.v1.bak")], answers
    assert sorted(p.name for p in tmp_path.glob("*.bak")) == ["old.db.v1.bak"]
    for name, version in ((path, SCHEMA_VERSION), (Path(backups[0]), 1)):
        conn = sqlite3.connect(name)
        try:
            assert conn.execute("PRAGMA user_version").fetchone() == (version,)
            assert conn.execute("SELECT ext_id FROM query").fetchall() == [("q1",)]
        finally:
            conn.close()
