"""The grading app: it owns the session (and so the project file) and its screens.

``create_app`` is the one factory: ``raglabel label``/``demo``, the Pilot tests and the
benchmark all build the app through it.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import events, work
from textual.app import App
from textual.binding import BindingType
from textual.driver import Driver
from textual.message import Message
from textual.screen import Screen
from textual.worker import get_current_worker

from raglabel.session.grading import Change, GradingSession
from raglabel.session.loading import Stage
from raglabel.session.options import AppOptions
from raglabel.tui.collector import Collector
from raglabel.tui.commands import LabelCommands
from raglabel.tui.keys import bind
from raglabel.tui.screens.confirm import ConfirmScreen
from raglabel.tui.screens.grade import GradeScreen
from raglabel.tui.screens.help import HelpScreen
from raglabel.tui.screens.prompt import PromptScreen
from raglabel.tui.screens.queries import QueriesScreen
from raglabel.tui.screenshot import failed_message, saved_message, screenshot_folder
from raglabel.tui.widgets.status import assignment_change_text

if TYPE_CHECKING:
    from raglabel.judge.work import RunLimits, Tally
    from raglabel.session.answers import AnswerChange
    from raglabel.session.judging import Finished, JudgeSetup
    from raglabel.session.run_estimates import Estimate

#: How often the WAL is folded into the database file, off the keystroke path.
CHECKPOINT_EVERY_S = 15.0
#: How often the app looks for a moment at rest to collect garbage in.
COLLECT_CHECK_S = 1.0
#: How often an open app looks for an assign the lead recorded since (one indexed read):
#: a new share reaches the annotator within this, not only at their next ``g`` or reload.
ASSIGN_CHECK_S = 10.0
#: How long a notice of the command's (its options' notices) stays: long enough to be
#: read after the first screen has drawn.
NOTICE_S = 20.0


class Landed(Message):
    """A stage of the session's background load landed: posted from the thread that read
    it (``post_message`` is thread-safe), handled on the app's thread, which puts what
    was read in place."""

    def __init__(self, stage: Stage) -> None:
        super().__init__()
        self.stage = stage


class GradingApp(App[int]):
    CSS_PATH = "raglabel.tcss"
    TITLE = "raglabel"
    COMMANDS = App.COMMANDS | {LabelCommands}
    COMMAND_PALETTE_BINDING = "ctrl+p"
    # Below 140 columns the Grade screen stacks its list above the passage and metrics:
    # side by side, a list half as wide would cut titles and run names to stubs.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (140, "-wide")]  # noqa: RUF012
    BINDINGS: ClassVar[list[BindingType]] = [
        bind("undo", "undo"),
        bind("runs", "runs"),
        bind("help", "help"),
        bind("review", "review", show=False),
        bind("palette", "command_palette", show=False),
        bind("progress", "progress"),
    ]
    #: Actions of the app's own keys that would act on a screen below the Help screen.
    _NOT_ON_HELP = frozenset({"undo", "runs", "help", "command_palette", "review", "progress"})

    def get_driver_class(self) -> type[Driver]:
        """Textual's choice, but a tab served by ``raglabel serve`` quits when its server
        is gone (ServedDriver), instead of running on alone."""
        chosen = super().get_driver_class()
        # By name: a terminal's app need not import the web driver to know it is not it.
        if (chosen.__module__, chosen.__name__) == ("textual.drivers.web_driver", "WebDriver"):
            from raglabel.tui.served_driver import ServedDriver

            return ServedDriver
        return chosen

    def __init__(self, session: GradingSession) -> None:
        super().__init__()
        self.session = session
        self.dirty: set[int] = set()  # queries whose row on the Queries screen is stale
        self.all_dirty = False
        self.judging: str | None = None  # the query the judge is working on, if any
        # The metrics key's choice: None lets each Grade screen fit the panel to its size.
        self.metrics_open: bool | None = None
        # The Runs screen's choice: answer criteria (True) or retrieval metrics.
        self.runs_answers = False
        # The Runs screen's estimate: people's grades in view, the judge's, or corrected.
        self.runs_estimate: Estimate = "human"
        self._warned_marks = False
        self._kept_grade: GradeScreen | None = None
        # Where each screenshot on its way is written, by delivery key, for the notice.
        self._screenshot_folders: dict[str, Path | None] = {}
        self.collector = Collector()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # The Help screen reads like a page over the app: no key shown there (and none
        # hidden) acts on the screen below it; its own keys close it.
        if action == "progress" and self.session.blind:
            return False  # the lead's view: off, and out of the footer, for blind grading
        return not (isinstance(self.screen, HelpScreen) and action in self._NOT_ON_HELP)

    def on_mount(self) -> None:
        self.set_keymap(self.session.options.keymap)
        self.push_screen(QueriesScreen())
        if self.session.counted:  # else once the grades are read
            self._hint_if_empty()
        if not self.session.runs_scored:
            self.session.loading.watch(self._post_landed)
            # After the first paint: reading them sooner would slow the paint down.
            self.call_after_refresh(self.session.start_runs)
        if self.session.options.adjudicate:
            self.action_adjudicate()
        for notice in self.session.options.notices:
            self.notify(notice, severity="warning", timeout=NOTICE_S)
        self.set_interval(CHECKPOINT_EVERY_S, self._checkpoint)
        self.collector.hold()
        self.set_interval(COLLECT_CHECK_S, self.collector.collect_if_due)
        self.set_interval(ASSIGN_CHECK_S, self.look_for_assign)

    async def on_event(self, event: events.Event) -> None:
        # A pointer resting over the terminal sends moves: they are no one waiting.
        if isinstance(event, events.InputEvent) and not isinstance(event, events.MouseMove):
            self.collector.input_seen()
        await super().on_event(event)

    def _checkpoint(self) -> None:
        self.run_worker(
            self.session.checkpoint,
            # Named here: else Textual describes the worker by repr(the bound method).
            description="checkpoint",
            thread=True,
            exclusive=True,
            group="checkpoint",
        )

    def _post_landed(self, stage: Stage) -> None:
        """The background load's report, from its thread: handled as a message."""
        self.post_message(Landed(stage))

    def on_landed(self, message: Landed) -> None:
        """Fill in progress once the candidates and grades read in the background are
        in, and the run columns once the runs are."""
        if message.stage == "counts":
            if self.session.counted:  # something needed them sooner and put them in
                return
            self.session.ensure_counts()
            self._hint_if_empty()
            self.all_dirty = True
            # A Grade screen opened meanwhile showed its query's own read: the same
            # figures, now from the whole counts, and its rows as read with them.
            self._landed_on_screen()
            return
        self.session.ensure_runs()  # at once if something needed them sooner
        self.all_dirty = True
        self._landed_on_screen()  # the rankings, holes and figures of all the runs

    def _built_screen(self) -> Screen[object] | None:
        """The screen in view, once its widgets exist. One pushed a moment ago (keys typed
        ahead, a worker finishing just then) is left alone: its mounting fills it from the
        session, which has every change already."""
        screen = self.screen
        return screen if screen.is_mounted else None

    def _landed_on_screen(self) -> None:
        """Show what the background reads brought on the screen in view."""
        screen = self._built_screen()
        if isinstance(screen, GradeScreen):
            screen.landed()
        elif isinstance(screen, QueriesScreen):
            screen.refresh_for_k()

    def _hint_if_empty(self) -> None:
        """A typo in --annotator opens an empty view; say so instead of showing NA."""
        session = self.session
        # A locked app was opened by an invite for that very name: no typo to catch.
        if session.blind and not session.options.locked and not session.book.counts.any():
            assigned = session.assigned_annotators()
            if session.annotator in assigned:
                return  # no typo: the lead gave this very name queries to grade
            known = {*session.annotators(), *assigned} - {session.annotator}
            if known:
                self.notify(
                    f"No grades by {session.annotator!r} yet. Annotators in this file (with"
                    f" grades or an assignment): {', '.join(sorted(known))} (switch with"
                    " ctrl+p).",
                    timeout=8,
                )

    def on_unmount(self) -> None:
        self.collector.release()
        self.session.close()

    # -- the palette's screenshot --------------------------------------------------------

    def deliver_screenshot(
        self,
        filename: str | None = None,
        path: str | None = None,
        time_format: str | None = None,
    ) -> str | None:
        # In a terminal, a folder that exists (Textual's choice, the downloads folder,
        # may not); under ``raglabel serve`` the browser receives it, as Textual does.
        folder = None if self.is_web else Path(path) if path else screenshot_folder()
        key = super().deliver_screenshot(
            filename, None if folder is None else str(folder), time_format
        )
        if key is not None:
            self._screenshot_folders[key] = folder
        return key

    def on_delivery_complete(self, event: events.DeliveryComplete) -> None:
        if event.name == "screenshot":
            event.prevent_default()  # Textual's own notice says less
            self._screenshot_folders.pop(event.key, None)
            self.notify(saved_message(event.path), title="Screenshot", markup=False)

    def on_delivery_failed(self, event: events.DeliveryFailed) -> None:
        if event.name == "screenshot":
            event.prevent_default()  # Textual's own notice gives no reason
            folder = self._screenshot_folders.pop(event.key, None)
            self.notify(
                failed_message(folder, event.exception),
                title="Screenshot",
                severity="error",
                markup=False,
                timeout=10,
            )

    # -- what screens call -------------------------------------------------------------

    def changed(self, change: Change) -> None:
        self.dirty.add(change.query)

    def take_dirty(self) -> list[int]:
        taken = sorted(self.dirty)
        self.dirty.clear()
        return taken

    def open_query(self, query: int, pid: int | None = None) -> Awaitable[object] | None:
        """Show ``query`` on a Grade screen; what awaits the screen's mount when one is
        pushed (an action that awaits it lets keys typed ahead act on that screen)."""
        if isinstance(self.screen, GradeScreen):
            self.screen.load(query, pid)
            return None
        return self.push_screen(self._grade_screen(query, pid))

    def _grade_screen(self, query: int, pid: int | None) -> GradeScreen:
        """A Grade screen showing ``query``: one kept for the app's life (installed, so a
        pop does not take it apart) and filled anew on each open, since building and
        laying out a new one was most of an open's time; a new one only while the kept
        one is on the stack already (under the Runs screen, say)."""
        kept = self._kept_grade
        if kept is None:
            kept = self._kept_grade = GradeScreen(query, pid)
            self.install_screen(kept, name="grade")
        elif kept in self.screen_stack:
            return GradeScreen(query, pid)
        else:
            kept.reopen(query, pid)
        return kept

    def set_k(self, k: int) -> None:
        if k != self.session.k:
            self.session.set_k(k)
        self.all_dirty = True
        refresh = getattr(self._built_screen(), "refresh_for_k", None)
        if refresh is not None:
            refresh()
        self.notify(f"K = {k}", timeout=1.5)

    # -- actions -----------------------------------------------------------------------

    def action_undo(self) -> None:
        from raglabel.tui.screens.adjudicate import AdjudicationScreen

        try:
            change = self.session.undo()
        except Exception as exc:
            self.notify(f"Undo NOT saved: {exc}", severity="error")
            return
        if change is None:
            self.notify("Nothing to undo.")
            return
        if not isinstance(change, Change):
            self._answer_undone(change)
            return
        self.changed(change)
        undone = (
            f"{self.session.catalog.queries[change.query].ext_id} / "
            f"{self.session.catalog.passage_ext[change.pid]} is now "
            f"{'ungraded' if change.grade is None else change.grade}"
        )
        screen = self._built_screen()
        if isinstance(screen, GradeScreen):
            screen.show_change(change)
            screen.select(change.pid)
            screen.undone(f"{undone} · event {change.event_id}")
            return
        if isinstance(screen, AdjudicationScreen):  # the lead stays on the disagreements
            screen.undone(f"{undone} · event {change.event_id}")
            return
        if isinstance(self.screen, GradeScreen):  # pushed, not built: it opens on the undone
            self.screen.qi, self.screen.focus_pid = change.query, change.pid
        elif not isinstance(self.screen, AdjudicationScreen):  # that one lists as it mounts
            self.push_screen(self._grade_screen(change.query, change.pid))
        self.notify(f"Undone: {undone}", timeout=2)

    def _answer_undone(self, change: AnswerChange) -> None:
        """Show the answer an undo reverted, in the Answers view."""
        from raglabel.tui.screens.answers import AnswersScreen, undo_text

        screen = self._built_screen()
        if isinstance(screen, AnswersScreen):
            screen.show_undo(change)
            return
        if isinstance(self.screen, AnswersScreen):
            self.notify(undo_text(change), timeout=2)
            return
        self.push_screen(
            AnswersScreen(
                change.query,
                (change.system, change.sample_id, change.criterion),
                saved=undo_text(change),
            )
        )

    def open_answers(self, query: int) -> None:
        """The Answers view of query ``query`` (an index into the catalog); of the next
        query with answers when it has none."""
        session = self.session
        answered = session.answers.queries()
        if not answered:
            self.notify(
                "No answers in this project yet: import a system's answers with "
                "`raglabel import DB --answers NAME=FILE`.",
                severity="warning",
                timeout=8,
            )
            return
        from raglabel.tui.screens.answers import AnswersScreen

        qid = session.catalog.queries[query].ext_id
        if qid not in answered:
            later = [
                other for other in answered if (session.catalog.query_by_ext(other) or 0) > query
            ]
            target = (later or answered)[0]
            self.notify(f"No system answered {qid}; showing {target}, the next query with answers.")
            qid = target
        if isinstance(self.screen, AnswersScreen):
            self.screen.load(qid)
        else:
            self.push_screen(AnswersScreen(qid))

    def action_queries(self) -> None:
        """Back to the Queries screen from however deep the stack is."""
        while len(self.screen_stack) > 2 and not isinstance(self.screen, QueriesScreen):
            self.pop_screen()

    def action_review(self) -> None:
        from raglabel.tui.screens.review import ReviewScreen

        if not isinstance(self.screen, ReviewScreen):
            self.push_screen(ReviewScreen())

    def action_quit_saved(self) -> None:
        """Quit: every grade was committed as it was given, so nothing is left to save,
        unless unsupported marks still wait for a faithfulness grade: then the first
        press says so and the second quits."""
        waiting = self.session.waiting_marks()
        if waiting and not self._warned_marks:
            self._warned_marks = True
            self.notify(
                f"{waiting} answer{'s have' if waiting != 1 else ' has'} unsupported marks "
                "waiting for a faithfulness grade; they are saved only with that grade. "
                "Press q (or ctrl+q) again to quit without them.",
                severity="warning",
                timeout=10,
            )
            return
        self.exit(0)

    async def action_quit(self) -> None:
        """ctrl+q (Textual's own quit key) asks as q does: waiting marks are never
        dropped without a word."""
        self.action_quit_saved()

    def action_runs(self, select: str | None = None) -> None:
        from raglabel.tui.screens.runs import RunsScreen

        if isinstance(self.screen, RunsScreen):
            return
        self.push_screen(RunsScreen(select))

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            topic = getattr(self.screen, "help_topic", "passages")
            self.push_screen(
                HelpScreen(
                    self.session.options.keymap,
                    self.session.metric_definitions(),
                    answers=topic == "answers",
                )
            )

    def action_adjudicate(self) -> None:
        from raglabel.tui.screens.adjudicate import AdjudicationScreen

        self.push_screen(AdjudicationScreen())

    def action_progress(self) -> None:
        from raglabel.tui.screens.progress import ProgressScreen

        if not isinstance(self.screen, ProgressScreen):
            self.push_screen(ProgressScreen())

    def look_for_assign(self) -> None:
        """Tell the annotator of a share the lead changed since it was read and count it
        wherever it is shown: every ASSIGN_CHECK_S, and at ``g`` before the queue is
        served. One indexed read while nothing changed."""
        changed = self.session.assignment_changed()
        if changed is None:
            return
        self.notify(assignment_change_text(changed), timeout=6)
        screen = self._built_screen()
        if isinstance(screen, GradeScreen):
            screen.show_standing()
        elif isinstance(screen, QueriesScreen):
            screen.refresh_for_k()  # the header, and the list while it shows only the share

    def action_reload(self) -> None:
        self.session.reload()
        changed = self.session.assignment_changed()  # an assign by the lead, meanwhile
        self._after_reload()
        if changed is not None:
            self.notify(assignment_change_text(changed), timeout=6)

    def _after_reload(self) -> None:
        from raglabel.tui.screens.answers import AnswersScreen
        from raglabel.tui.screens.runs import RunsScreen

        self.all_dirty = True
        screen = self._built_screen()
        if isinstance(screen, GradeScreen):
            screen.reload()
        elif isinstance(screen, AnswersScreen):
            screen.load(screen.query_id, screen.current, screen.criterion)
        elif isinstance(screen, QueriesScreen | RunsScreen):
            screen.refresh_for_k()

    def _refuse_when_locked(self, what: str) -> bool:
        if not self.session.options.locked:
            return False
        self.notify(
            f"This app grades as {self.session.annotator} only: {what} is left out here.",
            severity="warning",
        )
        return True

    def action_switch_annotator(self) -> None:
        if self._refuse_when_locked("switching annotator"):
            return

        def done(name: str | None) -> None:
            if name:
                self.session.switch_annotator(name)
                self._after_reload()
                self.notify(f"Grading as {name}.")

        self.push_screen(PromptScreen("Grade as (annotator name):", self.session.annotator), done)

    def action_export(self) -> None:
        # The file would land on the machine that runs the app, not the grader's.
        if self._refuse_when_locked("exporting to a file (raglabel export DB does it)"):
            return
        project = self.session.project.path
        default = "" if project is None else str(project.with_suffix(".qrels.txt"))

        def done(path: str | None) -> None:
            if not path:
                return
            target = Path(path).expanduser()
            if not target.is_file():  # a pipe or a device is written to, not replaced
                self._export(target)
                return

            def replace(yes: bool | None) -> None:
                if yes:
                    self._export(target)

            self.push_screen(ConfirmScreen(f"{target} exists. Replace it?"), replace)

        self.push_screen(PromptScreen("Export the grades in view as TREC qrels to:", default), done)

    @work(thread=True, exclusive=True, group="export")
    def _export(self, target: Path) -> None:
        try:
            count = self.session.export_qrels(target)
        except Exception as exc:
            self.call_from_thread(self.notify, f"Export failed: {exc}", severity="error")
            return
        self.call_from_thread(self.notify, f"Wrote {count} grades to {target}")

    # -- the judge, in the background ---------------------------------------------------

    def judge_query(self, query: int) -> None:
        """Ask the judge about one query's ungraded passages, as the last ``raglabel
        judge`` run on this file asked; grading goes on meanwhile."""
        from raglabel.session.judging import latest_setup

        # Its calls are paid with the server's key: the lead runs `raglabel judge`.
        if self._refuse_when_locked("asking the judge (raglabel judge DB does it)"):
            return
        qid = self.session.catalog.queries[query].ext_id
        if self.session.project.path is None:
            self.notify("The judge needs a project file.", severity="warning")
            return
        if self.judging is not None:
            self.notify(f"The judge is still working on {self.judging}.", severity="warning")
            return
        found = latest_setup(self.session.project)
        if found is None:
            self.notify(
                "No judge set up for this file: run `raglabel judge DB --base-url URL "
                "--model NAME` once, and the app will ask the same way.",
                severity="warning",
                timeout=8,
            )
            return
        setup, limits = found
        self.judging = qid
        self._judge_progress(query, f"judge: asking {', '.join(setup.models)} about {qid}…")
        self._judge(query, qid, setup, limits)

    @work(thread=True, exclusive=True, group="judge")
    def _judge(self, query: int, qid: str, setup: JudgeSetup, limits: RunLimits) -> None:
        from raglabel.session.judging import judge_query

        assert self.session.project.path is not None
        worker = get_current_worker()
        shown = [0.0]

        def progress(tally: Tally) -> None:
            moment = time.monotonic()
            if moment - shown[0] < 0.1 and tally.done < tally.planned:
                return
            shown[0] = moment
            text = f"judge {qid}: {tally.bar(12)} {tally.describe()}"
            self.call_from_thread(self._judge_progress, query, text)

        try:
            finished = judge_query(
                self.session.project.path,
                qid,
                setup,
                limits,
                on_progress=progress,
                should_stop=lambda: worker.is_cancelled,
            )
        except Exception as exc:
            self.call_from_thread(self._judge_done, query, None, f"{type(exc).__name__}: {exc}")
            return
        self.call_from_thread(self._judge_done, query, finished, None)

    def _judge_progress(self, query: int, text: str) -> None:
        screen = self._built_screen()
        if isinstance(screen, GradeScreen):
            screen.show_judge(text if screen.qi == query else f"{text} (other query)")

    def _judge_done(self, query: int, finished: Finished | None, error: str | None) -> None:
        from raglabel.session.judging import status_line

        qid, self.judging = str(self.judging), None
        if finished is None or finished.tally.stopped:
            reason = error if finished is None else finished.tally.stopped
            self.notify(f"Judge stopped on {qid}: {reason}", severity="error", timeout=10)
            summary = f"judge {qid}: stopped" if finished is None else status_line(qid, finished)
        else:
            summary = status_line(qid, finished)
            self.notify(summary, timeout=4)
        screen = self._built_screen()
        if isinstance(screen, GradeScreen):
            screen.show_judge(summary)
            if screen.qi == query:
                screen.load(query, screen.current)


def create_app(options: AppOptions, session: GradingSession | None = None) -> GradingApp:
    return GradingApp(session or GradingSession.open(options, background=True))


def run_app(options: AppOptions) -> int:
    app = create_app(options)
    app.run()
    return app.return_code or 0
