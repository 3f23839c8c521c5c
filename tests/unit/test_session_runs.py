"""The session's runs as passage rows: entries below the pool depth, queries opened
before the runs are in, and files whose rankings were stored before the rows were."""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from test_session import eval_per_query

from raglabel.session.grading import GradingSession
from raglabel.session.options import AppOptions
from raglabel.storage.grades import GradeEvent, record
from raglabel.storage.items import ensure_passages
from raglabel.storage.project import Project
from raglabel.storage.runs import SCORE_DTYPE, Ranking, Run, encode_ids, store

ME = "ann"
# Pool depth 1: a's q1 lists d2, d3, d4 below it (the file holds none of them when a is
# stored); b then pools d3, so a's d3 gets a row after a was stored; d7 stays outside.
RUNS = {
    "a": {"q1": ["d1", "d2", "d3", "d4"], "q2": ["d5", "d6"]},
    "b": {"q1": ["d3", "d1", "d7"], "q2": ["d6"]},
}


def _run(name: str) -> Run:
    rankings = [
        Ranking(q, ids, np.arange(len(ids), 0, -1).astype(np.float64))
        for q, ids in RUNS[name].items()
    ]
    return Run(name, f"{name}.trec", rankings)


@pytest.fixture
def db(empty_project: Path) -> Path:
    with Project.open(empty_project) as project, project.write():
        for name in RUNS:
            store(project.conn, _run(name), depth=1)
    return empty_project


def _corpus_later(db: Path, *ids: str) -> None:
    """Passages the file gets after the runs (a corpus imported later)."""
    with Project.open(db) as project, project.write():
        ensure_passages(project.conn, ids)


def _grade(db: Path, query: str, passage: str, grade: int) -> None:
    with Project.open(db) as project:
        record(
            project,
            GradeEvent(query=query, passage=passage, annotator=ME, kind="grade", grade=grade),
        )


def _eval(db: Path, k: int, capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, float]]:
    """RA-nWG@k per run and query as ``raglabel eval DB`` computes it from the ids."""
    key = f"ra_nwg@{k}"
    return {
        run: {q: math.nan if v.get(key) is None else float(v[key]) for q, v in per_query.items()}
        for run, per_query in eval_per_query(db, capsys, k, "--annotator", ME).items()
    }


def _ra(session: GradingSession, q: int) -> dict[str, float]:
    return {name: v["ra_nwg"] for name, v in session.panel(q).values.items()}


def _open(db: Path, *, background: bool = False, k: int = 5) -> GradingSession:
    """A session at cutoff ``k`` first (the cutoffs cycle through 1, 3, 4 after it)."""
    options = AppOptions(project=db, annotator=ME, cutoffs=(k, 1, 3, 4))
    return GradingSession.open(options, background=background)


def _entry_grades(session: GradingSession, run: str, q: int) -> list[int]:
    i = session.catalog.run_names.index(run)
    found = session.catalog.runs[i]
    return session.book.run_grades[i][found.offsets[q] : found.offsets[q + 1]].tolist()


@pytest.mark.parametrize("background", [False, True])
def test_a_grade_below_the_pool_depth_counts_for_the_run(
    db: Path, background: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    # d4 gets its row after the runs were stored, then a grade (as a corpus and a label
    # file imported later give them): run a stored it as an entry without a row.
    _corpus_later(db, "d4")
    _grade(db, "q1", "d4", 5)
    _grade(db, "q1", "d1", 2)
    # At K=1 nothing below the depth is a hole: no query's entries are named for it.
    session = _open(db, background=background, k=1)
    try:
        session.ensure_runs()
        q1 = session.catalog.query_by_ext("q1")
        assert q1 is not None
        assert _entry_grades(session, "a", q1) == [2, 0, 0, 5]
        assert _entry_grades(session, "b", q1) == [0, 2, 0]
        for k in (1, 4):
            session.set_k(k)
            expected = _eval(db, k, capsys)
            assert _ra(session, q1) == pytest.approx({r: expected[r]["q1"] for r in RUNS})
            row = session.query_row(q1)
            assert row.ra_nwg == pytest.approx(tuple(expected[r]["q1"] for r in RUNS))
    finally:
        session.close()


def test_grading_a_passage_listed_below_the_depth_in_the_app(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _corpus_later(db, "d4")
    _grade(db, "q1", "d1", 1)
    # At K=1, d4 (rank 4 in a) is no hole: nothing named a's entries of q1 before.
    session = _open(db, k=1)
    try:
        q1 = session.catalog.query_by_ext("q1")
        assert q1 is not None
        session.grade(q1, session.catalog.pid("d4"), 5)
        assert _entry_grades(session, "a", q1) == [1, 0, 0, 5]
        session.set_k(4)
        after = _ra(session, q1)
        expected = _eval(db, 4, capsys)
        assert after == pytest.approx({r: expected[r]["q1"] for r in RUNS})
        # The Queries screen's (and Runs screen's) whole-run figures see it too.
        assert session.query_columns().ra_nwg[:, q1].tolist() == pytest.approx(list(after.values()))
    finally:
        session.close()


def test_holes_beyond_the_depth_count_each_passage_once(db: Path) -> None:
    session = _open(db)
    try:
        q1 = session.catalog.query_by_ext("q1")
        assert q1 is not None
        session.set_k(3)
        # a's top 3: d1 d2 d3; b's: d3 d1 d7. d3 is an unnamed entry in a and a row in b.
        holes = session.board.holes(q1, 3)
        named = {session.catalog.passage_ext[h.pid]: (h.runs, h.best_rank) for h in holes}
        assert named == {"d1": (2, 1), "d3": (2, 1), "d2": (1, 2), "d7": (1, 3)}
        assert session.query_row(q1).holes == 4
        ranks = {row.ext_id: row.ranks for row in session.passages(q1)}
        assert ranks["d3"] == (3, 1)
        assert ranks["d7"] == (None, 3)
    finally:
        session.close()


def _shown(session: GradingSession, q: int, *, queue: bool = True) -> str:
    """What opening query ``q`` shows (as text: NaN is NA on both sides); with
    ``queue``, the queue's next pair too (which waits for the runs if ``q`` has no
    hole)."""
    shown = (session.passages(q), session.panel(q), session.query_row(q))
    return repr((*shown, session.next_hole(q) if queue else None))


@pytest.mark.parametrize("k", [1, 3, 4])
def test_a_query_opened_before_the_runs_are_in_shows_what_it_shows_after(db: Path, k: int) -> None:
    _corpus_later(db, "d4")
    _grade(db, "q1", "d4", 3)
    _grade(db, "q2", "d6", 4)
    session = GradingSession.open(
        AppOptions(project=db, annotator=ME, cutoffs=(k,)), background=True
    )
    try:
        before = {q: _shown(session, q) for q in range(2)}
        assert not session.runs_scored and session.catalog.runs == []
        session.ensure_runs()
        assert {q: _shown(session, q) for q in range(2)} == before
    finally:
        session.close()


def test_the_demo_queries_opened_before_the_runs_are_in(demo_db: Path) -> None:
    session = GradingSession.open(AppOptions(project=demo_db, annotator=ME), background=True)
    reference = _open(demo_db)
    try:
        queries = range(0, len(session.catalog.queries), 7)
        before = {q: _shown(session, q, queue=False) for q in queries}
        assert not session.runs_scored
        session.ensure_runs()
        assert {q: _shown(session, q, queue=False) for q in queries} == before
        assert {q: _shown(reference, q, queue=False) for q in queries} == before
    finally:
        session.close()
        reference.close()


def test_a_grade_before_the_runs_are_in_counts_once_they_are(demo_db: Path) -> None:
    session = GradingSession.open(AppOptions(project=demo_db, annotator=ME), background=True)
    try:
        q = 25
        hole = session.next_hole(q)
        assert hole is not None and not session.runs_scored
        session.grade(q, hole.pid, 4)
        before = session.panel(q)
        session.ensure_runs()
        assert repr(session.panel(q)) == repr(before)
        reference = _open(demo_db)
        try:
            assert repr(reference.panel(q)) == repr(before)
            for mine, theirs in zip(
                session.book.run_grades, reference.book.run_grades, strict=True
            ):
                assert mine.tolist() == theirs.tolist()
            assert session.query_columns().holes.tolist() == (
                reference.query_columns().holes.tolist()
            )
        finally:
            reference.close()
    finally:
        session.close()


def test_the_upgrade_writes_each_rankings_passage_rows(
    tmp_path: Path,
    build_at_version: Callable[[Path, int], Project],
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "old.db"
    old = build_at_version(path, 7)
    with old.write():
        conn = old.conn
        conn.executemany("INSERT INTO query (ext_id) VALUES (?)", [("q1",), ("q2",)])
        conn.executemany("INSERT INTO passage (ext_id) VALUES (?)", [("d1",), ("d5",), ("d3",)])
        conn.execute(
            "INSERT INTO run (name, source, imported_at, queries, entries)"
            " VALUES ('a', 'a.trec', '', 2, 6)"
        )
        conn.executemany(
            "INSERT INTO ranking (run_id, query_id, passage_ids, scores) VALUES (1, ?, ?, ?)",
            [
                (1, encode_ids(RUNS["a"]["q1"]), np.arange(4.0).astype(SCORE_DTYPE).tobytes()),
                (2, encode_ids(RUNS["a"]["q2"]), np.arange(2.0).astype(SCORE_DTYPE).tobytes()),
            ],
        )
        conn.executemany(
            "INSERT INTO candidate (query_id, passage_id, best_rank) VALUES (?, ?, 1)",
            [(1, 1), (2, 2)],
        )
    old.close()
    with Project.open(path) as project:
        rows = project.conn.execute(
            "SELECT query_id, passage_rows FROM ranking_rows ORDER BY query_id"
        ).fetchall()
        upto = project.conn.execute("SELECT passage_rows_upto FROM run").fetchall()
    assert [(q, np.frombuffer(blob, dtype="<i4").tolist()) for q, blob in rows] == [
        (1, [1, 0, 3, 0]),
        (2, [2, 0]),
    ]
    assert upto == [(3,)]
    # The upgraded file scores as the ids say.
    _corpus_later(path, "d4")
    _grade(path, "q1", "d4", 4)
    session = _open(path, k=1)
    try:
        assert _entry_grades(session, "a", 0) == [0, 0, 0, 4]
        session.set_k(4)
        assert _ra(session, 0) == pytest.approx({"a": _eval(path, 4, capsys)["a"]["q1"]})
    finally:
        session.close()


def test_a_run_stored_today_holds_the_rows_the_file_has(db: Path) -> None:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        ids = dict(conn.execute("SELECT ext_id, id FROM passage"))
        stored = conn.execute(
            "SELECT run.name, q.ext_id, r.passage_rows, run.passage_rows_upto"
            " FROM ranking_rows r JOIN run ON run.id = r.run_id JOIN query q ON q.id = r.query_id"
        ).fetchall()
    finally:
        conn.close()
    for name, qid, blob, upto in stored:
        rows = np.frombuffer(blob, dtype="<i4").tolist()
        listed = RUNS[name][qid]
        # The pool (depth 1) always has rows; below it, the rows the file held then.
        assert rows[0] == ids[listed[0]]
        assert all(row in (0, ids.get(ext)) for row, ext in zip(rows, listed, strict=True))
        assert all(0 < row <= upto for row in rows if row)
    assert {name: upto for name, _, _, upto in stored} == {"a": 2, "b": 4}


def _names_in(session: GradingSession, q: int) -> dict[str, list[str | int]]:
    names = session.catalog.passage_ext
    return {
        run.name: [names[pid] if pid else 0 for pid in run.ranked(q).tolist()]
        for run in session.catalog.runs
    }


def test_a_run_replaced_by_another_process_keeps_the_session_runs_apart(db: Path) -> None:
    """Another process replacing run a (its id then sorts after b's) must not pour one
    run's entries into another's slice when the session reads a query on its own."""
    session = _open(db, k=1)
    with Project.open(db) as project, project.write():
        store(project.conn, _run("a"), depth=1, replace=True)
    session.passages(1)  # q2: read on its own, the runs named by the session's ids
    shown = _names_in(session, 1)
    assert shown["b"] == ["d6"]
    assert len(shown["a"]) == 2  # the session's run a is gone from the file: not b's list


@pytest.mark.parametrize("background", [False, True])
def test_a_run_imported_after_start_waits_for_a_reload(db: Path, background: bool) -> None:
    session = _open(db, background=background)
    with Project.open(db) as project, project.write():
        store(project.conn, Run("c", "c.trec", [Ranking("q1", ["d1"], np.ones(1))]), depth=1)
    if background:
        session.start_runs()
    session.ensure_runs()
    assert session.catalog.run_names == ["a", "b"]
    assert len(session.query_row(0).ra_nwg) == 2
    session.passages(0)
    assert [run.name for run in session.catalog.runs] == ["a", "b"]
