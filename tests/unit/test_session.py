"""The grading session without a terminal: its numbers against ``raglabel eval DB``, and
every action against the rows it leaves in the project file."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from raglabel.cli.main import main
from raglabel.session.grading import GradingSession
from raglabel.session.live_metrics import PANEL_METRICS
from raglabel.session.options import AppOptions
from raglabel.session.run_figures import FIGURE_METRICS, compare_runs, run_reports, view_inputs
from raglabel.session.timing import Timing
from raglabel.storage.grades import GradeEvent, record
from raglabel.storage.runs import ranked_ids

ME = "ann"  # the demo annotator (tests/conftest.py)


@pytest.fixture
def db(demo_db: Path) -> Path:
    return demo_db


@pytest.fixture
def session(db: Path) -> Iterator[GradingSession]:
    opened = GradingSession.open(AppOptions(project=db, annotator=ME))
    yield opened
    opened.close()


def eval_per_query(
    db: Path, capsys: pytest.CaptureFixture[str], k: int, *extra: str
) -> dict[str, dict[str, dict[str, float | None]]]:
    capsys.readouterr()
    code = main(
        [
            "eval",
            str(db),
            "-k",
            str(k),
            "--metrics",
            "set,ndcg@k",
            "--per-query",
            "--format",
            "json",
            *extra,
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    report = json.loads(out)
    return {run: body["per_query"] for run, body in report["runs"].items()}


def same(a: float | None, b: float) -> bool:
    if a is None:
        return math.isnan(b)
    return not math.isnan(b) and abs(a - b) < 1e-12


@pytest.mark.parametrize("k", [5, 10])
def test_panel_and_query_rows_equal_eval_db(
    db: Path, session: GradingSession, capsys: pytest.CaptureFixture[str], k: int
) -> None:
    session.set_k(k)
    expected = eval_per_query(db, capsys, k, "--annotator", ME)
    names = session.catalog.run_names
    checked = 0
    for q, query in enumerate(session.catalog.queries):
        panel = session.panel(q)
        row = session.query_row(q)
        for i, run in enumerate(names):
            values = expected[run].get(query.ext_id)
            if values is None:  # eval leaves out queries nobody graded; RA-nWG is NA here
                assert math.isnan(panel.values[run]["ra_nwg"])
                assert math.isnan(row.ra_nwg[i])
                continue
            for metric in PANEL_METRICS:
                assert same(values[f"{metric}@{k}"], panel.values[run][metric]), (
                    run,
                    query,
                    metric,
                )
            assert same(values[f"ra_nwg@{k}"], row.ra_nwg[i])
            checked += 1
    assert checked == 20 * len(names)


def test_grades_keep_every_view_in_step(
    session: GradingSession, db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Grade through the queue until one query (an ungraded one) has several grades.
    graded = []
    for grade in (5, 4, 1, 3, 2, 5):
        hole = session.next_hole(25)
        assert hole is not None
        change = session.grade(
            hole.query, hole.pid, grade, Timing("2026-11-23T00:00:00+00:00", 1200)
        )
        assert change.grade == grade
        graded.append((hole.query, hole.pid, grade))
    incremental = np.array(
        [session.query_row(q).ra_nwg for q in range(len(session.catalog.queries))]
    ).T
    holes = [session.query_row(q).holes for q in range(len(session.catalog.queries))]
    session.reload()  # from the file alone
    fresh = np.array([session.query_row(q).ra_nwg for q in range(len(session.catalog.queries))]).T
    np.testing.assert_allclose(incremental, fresh, equal_nan=True)
    assert holes == [session.query_row(q).holes for q in range(len(session.catalog.queries))]
    expected = eval_per_query(db, capsys, session.k, "--annotator", ME)
    q = graded[0][0]
    qid = session.catalog.queries[q].ext_id
    for i, run in enumerate(session.catalog.run_names):
        assert same(expected[run][qid][f"ra_nwg@{session.k}"], fresh[i, q])
    rows = session.project.conn.execute(
        "SELECT grade, shown_at, active_ms, origin FROM event WHERE origin = 'app' ORDER BY id"
    ).fetchall()
    assert [r[0] for r in rows] == [g for _, _, g in graded]
    assert all(r[1:] == ("2026-11-23T00:00:00+00:00", 1200, "app") for r in rows)


def test_queue_prefers_passages_most_runs_retrieve(session: GradingSession) -> None:
    q = 25
    holes = session.board.holes(q, session.k)
    assert holes, "the demo's ungraded queries have holes"
    ranked = [(-h.runs, h.best_rank) for h in holes]
    assert ranked == sorted(ranked)
    first = session.next_hole(q)
    assert first == holes[0]
    text = session.catalog.passage_ext[first.pid]
    # Counted from the stored ids, not the session's pids.
    qid = session.catalog.queries[q].ext_id
    stored = [dict(ranked_ids(session.project.conn, name)) for name in session.catalog.run_names]
    in_top = sum(text in ids.get(qid, [])[: session.k] for ids in stored)
    assert in_top == first.runs == max(h.runs for h in holes)


def test_queue_moves_to_the_query_with_most_holes(session: GradingSession) -> None:
    graded_query = 0
    assert session.board.holes(graded_query, session.k) == []
    hole = session.next_hole(graded_query)
    assert hole is not None
    counts = [session.query_row(q).holes for q in range(len(session.catalog.queries))]
    assert counts[hole.query] == max(counts)


def test_undo_walks_back_across_queries(session: GradingSession) -> None:
    a = session.board.holes(25, session.k)[0]
    b = session.board.holes(27, session.k)[0]
    session.grade(25, a.pid, 4)
    session.grade(27, b.pid, 2)
    first = session.undo()
    assert first is not None and (first.query, first.pid, first.grade) == (27, b.pid, None)
    second = session.undo()
    assert second is not None and (second.query, second.pid, second.grade) == (25, a.pid, None)
    assert session.book.grade_of(25, a.pid) is None
    kinds = [
        k for (k,) in session.project.conn.execute("SELECT kind FROM event WHERE origin='app'")
    ]
    assert kinds == ["grade", "grade", "undo", "undo"]


def test_undo_restores_a_regraded_pair(session: GradingSession) -> None:
    pid = session.catalog.candidates[0][0]
    before = session.book.grade_of(0, pid)
    assert before is not None
    session.grade(0, pid, 1 if before != 1 else 2)
    change = session.undo()
    assert change is not None and change.grade == before
    assert session.book.counts[0].sum() == len(session.book.grades[0])


def test_undo_with_nothing_to_undo(db: Path) -> None:
    with_nothing = GradingSession.open(AppOptions(project=db, annotator="newcomer"))
    assert with_nothing.undo() is None
    with_nothing.close()


def test_two_windows_of_one_annotator_share_one_undo(session: GradingSession, db: Path) -> None:
    # Undo takes back the annotator's latest action in the file, wherever it was made
    # (docs/guide/serve.md says so for two browser tabs of one person).
    other = GradingSession.open(AppOptions(project=db, annotator=ME))
    try:
        pid = session.board.holes(25, session.k)[0].pid
        session.grade(25, pid, 4)
        mine = other.grade(25, pid, 1)
        assert session.book.grade_of(25, pid) == 4  # the other window's, once reloaded:
        session.reload()
        assert session.book.grade_of(25, pid) == 1
        change = session.undo()
        assert change is not None and change.grade == 4
        undone = session.project.conn.execute(
            "SELECT target FROM event WHERE kind = 'undo' ORDER BY id DESC LIMIT 1"
        ).fetchone()
        assert undone == (mine.event_id,)
    finally:
        other.close()


def test_skip_and_flag_are_marked_and_undone(session: GradingSession) -> None:
    pid = session.board.holes(25, session.k)[0].pid
    session.skip(25, pid, "not in English")
    session.flag(25, pid, "maybe a duplicate")
    row = next(r for r in session.passages(25) if r.pid == pid)
    assert row.skipped and row.flagged and row.grade is None
    session.undo()
    row = next(r for r in session.passages(25) if r.pid == pid)
    assert row.skipped and not row.flagged
    notes = session.project.conn.execute(
        "SELECT kind, note FROM event WHERE origin = 'app' AND kind IN ('skip', 'flag')"
    ).fetchall()
    assert notes == [("skip", "not in English"), ("flag", "maybe a duplicate")]


def test_blind_by_default_and_resolved_when_asked(db: Path) -> None:
    bob = GradingSession.open(AppOptions(project=db, annotator="bob"))
    assert bob.book.counts.sum() == 0, "bob sees nobody's grades but his own"
    pid = bob.catalog.candidates[0][0]
    theirs = GradingSession.open(AppOptions(project=db, annotator=ME)).book.grade_of(0, pid)
    assert theirs is not None
    bob.grade(0, pid, 1)
    assert bob.book.grade_of(0, pid) == 1
    bob.close()
    everyone = GradingSession.open(AppOptions(project=db, annotator="bob", blind=False))
    assert everyone.book.grade_of(0, pid) == min(theirs, 1), "lower median of two"
    assert everyone.own_grade(0, pid) == 1
    change = everyone.grade(0, pid, 5)
    assert change.grade == min(theirs, 5)
    everyone.close()


def test_adjudication_settles_a_disagreement(db: Path) -> None:
    lead = GradingSession.open(
        AppOptions(project=db, annotator="lead", blind=False, adjudicate=True)
    )
    pid = lead.catalog.candidates[0][0]
    mine = lead.book.grade_of(0, pid)
    assert mine is not None
    other = 1 if mine >= 3 else 5
    record(
        lead.project,
        GradeEvent(
            query=lead.catalog.queries[0].ext_id,
            passage=lead.catalog.passage_ext[pid],
            annotator="bob",
            grade=other,
        ),
    )
    lead.reload()
    found = [d for d in lead.disagreements() if d.passage == lead.catalog.passage_ext[pid]]
    assert found and found[0].final is None
    change = lead.adjudicate(found[0].query, found[0].passage, 3)
    assert change.grade == 3 and lead.book.grade_of(0, pid) == 3
    settled = [d for d in lead.disagreements() if d.passage == found[0].passage]
    assert [d.final for d in settled] == [3]
    lead.close()


def test_suggestions_are_shown_apart_and_accepting_records_it(session: GradingSession) -> None:
    q = 25
    pid = session.board.holes(q, session.k)[0].pid
    conn = session.project.conn
    query_row = session.catalog.queries[q].row_id
    for model, grade in (("m1", 4), ("m2", 2), ("m1", 5)):
        conn.execute(
            "INSERT INTO suggestion (query_id, passage_id, model, grade, reason, created_at)"
            " VALUES (?, (SELECT id FROM passage WHERE ext_id = ?), ?, ?, 'because', '2026-11-23')",
            (query_row, session.catalog.passage_ext[pid], model, grade),
        )
    row = next(r for r in session.passages(q) if r.pid == pid)
    assert row.grade is None, "a suggestion is never a grade"
    assert row.suggestion is not None
    assert (row.suggestion.grade, row.suggestion.low, row.suggestion.high) == (2, 2, 5)
    session.grade(q, pid, row.suggestion.grade, accepted=True)
    accepted = conn.execute("SELECT accepted_suggestion FROM event WHERE origin='app'").fetchone()
    assert accepted == (1,)


def test_cutoff_cycles_and_rescores(session: GradingSession) -> None:
    assert session.k == 5
    at5 = session.query_row(25).holes
    assert session.cycle_k() == 10
    assert session.query_row(25).holes >= at5
    assert session.cycle_k() == 20
    assert session.cycle_k() == 5


def test_switching_annotator_shows_their_grades(session: GradingSession) -> None:
    assert session.book.counts.sum() > 0
    session.switch_annotator("carol")
    assert session.book.counts.sum() == 0
    with pytest.raises(ValueError, match="name"):
        session.switch_annotator("  ")


def test_run_figures_equal_eval_db(
    db: Path, session: GradingSession, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert (
        main(
            [
                "eval",
                str(db),
                "-k",
                "5",
                "--metrics",
                ",".join(f"{metric}@5" for metric in FIGURE_METRICS),
                "--format",
                "json",
                "--annotator",
                ME,
                "--ci",
            ]
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    inputs = view_inputs(session)
    for run, figures in run_reports(inputs).items():
        assert figures.ci is not None
        for metric in FIGURE_METRICS:
            expected = report["runs"][run]["mean"][f"{metric}@5"]
            got = figures.mean[metric]
            assert (expected is None and got is None) or abs(expected - got) < 1e-12
            ci = report["runs"][run]["ci"][f"{metric}@5"]
            if ci is not None and figures.ci[metric] is not None:
                assert ci == pytest.approx(list(figures.ci[metric]))
    names = session.catalog.run_names
    result = compare_runs(inputs, names[0], names[1])
    assert result.comparison.queries == 20
    differences = [abs(d.difference) for d in result.queries]
    assert differences == sorted(differences, reverse=True) and all(d > 0 for d in differences)


def test_the_session_checkpoints_itself(db: Path) -> None:
    import sqlite3

    session = GradingSession.open(AppOptions(project=db, annotator=ME))
    assert session.project.conn.execute("PRAGMA wal_autocheckpoint").fetchone() == (0,)
    holes = session.board.holes(25, 20)
    for hole in holes:
        session.grade(25, hole.pid, 3)
    wal = db.with_name(db.name + "-wal")
    assert wal.stat().st_size > 0
    session.checkpoint()
    with sqlite3.connect(db) as other:  # a checkpoint left nothing to copy
        busy, pages, copied = other.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    assert busy == 0 and pages == copied
    session.close()
    with sqlite3.connect(db) as other:
        grades = other.execute("SELECT count(*) FROM event WHERE origin = 'app'").fetchone()[0]
    assert grades == len(holes) > 0


@pytest.mark.parametrize("reload_meanwhile", [False, True])
def test_runs_read_in_the_background_score_as_if_read_at_once(
    db: Path, session: GradingSession, reload_meanwhile: bool
) -> None:
    later = GradingSession.open(AppOptions(project=db, annotator=ME), background=True)
    assert not later.runs_scored and later.catalog.runs == []
    assert not later.query_row(0).scored
    later.start_runs()
    if reload_meanwhile:
        later.reload()  # a new grade book: the thread's entry grades are for the old one
    later.ensure_runs()
    assert later.runs_scored and later.query_row(0).scored
    for q in range(len(session.catalog.queries)):
        mine, theirs = later.query_row(q), session.query_row(q)
        np.testing.assert_array_equal(mine.ra_nwg, theirs.ra_nwg)  # NaN (NA) equals NaN
        assert dataclasses.replace(mine, ra_nwg=()) == dataclasses.replace(theirs, ra_nwg=())
    for mine, theirs in zip(later.book.run_grades, session.book.run_grades, strict=True):
        np.testing.assert_array_equal(mine, theirs)
    hole = later.next_hole(25)
    assert hole is not None
    assert later.grade(hole.query, hole.pid, 4).grade == 4
    later.close()


# -- issue 13: clear of nothing, the review of marks, search over the corpus -------------


def test_review_lists_standing_marks_newest_first(demo_db: Path) -> None:
    session = GradingSession.open(AppOptions(project=demo_db, annotator="ann"))
    try:
        a, b = session.catalog.candidates[25][:2]
        session.skip(25, a, "duplicate")
        session.flag(25, a, "old price")
        flag_b = session.flag(26, b)
        session.undo()  # the flag on b goes
        rows = session.review()
        assert [(r.query, r.pid, r.kind, r.note) for r in rows] == [
            (25, a, "flag", "old price"),
            (25, a, "skip", "duplicate"),
        ]
        assert flag_b.kind == "flag"
        notes = session.mark_notes(25)[a]
        assert notes == {"skip": "duplicate", "flag": "old price"}
        row = next(r for r in session.passages(25) if r.pid == a)
        assert (row.skip_reason, row.flag_note) == ("duplicate", "old price")
    finally:
        session.close()


def test_search_grades_count_like_any_other(demo_db: Path) -> None:
    from raglabel.storage.labels import own_grades

    session = GradingSession.open(AppOptions(project=demo_db, annotator="ann"))
    try:
        q = 25
        pool = set(session.catalog.candidates[q])
        hits = session.search(q, "encryption keys")
        assert hits and hits == sorted(hits, key=lambda h: -h.score)
        outside = next(h for h in hits if not h.in_pool)
        assert outside.pid not in pool
        session.include(q, outside.pid)
        assert outside.pid in {r.pid for r in session.passages(q)}
        change = session.grade(q, outside.pid, 4)
        assert change.grade == 4 and outside.pid in session.catalog.candidates[q]
        assert session.query_row(q).graded == 1
        row_id = session.catalog.queries[q].row_id
        assert (row_id, outside.ext_id, 4) in own_grades(session.project.conn, "ann")
    finally:
        session.close()
    reopened = GradingSession.open(AppOptions(project=demo_db, annotator="ann"))
    try:
        assert outside.pid is not None
        ext = outside.ext_id
        assert ext in {reopened.catalog.passage_ext[p] for p in reopened.catalog.candidates[q]}
    finally:
        reopened.close()


def test_graded_candidates_stay_in_step_with_every_action(session: GradingSession) -> None:
    # The Queries screen sorts and sums these counts without counting them again.
    import random

    rng = random.Random(16)

    def counted() -> list[int]:
        pools = session.catalog.candidates
        return [
            sum(1 for pid in pools[q] if pid in book) for q, book in enumerate(session.book.grades)
        ]

    for _ in range(60):
        q = rng.randrange(len(session.catalog.queries))
        pool = session.catalog.candidates[q]
        pid = rng.choice(pool)
        action = rng.random()
        if action < 0.6:
            session.grade(q, pid, rng.randint(1, 5))
        elif action < 0.8 and session.own_grade(q, pid) is not None:
            session.clear(q, pid)
        else:
            session.undo()
        assert session.book.graded_candidates.tolist() == counted()
    columns = session.query_columns()
    assert int(columns.graded.sum()) == sum(counted())
    pools = session.catalog.candidates
    assert columns.candidates.tolist() == [len(pools[q]) for q in range(len(pools))]
