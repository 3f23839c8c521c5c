"""The lead's progress figures (issue 30, section 2): pace on crafted grade times with a
break, alpha against the ``krippendorff`` package, the whole report of a team at work
against figures computed from the grades as given (tests/progress_project.py), the pairs
waiting for the lead, a read that never waits for a writer, and the text of
``raglabel progress``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from cli_helpers import Cli
from progress_project import DEPTH, LEAD, assert_close, build_team, expected

from raglabel.analysis.progress import IDLE_LIMIT_S, pace, pair_alpha, progress
from raglabel.cli.progress_cmd import LISTED_QUERIES, as_text
from raglabel.formats.progress_report import AnnotatorProgress, ProgressReport, QueryProgress
from raglabel.session.grading import GradingSession
from raglabel.session.options import AppOptions
from raglabel.session.team_progress import progress_request, read_progress
from raglabel.storage.adjudication import adjudicate
from raglabel.storage.grades import GradeEvent, record
from raglabel.storage.labels import LabelChoice, resolved_labels
from raglabel.storage.project import Project

T0 = datetime(2026, 11, 28, 9, 0, tzinfo=UTC)


def at(*seconds: float) -> list[datetime]:
    return [T0 + timedelta(seconds=s) for s in seconds]


# -- pace ---------------------------------------------------------------------------------


def test_pace_leaves_a_break_out_and_reads_times_in_any_order() -> None:
    # Gaps 10, 20, then 1000 (a break), then 15 and 5: four gaps of work, 50 s in all.
    found = pace(at(1045, 0, 30, 1050, 10, 1030))
    assert found.median_active_s == 12.5
    assert found.grades_per_hour == pytest.approx(4 * 3600 / 50)


def test_a_gap_of_exactly_the_idle_limit_is_work_and_one_beyond_is_a_break() -> None:
    assert pace(at(0, IDLE_LIMIT_S)).median_active_s == IDLE_LIMIT_S
    beyond = pace(at(0, IDLE_LIMIT_S + 0.001))
    assert beyond.median_active_s is None and beyond.grades_per_hour is None


@pytest.mark.parametrize("seconds", [(), (0,), (0, 400, 900)])
def test_no_pace_without_a_gap_of_work(seconds: tuple[float, ...]) -> None:
    found = pace(at(*seconds))
    assert found.median_active_s is None and found.grades_per_hour is None


def test_grades_at_one_instant_have_a_median_but_no_rate() -> None:
    found = pace(at(5, 5))
    assert found.median_active_s == 0.0 and found.grades_per_hour is None


# -- alpha --------------------------------------------------------------------------------


def rows(grades: dict[tuple[int, int], int]) -> np.ndarray:
    return np.array([(q, p, g) for (q, p), g in grades.items()], dtype=np.int64).reshape(-1, 3)


@pytest.mark.parametrize("seed", range(6))
def test_pair_alpha_equals_the_krippendorff_package_on_shared_pairs(seed: int) -> None:
    rng = np.random.default_rng(seed)
    pairs = [(int(q), int(p)) for q in range(1, 9) for p in range(1, 12)]
    a = {pair: int(rng.integers(1, 6)) for pair in pairs if rng.random() < 0.7}
    b = {
        pair: int(np.clip(a.get(pair, 3) + rng.integers(-2, 3), 1, 5))
        for pair in reversed(pairs)
        if rng.random() < 0.7
    }
    shared = sorted(set(a) & set(b))
    assert len(shared) >= 2
    data = np.array([[a[p] for p in shared], [b[p] for p in shared]], dtype=float)
    want = krippendorff.alpha(
        reliability_data=data, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5]
    )
    assert pair_alpha(rows(a), rows(b)) == pytest.approx(want, abs=1e-12)


def test_pair_alpha_is_null_below_two_shared_pairs_or_without_variation() -> None:
    assert pair_alpha(rows({(1, 1): 5, (1, 2): 1}), rows({(1, 1): 1, (2, 2): 3})) is None
    assert pair_alpha(rows({(1, 1): 4, (1, 2): 4}), rows({(1, 1): 4, (1, 2): 4})) is None
    assert pair_alpha(rows({}), rows({(1, 1): 4})) is None


# -- a team at work -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def team_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_team(tmp_path_factory.mktemp("team") / "team.db").db


def test_the_report_of_a_team_matches_figures_computed_from_the_grades_given(
    tmp_path: Path,
) -> None:
    team = build_team(tmp_path / "team.db")
    with Project.open_read(team.db) as project:
        found = progress(project, DEPTH)
        # grades: what eval reads of each annotator
        for name, figures in found.report.annotators.items():
            labels = resolved_labels(project.conn, LabelChoice(annotator=name))
            assert figures.grades == labels.human, name
    assert found.notes == []
    assert_close(found.report.model_dump(mode="json"), expected(team))
    # The team shows what the test is meant to: paces that differ, alphas defined
    # between the three graders, a query done by both its annotators and one by neither.
    figures = found.report.annotators
    assert len({figures[n].median_active_s for n in ("alice", "bob", "carol")}) == 3
    assert all(figures["alice"].alpha_with[n] is not None for n in ("bob", "carol"))
    assert found.report.queries["q21"] == QueryProgress(assigned=2, done=2)
    assert found.report.queries["q26"] == QueryProgress(assigned=2, done=0)
    assert found.report.to_adjudicate == 1


def test_settling_a_pair_takes_it_off_the_pairs_to_adjudicate(
    team_db: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "copy.db"
    with Project.open(team_db) as project:
        project.backup_to(copy)
    with Project.open(copy) as project:
        before = progress(project, DEPTH).report.to_adjudicate
    assert before == 1
    # carol and alice are two grades apart on q23's first pooled pair; the lead settles it.
    with Project.open(copy) as project:
        wide = project.conn.execute(
            "SELECT p.ext_id FROM current_grade c JOIN passage p ON p.id = c.passage_id"
            " JOIN query q ON q.id = c.query_id WHERE q.ext_id = 'q23'"
            " GROUP BY c.passage_id HAVING max(c.grade) - min(c.grade) > 1"
        ).fetchall()
        assert len(wide) == 1
        adjudicate(project, "q23", wide[0][0], LEAD, 3)
        assert progress(project, DEPTH).report.to_adjudicate == 0


def test_a_leads_adjudications_are_not_her_ratings_in_alpha(team_db: Path, tmp_path: Path) -> None:
    # Settling by taking alice's side on pairs alice graded: counted as the lead's
    # ratings, they would make her agree with alice perfectly.
    copy = tmp_path / "copy.db"
    with Project.open(team_db) as project:
        project.backup_to(copy)
    with Project.open(copy) as project:
        sides = project.conn.execute(
            "SELECT q.ext_id, p.ext_id, c.grade FROM current_grade c"
            " JOIN annotator a ON a.id = c.annotator_id JOIN query q ON q.id = c.query_id"
            " JOIN passage p ON p.id = c.passage_id WHERE a.name = 'alice'"
            " GROUP BY c.grade ORDER BY c.grade LIMIT 3"
        ).fetchall()
        assert len({grade for *_, grade in sides}) >= 2  # alpha would be defined on them
        for qid, pid, grade in sides:
            adjudicate(project, qid, pid, "the lead", grade)
        found = progress(project, DEPTH).report.annotators
    assert found["the lead"].grades == len(sides)  # her work, counted
    assert found["the lead"].alpha_with["alice"] is None  # but no rating to agree on
    assert found["alice"].alpha_with["the lead"] is None


def test_a_read_never_waits_for_a_writer_and_sees_what_was_committed(
    team_db: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "copy.db"
    with Project.open(team_db) as project:
        project.backup_to(copy)
    with Project.open(copy) as writer, Project.open_read(copy) as reader:
        before = progress(reader, DEPTH).report.annotators["carol"].grades
        # A writer holds the write lock with a change not yet committed, as a grade
        # being saved does: the read goes ahead on the state last committed (needing
        # the lock, it would wait 30 s and fail).
        with pytest.raises(RollbackError), writer.write():
            writer.conn.execute(
                "DELETE FROM current_grade WHERE annotator_id ="
                " (SELECT id FROM annotator WHERE name = 'carol')"
            )
            assert progress(reader, DEPTH).report.annotators["carol"].grades == before
            raise RollbackError
        record(writer, GradeEvent(query="q24", passage="kb-0036", annotator="carol", grade=2))
        assert progress(reader, DEPTH).report.annotators["carol"].grades == before + 1


class RollbackError(Exception):
    """Leaves a write block without committing it."""


@pytest.mark.parametrize(
    ("count", "notes"),
    [
        (
            1,
            [
                "1 of alice's grade times is not an ISO 8601 time: left out of their pace",
                "1 of alice's grade times names no time zone: read as UTC",
            ],
        ),
        (
            2,
            [
                "2 of alice's grade times are not ISO 8601 times: left out of their pace",
                "2 of alice's grade times name no time zone: read as UTC",
            ],
        ),
    ],
)
def test_times_that_are_not_as_stored_are_said_not_guessed_silently(
    tmp_path: Path, count: int, notes: list[str]
) -> None:
    team = build_team(tmp_path / "team.db")
    own = team.standing("alice")
    fresh = [p for p in team.pools["q24"] if ("q24", p) not in own][: 2 * count]
    assert len(fresh) == 2 * count
    stamps = ["yesterday"] * count + ["2026-11-28T12:00:00"] * count
    with Project.open(team.db) as project:
        for stamp, passage in zip(stamps, fresh, strict=True):
            event = GradeEvent(
                query="q24", passage=passage, annotator="alice", grade=3, origin="app",
                graded_at=stamp,
            )  # fmt: skip
            record(project, event)
        found = progress(project, DEPTH)
    assert found.notes == notes
    assert found.report.annotators["alice"].grades == len(own) + 2 * count


def test_depth_below_one_is_refused(team_db: Path) -> None:
    with Project.open_read(team_db) as project, pytest.raises(ValueError, match="depth"):
        progress(project, 0)


# -- the command's text ---------------------------------------------------------------------


def _report(open_queries: int) -> ProgressReport:
    figures = AnnotatorProgress(
        assigned=3, done=1, grades=40, grades_per_hour=120.0, median_active_s=21.5,
        alpha_with={"bob": 0.5},
    )  # fmt: skip
    queries = {f"q{i:02d}": QueryProgress(assigned=2, done=i % 2) for i in range(open_queries)}
    queries["q99"] = QueryProgress(assigned=2, done=2)
    return ProgressReport(
        annotators={
            "alice": figures,
            "bob": figures.model_copy(update={"alpha_with": {"alice": 0.5}}),
        },
        queries=queries,
        to_adjudicate=1,
    )


def test_the_text_lists_the_first_open_queries_and_counts_the_rest() -> None:
    lines = as_text(_report(LISTED_QUERIES + 5), DEPTH)
    last = lines[-1]
    shown = ", ".join(f"q{i:02d} {i % 2}/2" for i in range(LISTED_QUERIES))
    assert last == (
        f"queries assigned: {LISTED_QUERIES + 6}; done by all their annotators: 1;"
        f" not yet (annotators done/assigned): {shown} and 5 more"
    )
    assert "to adjudicate: 1 pair whose annotators differ by more than one grade" in lines[-2]


def test_the_text_gives_each_figure_and_the_alpha_of_each_two() -> None:
    def person(alphas: dict[str, float | None], pace: float | None) -> AnnotatorProgress:
        return AnnotatorProgress(
            assigned=3, done=1, grades=40, grades_per_hour=pace and 120.0,
            median_active_s=pace, alpha_with=alphas,
        )  # fmt: skip

    report = ProgressReport(
        annotators={
            "alice": person({"bob": 0.5, "carol": None}, 21.5),
            "bob": person({"alice": 0.5, "carol": None}, 21.5),
            "carol": person({"alice": None, "bob": None}, None),
        },
        queries={},
        to_adjudicate=0,
    )
    lines = as_text(report, DEPTH)
    assert lines[0] == (
        f"a query is done for an annotator who graded every passage a stored run ranks"
        f" within its top {DEPTH}; pace counts grades given at the keys, a gap over"
        f" {IDLE_LIMIT_S:.0f} s between two being a break"
    )
    assert lines[1:6] == [
        "annotator  assigned  done  grades  grades/h  median s",
        "alice             3     1      40     120.0      21.5",
        "bob               3     1      40     120.0      21.5",
        "carol             3     1      40        NA        NA",
        # carol shares nothing with anyone: her two pairs of annotators are NA.
        "alpha (ordinal) on the pairs both graded: alice-bob 0.500; NA for the other 2 pairs"
        " of annotators (fewer than 2 pairs graded by both, or one grade throughout)",
    ]
    assert lines[6:] == [
        "to adjudicate: 0 pairs whose annotators differ by more than one grade (raglabel"
        " label DB --adjudicate settles them)",
        "no query is assigned: raglabel assign DB --annotators a,b,c --overlap 2 assigns them",
    ]


def test_the_text_of_an_empty_project_says_so() -> None:
    empty = ProgressReport(annotators={}, queries={}, to_adjudicate=0)
    assert as_text(empty, DEPTH) == ["nobody is assigned a query or has graded one yet"]


def test_the_help_states_the_idle_limit_the_figures_use(cli: Cli) -> None:
    code, out, _ = cli("progress", "--help")
    assert code == 0
    assert f" {IDLE_LIMIT_S:.0f} s between two grades is a break" in " ".join(out.split())


def test_a_missing_project_is_refused_with_exit_2(cli: Cli, tmp_path: Path) -> None:
    code, out, err = cli("progress", tmp_path / "none.db")
    assert (code, out) == (2, "")
    assert "none.db" in err


# -- the app's reads ------------------------------------------------------------------------


def test_the_app_reads_the_figures_of_the_command_to_its_deepest_cutoff(team_db: Path) -> None:
    options = AppOptions(project=team_db, annotator=LEAD, blind=False, cutoffs=(1, 2, DEPTH))
    session = GradingSession.open(options)
    try:
        request = progress_request(session)
        assert (request.path, request.depth, request.read) == (team_db, DEPTH, None)
        with Project.open_read(team_db) as project:
            assert read_progress(request) == progress(project, DEPTH)
    finally:
        session.close()


def test_an_in_memory_project_is_read_on_the_spot(team_db: Path) -> None:
    memory = Project.memory()
    with Project.open_read(team_db) as project:
        project.conn.backup(memory.conn)
    session = GradingSession.open(AppOptions(project=Path("unused"), annotator=LEAD), memory)
    try:
        request = progress_request(session)
        assert request.path is None and request.depth == 20
        with Project.open_read(team_db) as project:
            assert read_progress(request) == request.read == progress(project, 20)
    finally:
        session.close()
