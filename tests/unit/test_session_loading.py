"""The session's lazy names and its background reads keep one view of the file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from raglabel.session.catalog import Catalog, PassageNames, Pools, Query, RunLists
from raglabel.session.gradebook import GradeBook, entry_grades
from raglabel.session.grading import GradingSession
from raglabel.session.options import AppOptions
from raglabel.storage.grades import GradeEvent, record
from raglabel.storage.pool import in_chunks, joined_ints
from raglabel.storage.project import Project


def test_a_passage_met_outside_the_file_keeps_its_pid_once_the_file_holds_it() -> None:
    in_file: dict[str, int] = {}
    names = PassageNames(
        lambda rows: {row: ext for ext, row in in_file.items() if row in rows},
        lambda exts: {ext: in_file[ext] for ext in exts if ext in in_file},
    )
    outside = names.pid("p-new")
    assert outside < 0
    in_file["p-new"] = 7  # graded meanwhile: the file holds it as row 7
    # A pool read later names it by its row; the session still calls it by one pid.
    assert names.learn(7, "p-new") == outside
    assert names.pid("p-new") == outside
    assert names[7] == names[outside] == "p-new"


def test_a_snapshot_does_not_see_what_another_connection_commits(demo_db: Path) -> None:
    def graded(project: Project) -> int:
        return int(project.conn.execute("SELECT count(*) FROM event").fetchone()[0])

    with Project.open(demo_db) as writer, Project.reader(demo_db) as reader:
        with reader.snapshot():
            before = graded(reader)
            record(
                writer,
                GradeEvent(query="q21", passage="kb-0002", annotator="zoe", kind="grade", grade=4),
            )
            assert graded(reader) == before
        assert graded(reader) == before + 1


def _outside_pool(session: GradingSession, q: int) -> str:
    """A passage the file holds that is not among query ``q``'s candidates."""
    pool = {session.catalog.passage_ext[pid] for pid in session.catalog.candidates[q]}
    rows = session.project.conn.execute("SELECT ext_id FROM passage ORDER BY id").fetchall()
    return next(ext for (ext,) in rows if ext not in pool)


def test_the_pools_cannot_be_walked_one_query_at_a_time(demo_db: Path) -> None:
    session = GradingSession.open(AppOptions(project=demo_db, annotator="zoe"))
    try:
        pools = session.catalog.candidates
        with pytest.raises(TypeError):
            iter(pools)  # type: ignore[call-overload]
        with pytest.raises(TypeError):
            _ = 1 in pools  # type: ignore[operator]
        assert pools.read_so_far() == {}  # neither read a single pool
        assert len(pools[0]) == pools.sizes[0]
        assert list(pools.read_so_far()) == [0]
    finally:
        session.close()


@pytest.mark.parametrize("background", [False, True])
def test_a_pool_read_after_start_up_counts_what_another_process_added(
    demo_db: Path, background: bool
) -> None:
    session = GradingSession.open(
        AppOptions(project=demo_db, annotator="zoe"), background=background
    )
    try:
        session.ensure_runs()
        q = 3
        query = session.catalog.queries[q].ext_id
        before = int(session.catalog.candidates.sizes[q])
        graded = int(session.book.graded_candidates[q])
        total = int(session.catalog.candidates.sizes.sum())
        # Before this query's pool is read, another process grades a passage outside
        # it: the log makes the pair a candidate.
        probe = GradingSession.open(AppOptions(project=demo_db, annotator="zoe"))
        try:
            outside = _outside_pool(probe, q)
        finally:
            probe.close()
        assert session.catalog.candidates.read_so_far() == {}
        with Project.open(demo_db) as writer:
            record(
                writer,
                GradeEvent(query=query, passage=outside, annotator="zoe", kind="grade", grade=3),
            )
        pool = session.catalog.candidates[q]
        assert outside in {session.catalog.passage_ext[pid] for pid in pool}
        # What the Queries screen shows for the query is the list the Grade screen shows.
        assert len(pool) == before + 1 == session.query_row(q).candidates
        assert int(session.catalog.candidates.sizes.sum()) == total + 1
        assert session.catalog.pairs[0].size == total + 1
        # The session has not read that grade yet (another annotator's work is read on
        # reload): not graded here, and counted once it is.
        assert session.query_row(q).graded == graded
        session.reload()
        assert session.query_row(q).graded == graded + 1
        assert len(session.catalog.candidates[q]) == before + 1
    finally:
        session.close()


def test_a_pool_read_before_the_counts_gets_what_they_hold_beyond_it(demo_db: Path) -> None:
    session = GradingSession.open(AppOptions(project=demo_db, annotator="zoe"), background=True)
    try:
        q = 3
        query = session.catalog.queries[q].ext_id
        pool = session.catalog.candidates[q]  # read before the counts
        read = len(pool)
        outside = _outside_pool(session, q)
        with Project.open(demo_db) as writer:
            record(
                writer,
                GradeEvent(query=query, passage=outside, annotator="zoe", kind="grade", grade=2),
            )
        session.start_runs()  # the counts are read after the grade: one more candidate
        session.ensure_counts()
        assert len(session.catalog.candidates[q]) == read + 1
        assert session.catalog.passage_ext[session.catalog.candidates[q][-1]] == outside
        assert session.query_row(q).candidates == read + 1
        # Its grade was read with the counts, and the book counts it.
        assert session.book.graded_candidates[q] == sum(
            1 for pid in session.catalog.candidates[q] if session.book.grade_of(q, pid) is not None
        )
    finally:
        session.close()


def test_the_background_reads_parse_in_chunks_to_the_same_arrays() -> None:
    # More groups than a chunk holds, with groups of every size, a single and an empty
    # one among them: the chunks must join up exactly as one parse of the whole did.
    rng = np.random.default_rng(5)
    sizes = rng.integers(0, 40, 1234)
    sizes[7] = 1
    values = [rng.integers(1, 10**12, size).tolist() for size in sizes]
    texts = [",".join(map(str, group)) for group in values if group]
    expected = np.array([v for group in values for v in group], dtype=np.int64)
    assert np.array_equal(joined_ints(texts), expected)
    queries = np.arange(5, 5 + sizes.size, dtype=np.int64)
    assert np.array_equal(in_chunks(queries, sizes), np.repeat(queries, sizes))
    assert joined_ints([]).size == in_chunks(queries[:0], sizes[:0]).size == 0


def test_entry_grades_find_each_entry_s_query_past_empty_rankings() -> None:
    # Queries a run lacks (empty slices, some at either end) and unnamed entries (0):
    # each entry's grade is its own query's grade of its passage.
    rng = np.random.default_rng(9)
    lengths = rng.integers(0, 6, 300)
    lengths[:3] = lengths[-3:] = 0
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    pids = rng.integers(0, 12, int(offsets[-1])).astype(np.int32)
    run = RunLists("r", offsets, pids, upto=12)
    graded = {(q, pid): int(rng.integers(1, 6)) for q in range(300) for pid in range(1, 12, 3)}
    q, pid, grade = (
        np.array(column, dtype=np.int64)
        for column in zip(*[(*k, v) for k, v in graded.items()], strict=True)
    )
    [found] = entry_grades([run], q, pid, grade)
    expected = [
        graded.get((at, int(p)), 0) if p else 0
        for at in range(300)
        for p in pids[offsets[at] : offsets[at + 1]]
    ]
    assert found.tolist() == expected


def _moved_passage() -> tuple[dict[int, str], PassageNames]:
    """Passage names over a file that holds rows 10 and 11, after the session met "x"
    outside it (pid -1) and another process imported "x" as row 500."""
    file = {10: "a", 11: "b"}
    names = PassageNames(
        lambda rows: {r: file[r] for r in rows if r in file},
        lambda exts: {e: r for r, e in file.items() if e in exts},
    )
    assert names.pid("x") == -1
    file[500] = "x"
    return file, names


def test_a_pool_read_before_the_counts_fills_in_a_moved_passage_once() -> None:
    file, names = _moved_passage()
    read = Pools(np.zeros(1, np.int64), lambda q: [names.learn(r, file[r]) for r in (10, 11)])
    catalog = Catalog([Query(0, 1, "q0", "")], names, read, [])
    pool = catalog.candidates[0]
    grown = catalog.take_counts((np.array([0, 0, 0]), np.array([10, 11, 500])), np.array([3]))
    # The counts hold "x" (row 500): the pool gets it under the pid the session knows,
    # and it is no candidate new to the counts.
    assert pool == [10, 11, -1]
    assert grown == {}
    assert catalog.added == []
    assert catalog.pairs[1].tolist() == [10, 11, 500]


def test_a_graded_passage_that_moved_into_the_file_counts_as_a_graded_candidate() -> None:
    file, names = _moved_passage()
    read = Pools(np.zeros(1, np.int64), lambda q: [names.learn(r, file[r]) for r in (10, 11, 500)])
    catalog = Catalog([Query(0, 1, "q0", "")], names, read, [])
    catalog.take_counts((np.array([0, 0, 0]), np.array([10, 11, 500])), np.array([3]))
    book = GradeBook(catalog)
    book.load(np.array([[1, 500, 3]]), score=False)  # grades come by passage row
    assert book.grade_of(0, -1) == 3
    shown = sum(book.grade_of(0, pid) is not None for pid in catalog.candidates[0])
    assert shown == 1 == book.graded_candidates[0]


def test_a_graded_candidate_another_process_made_counts_once_its_pool_is_read(
    demo_db: Path,
) -> None:
    session = GradingSession.open(AppOptions(project=demo_db, annotator="zoe"))
    try:
        q = 3
        query = session.catalog.queries[q].ext_id
        graded = int(session.book.graded_candidates[q])
        probe = GradingSession.open(AppOptions(project=demo_db, annotator="zoe"))
        try:
            outside = _outside_pool(probe, q)
        finally:
            probe.close()
        assert session.catalog.candidates.read_so_far() == {}
        with Project.open(demo_db) as writer:
            record(
                writer,
                GradeEvent(query=query, passage=outside, annotator="zoe", kind="grade", grade=4),
            )
        # The grade is read before the pool that holds the new pair: the book has it,
        # but the counts it was counted against do not hold the pair.
        session.reload()
        assert session.query_row(q).graded == graded
        pool = session.catalog.candidates[q]
        assert outside in {session.catalog.passage_ext[pid] for pid in pool}
        assert session.query_row(q).graded == graded + 1
    finally:
        session.close()
