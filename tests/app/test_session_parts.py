"""The grading session's parts on their own: the background load and what it reports,
the undo stack and its typed entries, and the answers side built from what it is handed.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from answers_project import build

from raglabel.session import loading
from raglabel.session.answers import AnswerGrading
from raglabel.session.grading import GradingSession
from raglabel.session.loading import BackgroundLoad, Stage
from raglabel.session.options import AppOptions
from raglabel.session.undo import UndoEntry, UndoStack
from raglabel.storage.events import AnswerTarget, PassageTarget
from raglabel.storage.project import Project
from raglabel.tui.app import GradingApp, create_app

ME = "ann"  # the demo annotator (tests/conftest.py)


def _background(db: Path, *, blind: bool = True) -> GradingSession:
    return GradingSession.open(AppOptions(project=db, annotator=ME, blind=blind), background=True)


class Heard:
    """A report callback that notes each stage and the thread it was told on."""

    def __init__(self) -> None:
        self.stages: list[tuple[Stage, str]] = []
        self.runs = threading.Event()

    def __call__(self, stage: Stage) -> None:
        self.stages.append((stage, threading.current_thread().name))
        if stage == "runs":
            self.runs.set()


# -- the background load -------------------------------------------------------------------


def test_the_load_reports_each_stage_once_in_order_from_its_thread(demo_db: Path) -> None:
    session = _background(demo_db)
    heard = Heard()
    try:
        session.loading.watch(heard)
        assert heard.stages == []  # nothing landed, nothing said
        session.start_runs()
        session.start_runs()  # started already: no second thread, no second report
        assert heard.runs.wait(30)
        assert [stage for stage, _ in heard.stages] == ["counts", "runs"]
        assert all(name.startswith("raglabel-runs") for _, name in heard.stages)
        # Told, not put in place: that is the session's, on its own thread.
        assert not session.counted and not session.runs_scored
        assert session.counts_ready and session.runs_ready
        session.ensure_runs()
        assert session.counted and session.runs_scored
        assert len(heard.stages) == 2
    finally:
        session.close()


def test_a_watch_after_landing_hears_at_once_what_landed(demo_db: Path) -> None:
    session = _background(demo_db)
    try:
        session.start_runs()
        session.ensure_runs()  # landed and put in place before anyone watched
        heard = Heard()
        session.loading.watch(heard)
        assert heard.stages == [
            ("counts", threading.current_thread().name),
            ("runs", threading.current_thread().name),
        ]
    finally:
        session.close()


def _hold_counts(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event]:
    """The background read of candidates and grades waits, once begun (the first event
    is set), until the second event is set."""
    reading, release = threading.Event(), threading.Event()
    original = loading._read_counts

    def held(*args: Any, **kwargs: Any) -> loading.Counted:
        reading.set()
        assert release.wait(30)
        return original(*args, **kwargs)

    monkeypatch.setattr(loading, "_read_counts", held)
    return reading, release


def test_a_load_closed_while_reading_reports_nothing(
    demo_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reading, release = _hold_counts(monkeypatch)
    session = _background(demo_db)
    heard = Heard()
    session.loading.watch(heard)
    session.start_runs()
    assert reading.wait(30)
    runs = session.loading._runs
    assert runs is not None
    session.close()  # the thread is reading: it finishes, and says nothing
    release.set()
    runs.result(timeout=30)
    assert heard.stages == []


def test_a_load_with_nothing_to_come_is_in_at_once() -> None:
    load = BackgroundLoad(pending=False)
    load.note_write(loading.Write(1, 0, 5, 3))  # nothing to put it again on: dropped
    assert load._meanwhile == []
    assert not load.started and load.counts_ready and load.runs_ready
    heard = Heard()
    load.watch(heard)
    assert heard.stages == []


def test_reading_the_grades_again_makes_a_running_load_stale(
    demo_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reading, release = _hold_counts(monkeypatch)
    session = _background(demo_db, blind=False)
    try:
        session.start_runs()
        assert reading.wait(30)
        session.passages(2)  # read on its own before the counts: an early query
        session.grade(2, session.passages(2)[0].pid, 5)
        assert session.loading.is_early(2)
        generation = session.loading.generation
        session.reload()
        assert session.loading.generation == generation + 1
        assert not session.loading.is_early(2)
        release.set()
        session.ensure_runs()  # the thread's reads are stale: the grades are read anew
        reference = GradingSession.open(AppOptions(project=demo_db, annotator=ME, blind=False))
        try:
            assert session.book.counts.tolist() == reference.book.counts.tolist()
            assert session._own == reference._own
        finally:
            reference.close()
    finally:
        release.set()
        session.close()


# -- the app: told by a message, never polling ----------------------------------------------


async def test_the_app_hears_the_load_by_messages_and_polls_nothing(
    demo_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    posted: list[tuple[Stage, str]] = []
    post = GradingApp._post_landed

    def noted(app: GradingApp, stage: Stage) -> None:
        posted.append((stage, threading.current_thread().name))
        post(app, stage)

    monkeypatch.setattr(GradingApp, "_post_landed", noted)
    intervals: list[float] = []
    set_interval = GradingApp.set_interval

    def timed(app: GradingApp, interval: float, *args: Any, **kwargs: Any) -> Any:
        intervals.append(interval)
        return set_interval(app, interval, *args, **kwargs)

    monkeypatch.setattr(GradingApp, "set_interval", timed)
    app = create_app(AppOptions(project=demo_db, annotator=ME))
    async with app.run_test(size=(120, 32)) as pilot:
        for _ in range(1500):
            if app.session.runs_scored:
                break
            await pilot.pause(0.02)
        assert app.session.runs_scored and app.session.counted
        # Posted from the load's thread; put in place by the app on its own.
        assert [stage for stage, _ in posted] == ["counts", "runs"]
        assert all(name.startswith("raglabel-runs") for _, name in posted)
        # The app's own timers are its checkpoints and its moments to collect garbage in:
        # none wakes it every few milliseconds to ask whether the load is in.
        assert intervals and min(intervals) >= 1.0, intervals


# -- the undo stack ------------------------------------------------------------------------


def test_the_undo_stack_gives_back_the_latest_entry_first() -> None:
    stack = UndoStack()
    assert stack.pop() is None and len(stack) == 0
    first = UndoEntry(PassageTarget("q1", "d1"), 7)
    second = UndoEntry(AnswerTarget("alpha", "q1", "faithfulness"), 8)
    stack.push(first)
    stack.push(second)
    assert len(stack) == 2
    assert stack.pop() == second
    assert stack.pop() == first
    assert stack.pop() is None
    stack.push(first)
    stack.clear()
    assert stack.pop() is None


@pytest.fixture
def answers_db(tmp_path: Path) -> Path:
    return build(tmp_path)


def test_each_write_goes_on_the_stack_as_what_it_touched(answers_db: Path) -> None:
    session = GradingSession.open(AppOptions(project=answers_db, annotator=ME))
    try:
        pid = session.catalog.candidates[0][0]
        change = session.grade(0, pid, 3)
        session.answers.answers("q1")
        answer = session.answers.grade(("beta", "q1"), "answer_relevancy", 4)
        stack = session.undo_stack
        assert len(stack) == 2
        undone = session.undo()  # the answer's grade, the latest
        assert undone is not None and not hasattr(undone, "pid")
        assert (undone.kind, undone.event_id > answer.event_id) == ("undo", True)
        assert len(stack) == 1
        passage = stack.pop()
        assert passage == UndoEntry(
            PassageTarget(session.catalog.queries[0].ext_id, session.catalog.passage_ext[pid]),
            change.event_id,
        )
        stack.push(passage)
        session.switch_annotator("zoe")  # another annotator: nothing of theirs to take back
        assert len(stack) == 0
    finally:
        session.close()


# -- the answers side, built from what it is handed ----------------------------------------


def test_answer_grading_works_from_its_dependencies_alone(answers_db: Path) -> None:
    stack = UndoStack()
    with Project.open(answers_db) as project:
        grading = AnswerGrading(project, ME, blind=True, undo_stack=stack)
        assert grading.queries() == ["q1", "q2", "q3"]
        key = ("alpha", "q1")
        grading.answers("q1")
        done = grading.grade(key, "faithfulness", 4)
        assert grading.view(key).criterion("faithfulness").own == 4
        entry = stack.pop()
        assert entry == UndoEntry(AnswerTarget("alpha", "q1", "faithfulness"), done.event_id)
        undone = grading.undo()
        assert undone is not None and undone.kind == "undo" and undone.grade is None
        assert grading.view(key).criterion("faithfulness").own is None
        assert len(stack) == 0  # an undo is not itself undone


def test_switching_annotator_drops_the_marks_waiting_for_a_grade(answers_db: Path) -> None:
    with Project.open(answers_db) as project:
        grading = AnswerGrading(project, ME, blind=True, undo_stack=UndoStack())
        grading.answers("q1")
        assert grading.toggle_mark(("alpha", "q1"), 0) is None  # waits for faithfulness
        assert grading.waiting_marks() == 1
        grading.switch_annotator("zoe")
        assert grading.annotator == "zoe" and grading.waiting_marks() == 0


def test_a_stage_landing_while_a_watch_tells_waits_its_turn() -> None:
    # The app's watch tells "counts" while the reading thread lands "runs": the runs must
    # not overtake the counts (the app puts counts in place first, and hints on them).
    from raglabel.session.loading import BackgroundLoad

    load = BackgroundLoad(pending=True)
    heard: list[str] = []
    landing: list[threading.Thread] = []

    def report(stage: str) -> None:
        if stage == "counts" and not landing:
            runs = threading.Thread(target=load._landed_stage, args=("runs",))
            landing.append(runs)
            runs.start()
            runs.join(0.2)  # it cannot tell before this report is done
        heard.append(stage)

    load._landed_stage("counts")
    load.watch(report)
    landing[0].join(5)
    assert heard == ["counts", "runs"]
