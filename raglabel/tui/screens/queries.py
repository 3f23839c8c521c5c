"""Every query: progress, holes and each run's RA-nWG; filter (by words, or to the
annotator's assignment), sort, open one."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, cast

import numpy as np
from numpy.typing import NDArray
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Input, Static

from raglabel.metrics.definitions import display_name
from raglabel.metrics.names import MetricKey
from raglabel.metrics.table import metric
from raglabel.session.assignment_queue import AssignmentQueue, DoneRead
from raglabel.session.grading import QueryRow
from raglabel.tui.keys import bind, first_key
from raglabel.tui.query_filter import QueryFilter
from raglabel.tui.widgets.key_footer import KeyFooter
from raglabel.tui.widgets.query_table import QueryTable
from raglabel.tui.widgets.status import assignment_text

if TYPE_CHECKING:
    from raglabel.tui.app import GradingApp


class QueriesScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        # The key that goes back to the queries elsewhere quits here; first, so the
        # narrowest footer still shows it.
        bind("queries", "app.quit_saved", label="quit"),
        bind("filter", "filter"),
        Binding("o", "sort", "sort"),
        bind("cycle_k", "cycle_k"),
        bind("queue", "queue"),
        bind("review", "app.review"),
        bind("answers", "answers"),
        # Not in the footer (it is full at 80 columns): the header line names the key
        # whenever run columns are folded away.
        bind("run_columns", "run_columns", show=False),
        # Likewise: the header line names the key whenever the annotator has an assignment.
        bind("mine", "mine", show=False),
        bind("down", "down", show=False),
        bind("up", "up", show=False),
        Binding("escape", "clear_filter", "clear filter", show=False),
        Binding("enter", "open", "open", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.sort = 0  # index into sort_names()
        self.text_filter = ""
        self.mine = False  # only the annotator's assigned queries
        self._pending: Timer | None = None
        self.matching = 0  # queries that pass the filter
        self._filter: QueryFilter | None = None
        # What the chosen sort still waits for ("the runs"), None once it could sort:
        # meanwhile the order is file order, and the header says so.
        self.waiting_for: str | None = None

    @property
    def glapp(self) -> GradingApp:
        return cast("GradingApp", self.app)

    def sort_names(self) -> list[str]:
        runs = self.glapp.session.catalog.run_names
        ra = metric("ra_nwg").display
        return ["file order", "progress", "holes", *(f"{ra} of {name}" for name in runs)]

    def compose(self) -> ComposeResult:
        yield Static(id="queries-head")
        yield Input(
            placeholder="filter by id or words (Enter to apply, Escape to clear)", id="filter"
        )
        catalog = self.glapp.session.catalog
        id_width = min(max((len(q.ext_id) for q in catalog.queries), default=5), 24)
        yield QueryTable(
            catalog.run_names,
            max(id_width, 5),
            self.glapp.session.query_row,
            id="queries",
        )
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#filter", Input).display = False
        self.refill()
        self.query_one(QueryTable).focus()
        # Case-folding 100,000 queries for the filter takes a tenth of a second: in
        # another thread, after the first paint, rather than on the first filter's key.
        self.call_after_refresh(
            self.run_worker, self._query_filter, thread=True, description="query filter"
        )

    def on_screen_resume(self) -> None:
        table = self.query_one(QueryTable)
        if self.glapp.all_dirty:
            self.refill(table.current)
        else:
            for q in self.glapp.take_dirty():
                table.update(self.glapp.session.query_row(q))
        self._show_head()

    def order(self) -> list[int]:
        """Indexes of the queries passing the filter, in the chosen order (ties in file
        order). Sorted as arrays: with 100,000 queries, a row object each took seconds.

        Never waits for the data read in the background: a column not yet read sorts
        as unknown (so in file order), and the app refills once it is in."""
        ordered: list[int] = self._order().tolist()
        return ordered

    def _order(self) -> NDArray[np.int64]:
        columns = self.glapp.session.query_columns()
        index = (
            self._query_filter().matching(self.text_filter)
            if self.text_filter
            else np.arange(columns.graded.size, dtype=np.int64)
        )
        if self.mine:
            members = self.glapp.session.assignment.members
            # Reloaded after an assign that left this annotator out: no filter to keep.
            self.mine = bool(members)
            index = index[np.isin(index, np.array(members, dtype=np.int64))] if members else index
        self.waiting_for = None
        if self.sort == 1 and not columns.counted:
            self.waiting_for = "the candidates and grades"
        elif self.sort >= 2 and not columns.scored:
            self.waiting_for = "the runs"
        if self.waiting_for is not None:
            return index  # nothing known yet: every key ties, and ties are in file order
        if self.sort == 1:
            done = columns.graded / np.maximum(columns.candidates, 1)
            key = np.where(columns.candidates > 0, done, 1.0)[index]
        elif self.sort == 2:
            key = -columns.holes[index]
        elif self.sort >= 3:
            run = self.sort - 3
            scores = columns.ra_nwg[run] if run < len(columns.ra_nwg) else None
            key = np.full(index.size, math.inf) if scores is None else scores[index]
            key = np.where(np.isnan(key), math.inf, key)  # NA sorts last
        else:
            return index
        # A stable sort of an ascending index keeps ties in file order.
        ordered: NDArray[np.int64] = index[np.argsort(key, kind="stable")]
        return ordered

    def _query_filter(self) -> QueryFilter:
        """The filter over every query's id and text, made once (the catalog's queries
        do not change while the app runs)."""
        if self._filter is None:
            queries = self.glapp.session.catalog.queries
            self._filter = QueryFilter([q.ext_id for q in queries], [q.text for q in queries])
        return self._filter

    def rows(self) -> list[QueryRow]:
        """The queries passing the filter, in the chosen order."""
        return [self.glapp.session.query_row(q) for q in self.order()]

    def refill(self, current: int | None = None) -> None:
        self.glapp.take_dirty()
        self.glapp.all_dirty = False
        order = self._order()
        self.matching = int(order.size)
        # Every query of the order is reachable: the table builds only the rows on screen.
        self.query_one(QueryTable).show(order, current)
        self._show_head()

    def _show_head(self) -> None:
        session = self.glapp.session
        columns = session.query_columns()
        graded = int(columns.graded.sum())
        total = int(columns.candidates.sum())
        holes = int(columns.holes.sum())
        head = Text.assemble(
            ("raglabel ", "bold"),
            (f"{session.project.path.name if session.project.path else 'memory'} · ", "dim"),
            f"annotator {session.annotator}{'' if session.blind else ' (all annotators)'} · ",
            # Yellow while it narrows the list, as the words filter is.
            (self._assignment_part(), "yellow" if self.mine else ""),
            f"K={session.k} · graded {f'{graded}/{total}' if columns.counted else '…'}"
            f" · holes {holes if columns.scored else '…'} · ",
            f"run columns: {display_name(MetricKey('ra_nwg', session.k))}",
            (self._runs_folded(), "yellow"),
            " · ",
            f"sorted by {self.sort_names()[self.sort]}",
            (
                f" (file order until {self.waiting_for} are read, then sorted)"
                if self.waiting_for
                else "",
                "yellow",
            ),
            (
                f" · filter {self.text_filter!r}: {self.matching:,} of "
                f"{len(session.catalog.queries):,}"
                if self.text_filter
                else "",
                "yellow",
            ),
        )
        self.query_one("#queries-head", Static).update(head)

    def _assignment_part(self) -> str:
        """The annotator's assignment and the key that shows only it (or all again);
        nothing when they have none. Which of it is done is read in a worker after the
        first paint (``…`` until then): at hundreds of queries the read would hold up
        the paint."""
        standing = self.glapp.session.assignment_standing()
        if standing is None:
            return ""
        done, assigned = standing
        if done is None:
            self.call_after_refresh(self._read_assignment)
            text = f"your assignment: … of {assigned} queries done"
        else:
            text = assignment_text(done, assigned)
        key = first_key(self.glapp.session.options.keymap, "mine")
        if self.mine:
            return f"{text}, only those shown ({key}: all) · "
        return f"{text} ({key}: only those) · "

    def _read_assignment(self) -> None:
        """Have a worker read which assigned queries are done, unless one is on it."""
        wanted = self.glapp.session.assignment_to_read()
        if wanted is not None:
            self._read_done(*wanted)

    @work(thread=True, group="assignment", description="assignment")
    def _read_done(self, queue: AssignmentQueue, path: Path) -> None:
        self.app.call_from_thread(self._done_read, queue, queue.read_aside(path))

    def _done_read(self, queue: AssignmentQueue, read: DoneRead | None) -> None:
        session = self.glapp.session
        if read is None:  # read on the app's thread instead, which says what failed
            queue.reading = False
            session.assignment_progress()
        else:
            # A stale read (another annotator, a reload since) is dropped; the header
            # then asks for the assignment of now.
            session.land_assignment(read)
        if self.is_mounted:
            self._show_head()

    def _runs_folded(self) -> str:
        """Which runs have a column, when not all of them do, and the key for more."""
        table = self.query_one(QueryTable)
        count = len(table.run_names)
        shown = table.runs_shown
        key = first_key(self.glapp.session.options.keymap, "run_columns")
        if len(shown) == count:
            return ""
        if table.first_run is None:
            return f" hidden ({key} shows them)"
        if not shown:
            return " (no room for them at this width)"
        which = f"run {shown[0] + 1}" if len(shown) == 1 else f"runs {shown[0] + 1}-{shown[-1] + 1}"
        return f" of {which} of {count} ({key}: more)"

    def on_query_table_runs_shown(self, message: QueryTable.RunsShown) -> None:
        self._show_head()

    def action_run_columns(self) -> None:
        self.query_one(QueryTable).next_runs()

    def on_query_table_opened(self, message: QueryTable.Opened) -> None:
        self.glapp.open_query(message.query)

    async def action_open(self) -> None:
        # At once, not through the table's message, and awaited until the Grade screen
        # is built: a grade key typed right after Enter acts there.
        current = self.query_one(QueryTable).current
        if current is not None:
            pushed = self.glapp.open_query(current)
            if pushed is not None:
                await pushed

    def action_answers(self) -> None:
        current = self.query_one(QueryTable).current
        self.glapp.open_answers(current if current is not None else 0)

    def action_down(self) -> None:
        self.query_one(QueryTable).action_cursor_down()

    def action_up(self) -> None:
        self.query_one(QueryTable).action_cursor_up()

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.display = True
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        # Debounced: with thousands of queries, refilling on every keystroke would lag.
        if self._pending is not None:
            self._pending.stop()
        value = event.value.strip()
        self._pending = self.set_timer(0.15, lambda: self._apply_filter(value))

    def _apply_filter(self, value: str) -> None:
        self._pending = None
        if value != self.text_filter:
            self.text_filter = value
            self.refill()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if self._pending is not None:
            self._pending.stop()
        self._apply_filter(event.value.strip())
        self.query_one(QueryTable).focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.value = ""
        box.display = False
        if self.text_filter:
            self.text_filter = ""
            self.refill()
        self.query_one(QueryTable).focus()

    def action_mine(self) -> None:
        """Show only the queries assigned to the annotator, or every query again. Only
        the list narrows: the others stay open (the queue and n, p reach them)."""
        session = self.glapp.session
        if not self.mine and session.assignment_standing() is None:
            db = session.project.path or "DB"
            self.notify(
                f"No queries are assigned to {session.annotator}; the lead gives some with"
                f" raglabel assign {db} --annotators A,B --overlap K (their names, and how"
                " many of them grade each query).",
                timeout=6,
            )
            return
        self.mine = not self.mine
        self.refill(self.query_one(QueryTable).current)

    def action_sort(self) -> None:
        self.sort = (self.sort + 1) % len(self.sort_names())
        table = self.query_one(QueryTable)
        if self.sort >= 3:  # by a run's score: its column in view, folded or not
            table.show_run(self.sort - 3)
        self.refill(table.current)

    def action_cycle_k(self) -> None:
        if self._runs_still_read("K can change"):
            return
        self.glapp.set_k(self.glapp.session.cycle_k())

    def _runs_still_read(self, what: str) -> bool:
        """Say so and True when the runs are still being read: the session would wait
        for them (tens of seconds on a big project) with the screen frozen."""
        if self.glapp.session.runs_scored:
            return False
        self.notify(f"The runs are still being read: {what} once they are in.", timeout=3)
        return True

    def refresh_for_k(self) -> None:
        self.refill(self.query_one(QueryTable).current)

    def action_queue(self) -> None:
        session = self.glapp.session
        table = self.query_one(QueryTable)
        here = table.current if table.current is not None else 0
        self.glapp.look_for_assign()  # the lead may have assigned anew
        # The assignment, then the audit's drawn queries, need no runs: no waiting.
        hole = session.served_hole(here)
        if hole is None:
            if self._runs_still_read("the queue can open"):
                return
            hole = session.next_hole(here)
        if hole is None:
            self.notify("The queue is empty: every passage in any run's top K has a grade.")
            return
        self.glapp.open_query(hole.query, hole.pid)
