"""A bulk qrels import leaves the project exactly as a plain row-by-row import would.

The importer writes qrels in bulk (ids resolved at once, rows copied by SQLite,
derived tables filled in key order). The reference below does the same work the
obvious way, one label at a time, and derives current grades from the log alone; every
table of the two projects must hold the same rows.
"""

from __future__ import annotations

import random
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from raglabel.formats.maps import GradeMap
from raglabel.formats.trec import arrays as trec_arrays
from raglabel.formats.trec.arrays import read_qrels_table
from raglabel.formats.trec.rows import read_qrels_exactly
from raglabel.formats.trec.table import QrelsTable
from raglabel.storage import background, importer, items, log, runs
from raglabel.storage.grades import rebuild_current
from raglabel.storage.importer import ImportRequest, run_import
from raglabel.storage.project import Project

GRADED_AT = "2026-11-26T00:00:00.000+00:00"


def _qrels(path: Path, seed: int, lines: int = 600) -> Path:
    """Qrels with repeated queries, passages shared across queries, unordered ids."""
    rng = random.Random(seed)
    pairs: dict[tuple[str, str], int] = {}
    while len(pairs) < lines:
        query = f"q{rng.randrange(40)}"
        passage = f"d{rng.randrange(400)}"
        pairs[query, passage] = rng.randrange(4)
    path.write_text("".join(f"{q} 0 {p} {g}\n" for (q, p), g in pairs.items()))
    return path


def _run(path: Path, seed: int) -> Path:
    rng = random.Random(seed)
    lines = []
    for query in range(0, 50, 2):
        for rank, passage in enumerate(rng.sample(range(600), 30), start=1):
            lines.append(f"q{query} Q0 d{passage} {rank} {100 - rank} bm25\n")
    path.write_text("".join(lines))
    return path


def _reference(project: Project, path: Path, annotator: str) -> None:
    """One label at a time: the rows every import of these qrels must leave."""
    rows = read_qrels_table(path).rows()
    conn = project.conn
    with project.write():
        # New passages take their ids in order of their names.
        for passage in sorted(set(rows.docids)):
            conn.execute("INSERT OR IGNORE INTO passage (ext_id) VALUES (?)", (passage,))
        ids: list[tuple[int, int, int]] = []
        for query, passage, grade in zip(rows.qids, rows.docids, rows.grades, strict=True):
            conn.execute("INSERT OR IGNORE INTO query (ext_id) VALUES (?)", (query,))
            conn.execute("INSERT OR IGNORE INTO passage (ext_id) VALUES (?)", (passage,))
            q = conn.execute("SELECT id FROM query WHERE ext_id = ?", (query,)).fetchone()[0]
            p = conn.execute("SELECT id FROM passage WHERE ext_id = ?", (passage,)).fetchone()[0]
            ids.append((q, p, grade))
        conn.execute("INSERT OR IGNORE INTO annotator (name) VALUES (?)", (annotator,))
        (who,) = conn.execute("SELECT id FROM annotator WHERE name = ?", (annotator,)).fetchone()
        for q, p, grade in ids:
            conn.execute(
                "INSERT OR IGNORE INTO candidate (query_id, passage_id) VALUES (?, ?)", (q, p)
            )
            conn.execute(
                "INSERT INTO event (query_id, passage_id, annotator_id, kind, grade, source,"
                " origin, graded_at) VALUES (?, ?, ?, 'grade', ?, 'human', ?, ?)",
                (q, p, who, grade, f"qrels:{annotator}", GRADED_AT),
            )
        rebuild_current(conn)


def _contents(conn: sqlite3.Connection) -> dict[str, list[tuple[object, ...]]]:
    tables = [
        name
        for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    ]
    return {
        name: sorted(conn.execute(f"SELECT * FROM {name}").fetchall(), key=repr) for name in tables
    }


Step = tuple[str, Path, str | None]  # ("qrels" | "run", file, annotator)


def _build(tmp_path: Path, name: str, steps: list[Step], *, reference: bool) -> Project:
    project = Project.create(tmp_path / f"{name}.db")
    for kind, path, annotator in steps:
        if kind == "run":
            run_import(project, ImportRequest(runs=[(path.stem, path)]))
        elif reference:
            assert annotator is not None
            _reference(project, path, annotator)
        else:
            run_import(project, ImportRequest(qrels=path, annotator=annotator))
    return project


@pytest.mark.parametrize(
    "plan",
    [
        "fresh",
        "after a run",
        "same annotator again",
        "two annotators",
        "run, qrels, run, qrels",
    ],
)
@pytest.mark.parametrize("mode", ["packed", "chunked", "unpacked", "line reader"])
def test_bulk_qrels_import_matches_row_by_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plan: str, mode: str
) -> None:
    if mode == "chunked":  # JSON arrays of a few values each, as a huge import's are
        monkeypatch.setattr(items, "JSON_CHUNK", 7)
        monkeypatch.setattr(log, "JSON_CHUNK", 7)
    if mode == "unpacked":  # ids too large to pack take the executemany path
        monkeypatch.setattr(log, "_QUERY_LIMIT", 0)
    if mode == "line reader":  # files numpy cannot cut are read by lines
        monkeypatch.setattr(trec_arrays, "split_fields", lambda *_: None)
    monkeypatch.setattr(importer, "now", lambda: GRADED_AT)
    monkeypatch.setattr(runs, "now", lambda: GRADED_AT)
    first, second = _qrels(tmp_path / "a.qrels", 1), _qrels(tmp_path / "b.qrels", 2)
    run, other_run = _run(tmp_path / "bm25.run", 3), _run(tmp_path / "dense.run", 4)
    steps: list[Step] = {
        "fresh": [("qrels", first, "ann")],
        "after a run": [("run", run, None), ("qrels", first, "ann")],
        "same annotator again": [("qrels", first, "ann"), ("qrels", second, "ann")],
        "two annotators": [("qrels", first, "ann"), ("qrels", second, "other")],
        "run, qrels, run, qrels": [
            ("run", run, None),
            ("qrels", first, "ann"),
            ("run", other_run, None),
            ("qrels", second, "ann"),
        ],
    }[plan]
    with (
        _build(tmp_path, "bulk", steps, reference=False) as bulk,
        _build(tmp_path, "reference", steps, reference=True) as reference,
    ):
        got, want = _contents(bulk.conn), _contents(reference.conn)
        assert want["event"], "the reference wrote no events"
        for table in want:
            assert got[table] == want[table], table
        # A grades-only import runs without foreign key checks: every reference holds
        # all the same, and the connection has them back on after it.
        assert bulk.conn.execute("PRAGMA foreign_key_check").fetchall() == []
        assert bulk.conn.execute("PRAGMA foreign_keys").fetchone() == (1,)


def test_imported_grades_must_be_1_to_5() -> None:
    ids = np.array([1, 2], np.int64)
    with pytest.raises(ValueError, match="1-5"):
        log.ImportedGrades.of(ids, ids, np.array([1, 6], np.int64))
    with pytest.raises(ValueError, match="1-5"):
        log.ImportedGrades.of(ids, ids, np.array([0, 2], np.int64))


def test_a_failed_background_write_is_raised_where_it_is_awaited() -> None:
    def fail() -> None:
        raise sqlite3.OperationalError("disk I/O error")

    wait = importer.in_background(fail)
    with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
        wait()


def test_a_qrels_import_loads_no_pydantic() -> None:
    """The importer loads the models of answers, samples and label files when a request
    needs them; a qrels import's start does not pay for them."""
    code = (
        "import sys, raglabel.cli.import_cmd, raglabel.storage.importer; print(sorted(sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert "'pydantic'" not in out


def test_ids_with_quotes_backslashes_and_non_ascii_survive_the_json_arrays(
    tmp_path: Path,
) -> None:
    odd = ['d"1', "d\\2", "dé3", "d😀4", "d中5", "d\\u00416"]
    qrels = tmp_path / "odd.qrels"
    qrels.write_text("".join(f'q"{i} 0 {p} 1\n' for i, p in enumerate(odd)), encoding="utf-8")
    filler = tmp_path / "filler.qrels"  # enough passages that the second import probes
    filler.write_text("".join(f"f 0 x{i} 1\n" for i in range(40)))
    with Project.create(tmp_path / "odd.db") as project:
        run_import(project, ImportRequest(qrels=qrels, annotator="ann"))
        run_import(project, ImportRequest(qrels=filler, annotator="ann"))
        run_import(project, ImportRequest(qrels=qrels, annotator="other"))
        passages = project.conn.execute("SELECT id, ext_id FROM passage ORDER BY id").fetchall()
        pairs = project.conn.execute(
            "SELECT q.ext_id, p.ext_id FROM event e JOIN query q ON q.id = e.query_id"
            " JOIN passage p ON p.id = e.passage_id WHERE q.ext_id != 'f' ORDER BY e.id"
        ).fetchall()
    # New passages take ids in order of their names (Python's order of the strings).
    assert passages[: len(odd)] == list(enumerate(sorted(odd), start=1))
    assert len(passages) == len(odd) + 40
    assert pairs == 2 * [(f'q"{i}', p) for i, p in enumerate(odd)]


@pytest.mark.parametrize("by_name", [False, True])
@pytest.mark.parametrize("existing", [0, 5, 400])  # none, read whole, probed by name
def test_ids_planned_from_byte_columns_equal_those_planned_from_strings(
    tmp_path: Path, existing: int, by_name: bool
) -> None:
    """plan_name_ids (numpy, the canonical qrels path) gives every name the row id
    plan_ids gives it (new names in order of first mention, or of the names), and
    inserts the same rows."""
    rng = random.Random(existing)
    pool = [f"d{i}" for i in range(60)] + ['d"q', "d\\b", "dé", "d😀", "d中", "dx\x7f"]
    names = [rng.choice(pool) for _ in range(300)]
    column = np.array([name.encode() for name in names])
    got: list[object] = []
    for plan in ("strings", "bytes"):
        with Project.create(tmp_path / f"{plan}.db") as project, project.write():
            conn = project.conn
            items.ensure_passages(conn, [f"e{i}" for i in range(existing)] + pool[::7])
            if plan == "strings":
                given = sorted(set(names)) if by_name else names
                ids, insert = items.plan_ids(conn, "passage", given)
                row_ids = [ids[name] for name in names]
            else:
                planned, insert = items.plan_name_ids(conn, "passage", column, by_name=by_name)
                row_ids = planned.tolist()
            insert()
            got.append((row_ids, conn.execute("SELECT * FROM passage ORDER BY id").fetchall()))
    assert got[0] == got[1]


def test_canonical_qrels_read_as_columns_hold_the_rows(tmp_path: Path) -> None:
    path = tmp_path / "q.qrels"
    path.write_text('q1 0 dé 1\nq"2 0 d\\2 0\nq1 0 d3 3\n', encoding="utf-8")
    columns = read_qrels_table(path)
    assert isinstance(columns, QrelsTable)
    rows = read_qrels_exactly(path, GradeMap())
    assert [v.decode() for v in columns.qids.tolist()] == rows.qids
    assert [v.decode() for v in columns.docids.tolist()] == rows.docids
    assert columns.grades.tolist() == rows.grades
    tabs = tmp_path / "tabs.qrels"  # not canonical: the line reader's rows, as a table
    tabs.write_text("q1\t0\td1\t1\n")
    assert read_qrels_table(tabs).rows() == read_qrels_exactly(tabs, GradeMap())


_KILLED_IMPORT = """
import os, signal, sys
from pathlib import Path
from raglabel.storage import importer
from raglabel.storage.project import Project

def kill(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

point, cache_kib = sys.argv[3], int(sys.argv[4])
importer.IMPORT_CACHE_KIB = cache_kib
if point == "passages stored":
    original = importer.in_background
    def stored_then_killed(work):
        wait = original(work)
        def then():
            wait()
            kill()
        return then
    importer.in_background = stored_then_killed
else:
    append = importer.append_grades
    def appended_then_killed(*args, **kwargs):
        append(*args, **kwargs)
        kill()
    importer.append_grades = appended_then_killed
with Project.open(sys.argv[1]) as project:
    importer.run_import(project, importer.ImportRequest(qrels=Path(sys.argv[2]), annotator="x"))
"""


@pytest.mark.parametrize("point", ["passages stored", "events written"])
@pytest.mark.parametrize("cache_kib", [importer.IMPORT_CACHE_KIB, 16])  # 16: pages spill
def test_a_killed_import_leaves_the_file_as_it_was(
    tmp_path: Path, point: str, cache_kib: int
) -> None:
    """SIGKILL inside the import's transaction (after the passages, or after every
    row is written, before the commit; with the page cache so small that written pages
    reach the WAL before it): the file reopens as it was, whole."""
    path = tmp_path / "p.db"
    with Project.create(path) as project:
        run_import(project, ImportRequest(runs=[("bm25", _run(tmp_path / "bm25.run", 1))]))
        run_import(project, ImportRequest(qrels=_qrels(tmp_path / "a.qrels", 2), annotator="a"))
        before = _contents(project.conn)
    big = tmp_path / "big.qrels"  # new queries, new and known passages
    big.write_text("".join(f"n{i % 97} 0 d{i} {i % 4}\n" for i in range(20_000)))
    child = subprocess.run(
        [sys.executable, "-c", _KILLED_IMPORT, str(path), str(big), point, str(cache_kib)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert child.returncode == -9, child.stderr
    wal = Path(f"{path}-wal")
    if cache_kib < 1024:  # the transaction's pages did reach the file's WAL
        assert wal.stat().st_size > 100 * 4096
    with Project.open(path) as project:
        assert _contents(project.conn) == before
        assert project.conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert project.conn.execute("PRAGMA foreign_key_check").fetchall() == []
        # And the import then goes through.
        summary = run_import(project, ImportRequest(qrels=big, annotator="x"))
        assert summary.counts["grades"] == 20_000


_KILLED_RUN_IMPORT = """
import os, signal, sys
from pathlib import Path
from raglabel.storage import importer, runs
from raglabel.storage.project import Project

importer.IMPORT_CACHE_KIB = int(sys.argv[3])
store = runs.store
def stored_then_killed(*args, **kwargs):
    store(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)
runs.store = stored_then_killed
with Project.open(sys.argv[1]) as project:
    importer.run_import(
        project, importer.ImportRequest(runs=[("bm25", Path(sys.argv[2]))], replace=True)
    )
"""


@pytest.mark.parametrize("cache_kib", [importer.IMPORT_CACHE_KIB, 16])  # 16: pages spill
def test_a_killed_run_import_leaves_the_file_as_it_was(tmp_path: Path, cache_kib: int) -> None:
    """SIGKILL inside a run import's transaction, once every row of the run is
    written (its rankings, passage rows and candidates; the run it replaces deleted):
    the file reopens as it was, whole, and the import then goes through."""
    path = tmp_path / "p.db"
    with Project.create(path) as project:
        run_import(project, ImportRequest(runs=[("bm25", _run(tmp_path / "bm25.run", 1))]))
        run_import(project, ImportRequest(qrels=_qrels(tmp_path / "a.qrels", 2), annotator="a"))
        before = _contents(project.conn)
    big = tmp_path / "big.run"  # new queries, new and known passages, replacing bm25
    big.write_text("".join(f"n{i % 97} Q0 d{i} {i // 97 + 1} {-i} x\n" for i in range(20_000)))
    child = subprocess.run(
        [sys.executable, "-c", _KILLED_RUN_IMPORT, str(path), str(big), str(cache_kib)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert child.returncode == -9, child.stderr
    if cache_kib < 1024:  # the transaction's pages did reach the file's WAL
        assert Path(f"{path}-wal").stat().st_size > 100 * 4096
    with Project.open(path) as project:
        assert _contents(project.conn) == before
        assert project.conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert project.conn.execute("PRAGMA foreign_key_check").fetchall() == []
        summary = run_import(project, ImportRequest(runs=[("bm25", big)], replace=True))
        assert summary.counts["run entries"] == 20_000
        after = _contents(project.conn)
    assert after["ranking"] != before["ranking"]
    assert len(after["ranking_rows"]) == 97


def test_entry_rows_by_hash_equal_those_of_a_join() -> None:
    """Each entry's row found through the ids' hashes is the one a join on the ids gives:
    ids known or not, repeated, non-ASCII, of every length."""
    import polars as pl

    rng = random.Random(7)
    known = {f"d{i}": i + 1 for i in range(0, 3000, 3)} | {"é": 5000, "d": 5001, "": 5002}
    ids = [f"d{rng.randrange(4000)}" for _ in range(20_000)] + ["é", "e", "d", "", "dd"]
    docids = pl.Series("docid", ids, dtype=pl.String)
    names = pl.Series(list(known), dtype=pl.String)
    values = np.fromiter(known.values(), np.int32)
    found = runs._entry_rows(docids, known)
    assert found.tolist() == [known.get(i, 0) for i in ids]
    assert found.tolist() == runs._joined_rows(docids, names, values).tolist()
    assert runs._entry_rows(docids, {}).tolist() == [0] * len(ids)
    assert runs._entry_rows(docids.clear(), known).tolist() == []


def test_a_run_import_on_a_full_disk_saves_nothing(tmp_path: Path) -> None:
    """The rankings are written in a thread beside the entries' rows: a write it cannot
    make (the file may not grow) fails the whole import, and the file is as it was."""
    from raglabel.errors import StorageError

    path = tmp_path / "p.db"
    with Project.create(path) as project:
        run_import(project, ImportRequest(qrels=_qrels(tmp_path / "a.qrels", 2), annotator="a"))
        before = _contents(project.conn)
        pages = project.conn.execute("PRAGMA page_count").fetchone()[0]
        project.conn.execute(f"PRAGMA max_page_count = {pages + 4}")
        big = tmp_path / "big.run"
        big.write_text("".join(f"q{i % 50} Q0 d{i} {i // 50 + 1} {-i} x\n" for i in range(20_000)))
        with pytest.raises(StorageError, match="nothing was saved"):
            run_import(project, ImportRequest(runs=[("bm25", big)]))
        assert _contents(project.conn) == before
        assert project.conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_entry_rows_when_hashes_meet(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a hash of five values, known ids share hashes (the rows come from the join),
    or, with five known ids of distinct hashes, entries that are not known share theirs
    (their strings differ: no row). Either way each row is the dictionary's."""
    import polars as pl

    real = pl.Series.hash

    def weak(self: pl.Series, *args: Any, **kwargs: Any) -> pl.Series:
        return real(self, *args, **kwargs) % 5

    monkeypatch.setattr(pl.Series, "hash", weak)
    ids = [f"p{i}" for i in range(200)] + ["é", ""]
    docids = pl.Series("docid", ids, dtype=pl.String)
    crowded = {f"p{i}": i + 1 for i in range(0, 200, 7)}
    assert runs._entry_rows(docids, crowded).tolist() == [crowded.get(i, 0) for i in ids]
    distinct: dict[str, int] = {}
    taken: set[int] = set()
    for i, name in enumerate(ids):
        key = int(weak(pl.Series([name])).item())
        if key not in taken:
            taken.add(key)
            distinct[name] = 1000 + i
    assert len(distinct) == 5
    assert runs._entry_rows(docids, distinct).tolist() == [distinct.get(i, 0) for i in ids]


def test_an_interrupt_while_the_rows_are_found_is_what_the_import_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while the entries' rows are found, and the rankings' writer failing too:
    the interrupt comes out, the writer was waited out, and nothing was saved."""
    path = tmp_path / "p.db"
    with Project.create(path) as project:
        run_import(project, ImportRequest(qrels=_qrels(tmp_path / "a.qrels", 2), annotator="a"))
        before = _contents(project.conn)
        finished: list[bool] = []

        def interrupted(*_: object) -> object:
            raise KeyboardInterrupt

        def failing(work: Any) -> Any:
            def broken() -> None:
                finished.append(True)
                raise sqlite3.OperationalError("disk I/O error")

            return background.in_background(broken)

        monkeypatch.setattr(runs, "_entry_rows", interrupted)
        monkeypatch.setattr(runs, "in_background", failing)
        with pytest.raises(KeyboardInterrupt):
            run_import(project, ImportRequest(runs=[("bm25", _run(tmp_path / "bm25.run", 1))]))
        assert finished == [True]
        assert _contents(project.conn) == before
