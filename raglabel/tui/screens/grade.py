"""One query: its candidates, the passage in front of the annotator, live metrics."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, ClassVar, cast

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.events import Resize, ScreenResume
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Static

from raglabel.session.grading import Change, PassageRow
from raglabel.session.timing import Timing
from raglabel.tui.keys import bind, first_key
from raglabel.tui.screens.confirm import ConfirmScreen
from raglabel.tui.screens.prompt import PromptScreen
from raglabel.tui.widgets.format import GRADE_NAMES
from raglabel.tui.widgets.in_place import update_in_place
from raglabel.tui.widgets.key_footer import KeyFooter
from raglabel.tui.widgets.metrics_panel import MetricsPanel, full_height
from raglabel.tui.widgets.passage_list import PassageList
from raglabel.tui.widgets.passage_view import PassageView
from raglabel.tui.widgets.status import SaveMark, standing

if TYPE_CHECKING:
    from raglabel.tui.app import GradingApp

#: A pause longer than this between two actions counts as this long: time away from
#: the keyboard is not time spent grading.
IDLE_CAP_MS = 30_000
#: Lines of passage text the Grade screen keeps in view before it shows the whole
#: metrics panel; below that the panel folds into one line (the metrics key unfolds it).
PASSAGE_LINES = 8
#: From this width on the list and the passage stand side by side (the app's breakpoint).
WIDE = 140
#: From this width on the list is as wide as its titles and run names want, not half.
WIDE_LIST = 160
#: ... leaving the passage and the metrics panel at least this many columns, where the
#: panel's table of six runs fits without wrapping.
SIDE_LEAST = 64
#: How long a passage is shown before the one a grade moves on to is wrapped ahead: an
#: annotator moving through the list in a hurry does not make every passage wrap twice.
AHEAD_AFTER_S = 0.2


def metrics_fit(width: int, height: int, runs: int) -> bool:
    """Whether the whole metrics panel fits beside at least ``PASSAGE_LINES`` of the
    passage in a terminal of this size."""
    body = height - 5  # the query's two header lines (three when it wraps), status, footer
    side = body if width >= WIDE else body - max(5, body * 3 // 10)  # the list takes 30%
    return side - full_height(runs) - 2 >= PASSAGE_LINES  # 2: the passage's border


class GradeScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        *(bind(f"grade_{g}", f"grade({g})") for g in (1, 2, 3, 4, 5)),
        # The app's key, bound here too so that the bar shows it next to the grades: at
        # 80 columns nothing after them fits, and Help lists every other key.
        bind("help", "app.help"),
        bind("clear", "clear"),
        bind("accept", "accept", show=False),
        bind("accept_all", "accept_all", show=False),
        bind("judge", "judge", show=False),
        bind("skip", "skip"),
        bind("flag", "flag", show=False),
        bind("queue", "queue"),
        bind("down", "down", show=False),
        bind("up", "up", show=False),
        bind("next_query", "next_query"),
        bind("prev_query", "prev_query", show=False),
        bind("cycle_k", "cycle_k"),
        bind("search", "search"),
        bind("answers", "answers", show=False),
        bind("metrics", "toggle_metrics"),
        bind("queries", "app.queries"),
        Binding("escape", "back", show=False),
    ]

    def __init__(self, query: int, focus: int | None = None) -> None:
        super().__init__()
        self.qi = query
        self.focus_pid = focus
        self.rows: dict[int, PassageRow] = {}
        self.current: int | None = None
        self._shown_at: str | None = None
        self._active_ms = 0
        self._last = time.monotonic()
        self._refilled = False  # filled for a new open while off the stack (``reopen``)
        self._styled_at: int | None = None  # the app's CSS count when last styled whole
        self._ahead: Timer | None = None  # wraps the passage after this one, once due

    @property
    def glapp(self) -> GradingApp:
        return cast("GradingApp", self.app)

    def compose(self) -> ComposeResult:
        yield Static(id="query-head")
        with Horizontal(id="grade-body"):
            yield PassageList(self.glapp.session.catalog.run_names, id="passages")
            with Vertical(id="grade-side"):
                yield PassageView(id="passage")
                yield MetricsPanel(id="metrics")
        yield SaveMark(id="status")
        yield Static(id="judge-progress")
        yield KeyFooter()

    def on_mount(self) -> None:
        panel = self.query_one(MetricsPanel)
        panel.toggle_key = first_key(self.glapp.session.options.keymap, "metrics")
        self._fit_metrics(self.app.size.width, self.app.size.height)
        self.load(self.qi, self.focus_pid)
        self.query_one(PassageList).focus()

    def on_resize(self, event: Resize) -> None:
        self._fit_metrics(event.size.width, event.size.height)
        self._fit_list(event.size.width)

    def _fit_list(self, width: int) -> None:
        """From ``WIDE_LIST`` columns, the list as wide as the open query's titles and
        run names want (never less than half, never leaving the passage side less than
        ``SIDE_LEAST``); below, the stylesheet's split."""
        passages = self.query_one(PassageList)
        if width < WIDE_LIST:
            passages.set_whole_titles(False)
            passages.styles.width = None  # back to the stylesheet's
            return
        passages.set_whole_titles(True)
        wanted = min(passages.wanted_width(), width - SIDE_LEAST)
        passages.styles.width = max(wanted, width // 2)

    def _fit_metrics(self, width: int, height: int) -> None:
        """The whole panel when it leaves the passage room, else one line; the metrics
        key overrides this until the app closes."""
        chosen = self.glapp.metrics_open
        fits = metrics_fit(width, height, len(self.glapp.session.catalog.run_names))
        self.query_one(MetricsPanel).set_compact(not (fits if chosen is None else chosen))

    async def action_search(self) -> None:
        from raglabel.tui.screens.search import SearchScreen

        # Awaited until built: a grade key typed right after grades the first hit.
        await self.app.push_screen(SearchScreen(self.qi))

    def action_answers(self) -> None:
        self.glapp.open_answers(self.qi)

    def action_toggle_metrics(self) -> None:
        self.glapp.metrics_open = self.query_one(MetricsPanel).compact
        self._fit_metrics(self.app.size.width, self.app.size.height)

    def reopen(self, query: int, focus: int | None = None) -> None:
        """Fill this screen, kept off the stack since it was last shown, for a new open,
        as a new screen would show it: building and laying out a new one each time was
        most of an open's time."""
        self.query_one(SaveMark).note("")
        self.show_judge("")
        self.load(query, focus)
        self.query_one(PassageList).focus()
        self._refilled = True

    def on_screen_resume(self, event: ScreenResume) -> None:
        # Textual styles every widget of a screen pushed again, in case the CSS changed
        # while it was away (a theme); a fifth of an open. Unchanged since this screen
        # was last styled whole (the app counts each change), it is skipped. This
        # handler runs before Textual's own (a subclass's first).
        # A Textual without that private count (it is not API) restyles every time.
        count = getattr(self.app, "_css_update_count", None)
        if self._refilled and count is not None and count == self._styled_at:
            event.refresh_styles = False
        self._styled_at = count
        self._fit_metrics(self.app.size.width, self.app.size.height)  # resized meanwhile?
        if self._refilled:
            self._refilled = False
            return
        # Grades, K or the annotator may have changed on a screen above this one.
        if self.rows:
            self.reload()

    def undone(self, what: str) -> None:
        self.query_one(SaveMark).saved(f"undo: {what}")

    # -- showing -----------------------------------------------------------------------

    def reload(self, listed: list[PassageRow] | None = None) -> None:
        """This query shown anew on the passage under the cursor (which may have moved
        a moment ago, its message still on the way)."""
        self._follow_cursor()
        self.load(self.qi, self.current, listed)

    def load(
        self, query: int, focus: int | None = None, listed: list[PassageRow] | None = None
    ) -> None:
        """Show ``query`` (its rows ``listed`` when the caller has just read them)."""
        session = self.glapp.session
        self.qi = query
        if listed is None:
            listed = session.passages(query)
        self.rows = {row.pid: row for row in listed}
        if focus is None:
            focus = next((r.pid for r in listed if r.grade is None), None)
        if focus is None and listed:
            focus = listed[0].pid
        table = self.query_one(PassageList)
        if query != getattr(self, "_shown_query", query):
            self.query_one(SaveMark).note("")
        self._shown_query = query
        table.show(listed, focus)
        self._fit_list(self.app.size.width)  # this query's titles
        self._show_passage(focus)
        self._show_head()
        self.query_one(MetricsPanel).show(session.panel(query))

    def _show_head(self) -> None:
        session = self.glapp.session
        query = session.catalog.queries[self.qi]
        row = session.query_row(self.qi)
        head = Text.assemble(
            (f"{query.ext_id} ", "bold"),
            (f"[{self.qi + 1}/{len(session.catalog.queries)}] ", "dim"),
            query.text,
            "\n",
            (f"K={session.k} · graded {row.graded}/{row.candidates} · holes {row.holes} · ", "dim"),
            (f"annotator {session.annotator}{'' if session.blind else ' (all annotators)'}", "dim"),
        )
        update_in_place(self.query_one("#query-head", Static), head)
        self.show_standing()

    def show_standing(self) -> None:
        """The status line's standing: the assignment's queries done, the audit's."""
        session = self.glapp.session
        self.query_one(SaveMark).keep(
            standing(session.assignment_progress(), session.audit_progress())
        )

    def _show_passage(self, pid: int | None) -> None:
        self._tick()
        self.current = pid
        self._shown_at = datetime.now(UTC).isoformat(timespec="milliseconds")
        self._active_ms = 0
        self._draw_passage(pid)

    def _draw_passage(self, pid: int | None) -> None:
        """Passage ``pid``'s text, suggestion and marks in the passage view."""
        session = self.glapp.session
        passage = None if pid is None else session.passage(pid)
        row = None if pid is None else self.rows.get(pid)
        suggestion = None if row is None else row.suggestion
        self.query_one(PassageView).show(
            passage, session.catalog.queries[self.qi].text, suggestion, row
        )
        if self._ahead is not None:
            self._ahead.stop()
        self._ahead = None if pid is None else self.set_timer(AHEAD_AFTER_S, self._wrap_ahead)

    def _wrap_ahead(self) -> None:
        """Wrap the passage a grade of the shown one moves on to, so that the grade's
        frame does not wait for it (PassageView.prepare)."""
        self._ahead = None
        target = None if self.current is None else self._next_after(self.current)
        if target is None:
            return
        session = self.glapp.session
        row = self.rows.get(target)
        self.query_one(PassageView).prepare(
            session.passage(target),
            session.catalog.queries[self.qi].text,
            None if row is None else row.suggestion,
            row,
        )

    def select(self, pid: int) -> None:
        self.query_one(PassageList).select(pid)

    def on_passage_list_focused(self, message: PassageList.Focused) -> None:
        # The message may be older than the cursor (j then k typed ahead): the cursor wins.
        self._follow_cursor()

    def _follow_cursor(self) -> None:
        """Show the passage under the list's cursor if this screen does not yet. The
        list says so a frame or more later, and keys typed ahead (j then 2, u then 3)
        must act on the passage the cursor is on, not on the one shown before it moved."""
        pid = self.query_one(PassageList).current
        if pid != self.current:
            self._show_passage(pid)

    def _tick(self) -> None:
        now = time.monotonic()
        self._active_ms += min(int((now - self._last) * 1000), IDLE_CAP_MS)
        self._last = now

    def _timing(self) -> Timing:
        self._tick()
        return Timing(shown_at=self._shown_at, active_ms=self._active_ms)

    # -- after a write -----------------------------------------------------------------

    def show_change(self, change: Change) -> None:
        """Bring the screen in step with a write (this screen's, or an undo's)."""
        if change.query != self.qi:
            self.load(change.query, change.pid)
            return
        row = self.rows.get(change.pid)
        if row is not None:
            session = self.glapp.session
            own = change.grade if session.blind else session.own_grade(change.query, change.pid)
            row = replace(row, grade=change.grade, own=own)
            if change.kind in {"skip", "flag", "undo"}:  # a grade or clear leaves marks alone
                notes = session.mark_notes(change.query).get(change.pid, {})
                row = replace(
                    row,
                    skipped="skip" in notes,
                    flagged="flag" in notes,
                    skip_reason=notes.get("skip"),
                    flag_note=notes.get("flag"),
                )
            self.rows[change.pid] = row
            self.query_one(PassageList).update(row)
            if change.pid == self.current:
                self.query_one(PassageView).show_marks(row)
        self.query_one(MetricsPanel).show(self.glapp.session.panel(self.qi))
        self._show_head()

    def _saved(self, change: Change, *, accepted: bool = False) -> None:
        session = self.glapp.session
        catalog = session.catalog
        what = f"{catalog.queries[change.query].ext_id} / {catalog.passage_ext[change.pid]}"
        if change.kind == "grade" and change.grade is not None:
            what += f" = {change.grade} ({GRADE_NAMES[change.grade]})"
            if accepted:
                what += ", the judge's suggestion accepted"
        else:
            what += f": {change.kind}"
        self.query_one(SaveMark).saved(f"{what} · event {change.event_id}")

    def _write(self, act: str, *args: object, advance: bool = True) -> None:
        self._follow_cursor()
        pid = self.current
        if pid is None:
            self.query_one(SaveMark).note("No passage selected.")
            return
        session = self.glapp.session
        try:
            change = getattr(session, act)(self.qi, pid, *args, self._timing())
        except Exception as exc:
            self.query_one(SaveMark).failed(str(exc))
            self.app.bell()
            return
        self.glapp.changed(change)
        self.show_change(change)
        self._saved(change)
        if advance:
            self._advance()

    def _advance(self) -> None:
        """To the passage a write moves on to (``_next_after``)."""
        if self.current is None:
            return
        target = self._next_after(self.current)
        if target is not None:
            self.query_one(PassageList).select(target)
            # At once, not when the table's highlight message comes round: that takes
            # a frame or more, and the annotator is already reading.
            self._show_passage(target)

    def _next_after(self, pid: int) -> int | None:
        """The next passage of this query after ``pid`` not yet graded, else simply the
        next one; None at the end of a query graded whole, or for a passage not listed."""
        order = self.query_one(PassageList).order
        if pid not in order:
            return None
        start = order.index(pid)
        later = order[start + 1 :] + order[:start]
        target = next((other for other in later if self.rows[other].grade is None), None)
        if target is None and start + 1 < len(order):
            target = order[start + 1]
        return target

    # -- actions -----------------------------------------------------------------------

    def action_grade(self, grade: int) -> None:
        self._write("grade", grade)

    def action_clear(self) -> None:
        self._follow_cursor()
        if self.current is not None and self.glapp.session.own_grade(self.qi, self.current) is None:
            # An event that changes nothing would only clutter the log (and the undo).
            self.query_one(SaveMark).note("Nothing to clear: you have not graded this passage.")
            return
        self._write("clear", advance=False)

    def action_accept(self) -> None:
        self._follow_cursor()
        row = self.rows.get(self.current) if self.current is not None else None
        if row is None or row.suggestion is None:
            self.query_one(SaveMark).note("No judge suggestion for this passage.")
            return
        pid, session = row.pid, self.glapp.session
        try:
            change = session.grade(
                self.qi, pid, row.suggestion.grade, self._timing(), accepted=True
            )
        except Exception as exc:
            self.query_one(SaveMark).failed(str(exc))
            return
        self.glapp.changed(change)
        self.show_change(change)
        self._saved(change, accepted=True)
        self._advance()

    def action_accept_all(self) -> None:
        """Every suggestion for this query's passages the annotator has not graded,
        after a yes: one key must not write dozens of grades by accident."""
        session = self.glapp.session
        todo = [
            row
            for row in session.passages(self.qi)
            if row.suggestion is not None and row.own is None
        ]
        if not todo:
            self.query_one(SaveMark).note("No suggestion left to accept for this query.")
            return
        flagged = sum(
            row.suggestion is not None and row.suggestion.flagged is not None for row in todo
        )
        warning = f" ({flagged} flagged for a human look)" if flagged else ""
        question = (
            f"Accept the judge's grade for {len(todo)} passages you have not graded{warning}?"
        )

        def done(yes: bool | None) -> None:
            if yes:
                self._accept_rows(todo)

        self.app.push_screen(ConfirmScreen(question), done)

    def _accept_rows(self, rows: list[PassageRow]) -> None:
        session = self.glapp.session
        saved = 0
        for row in rows:
            assert row.suggestion is not None
            try:
                change = session.grade(
                    self.qi, row.pid, row.suggestion.grade, self._timing(), accepted=True
                )
            except Exception as exc:
                self.query_one(SaveMark).failed(f"after {saved} accepted: {exc}")
                self.app.bell()
                break
            self.glapp.changed(change)
            saved += 1
        self.reload()
        if saved == len(rows):
            self.query_one(SaveMark).saved(
                f"accepted {saved} suggestions as your grades (u undoes them one by one)"
            )

    def action_judge(self) -> None:
        self.glapp.judge_query(self.qi)

    def show_judge(self, text: str) -> None:
        line = self.query_one("#judge-progress", Static)
        line.update(Text(text, style="italic #8a8aff"))
        line.display = bool(text)

    def action_skip(self) -> None:
        self._follow_cursor()
        if self.current is None:
            return

        def done(reason: str | None) -> None:
            if reason:
                self._write("skip", reason)

        self.app.push_screen(PromptScreen("Why skip this passage?"), done)

    def action_flag(self) -> None:
        self._follow_cursor()
        if self.current is None:
            return

        def done(note: str | None) -> None:
            if note is not None:
                self._write("flag", note, advance=False)

        self.app.push_screen(
            PromptScreen("Flag this passage: a note (optional)", required=False), done
        )

    def action_down(self) -> None:
        self.query_one(PassageList).action_cursor_down()

    def action_up(self) -> None:
        self.query_one(PassageList).action_cursor_up()

    def action_next_query(self) -> None:
        self.load((self.qi + 1) % len(self.glapp.session.catalog.queries))

    def action_prev_query(self) -> None:
        self.load((self.qi - 1) % len(self.glapp.session.catalog.queries))

    def action_queue(self) -> None:
        session = self.glapp.session
        self.glapp.look_for_assign()  # the lead may have assigned anew
        # The assignment, then the audit's drawn queries: they need no runs, so no
        # waiting for them.
        hole = session.served_hole(self.qi)
        if hole is None and not session.runs_scored:
            # Another query's holes need the whole runs: waiting for them here would
            # freeze the screen (tens of seconds on a big project).
            here = session.hole_here(self.qi)
            if here is None:
                self.notify(
                    "The runs are still being read: the queue moves on to other queries "
                    "once they are in.",
                    timeout=3,
                )
            else:
                self.query_one(PassageList).select(here.pid)
            return
        hole = hole or session.next_hole(self.qi)
        if hole is None:
            self.query_one(SaveMark).note(
                "The queue is empty: every passage in any run's top K has a grade."
            )
            return
        if hole.query != self.qi or hole.pid not in self.rows:  # not listed yet: list it
            self.load(hole.query, hole.pid)
        else:
            self.query_one(PassageList).select(hole.pid)

    def action_cycle_k(self) -> None:
        if not self.glapp.session.runs_scored:
            self.notify("The runs are still being read: K can change once they are in.", timeout=3)
            return
        self.glapp.set_k(self.glapp.session.cycle_k())

    def refresh_for_k(self) -> None:
        self.query_one(MetricsPanel).show(self.glapp.session.panel(self.qi))
        self._show_head()

    def landed(self) -> None:
        """The counts or the runs read in the background are in: the head and the panel
        from them, and the rows too where they differ from the early read this screen
        shows (another window may have graded this query since that read)."""
        listed = self.glapp.session.passages(self.qi)
        if [row.pid for row in listed] != list(self.rows):
            self.reload(listed)  # other candidates: listed anew
            return
        table = self.query_one(PassageList)
        for row in listed:
            old = self.rows[row.pid]
            if row == old:
                continue  # the usual case: redrawing nothing
            self.rows[row.pid] = row
            table.update(row)
            if row.pid == self.current:
                if row.suggestion != old.suggestion:
                    self._draw_passage(row.pid)  # its reading time goes on
                else:
                    self.query_one(PassageView).show_marks(row)
        self.refresh_for_k()

    def action_back(self) -> None:
        self.app.pop_screen()
