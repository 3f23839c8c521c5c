"""Every query: progress, holes and each run's RA-nWG; filter, sort, open one."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, ClassVar, cast

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Input, Static

from raglabel.session.grading import QueryRow
from raglabel.tui.keys import bind
from raglabel.tui.widgets.query_table import QueryTable

if TYPE_CHECKING:
    from raglabel.tui.app import GradingApp


def _score(row: QueryRow, run: int) -> float:
    value = row.ra_nwg[run] if run < len(row.ra_nwg) else math.nan
    return math.inf if math.isnan(value) else value  # NA sorts last


#: The most rows the Queries table holds at once.
MAX_SHOWN = 500


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
        bind("down", "down", show=False),
        bind("up", "up", show=False),
        Binding("escape", "clear_filter", "clear filter", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.sort = 0  # index into sort_names()
        self.text_filter = ""
        self._pending: Timer | None = None
        self.matching = 0  # queries that pass the filter

    @property
    def glapp(self) -> GradingApp:
        return cast("GradingApp", self.app)

    def sort_names(self) -> list[str]:
        runs = self.glapp.session.catalog.run_names
        return ["file order", "progress", "holes", *(f"RA-nWG of {name}" for name in runs)]

    def compose(self) -> ComposeResult:
        yield Static(id="queries-head")
        yield Input(
            placeholder="filter by id or words (Enter to apply, Escape to clear)", id="filter"
        )
        catalog = self.glapp.session.catalog
        id_width = min(max((len(q.ext_id) for q in catalog.queries), default=5), 24)
        yield QueryTable(catalog.run_names, max(id_width, 5), id="queries")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#filter", Input).display = False
        self.refill()
        self.query_one(QueryTable).focus()

    def on_screen_resume(self) -> None:
        table = self.query_one(QueryTable)
        if self.glapp.all_dirty:
            self.refill(table.current)
        else:
            for q in self.glapp.take_dirty():
                table.update(self.glapp.session.query_row(q))
        self._show_head()

    def rows(self, every: list[QueryRow] | None = None) -> list[QueryRow]:
        """The queries passing the filter, in the chosen order (from ``every`` row, if
        the caller has them already)."""
        if self.sort >= 2:  # holes and scores need the runs
            self.glapp.session.ensure_runs()
        rows = list(self.glapp.session.query_rows() if every is None else every)
        needle = self.text_filter.casefold()
        if needle:
            rows = [r for r in rows if needle in r.ext_id.casefold() or needle in r.text.casefold()]
        if self.sort == 1:
            rows.sort(key=lambda r: (r.graded / r.candidates if r.candidates else 1.0, r.index))
        elif self.sort == 2:
            rows.sort(key=lambda r: (-r.holes, r.index))
        elif self.sort >= 3:
            run = self.sort - 3
            rows.sort(key=lambda r: (_score(r, run), r.index))
        return rows

    def refill(self, current: int | None = None) -> None:
        self.glapp.take_dirty()
        self.glapp.all_dirty = False
        every = self.glapp.session.query_rows()
        rows = self.rows(every)
        self.matching = len(rows)
        # A table of tens of thousands of rows is slow to fill, sort and scroll; the
        # first rows of the current order, with filter and sort to reach any other,
        # keep every key quick.
        self.query_one(QueryTable).show(rows[:MAX_SHOWN], current)
        self._show_head(every)

    def _show_head(self, every: list[QueryRow] | None = None) -> None:
        session = self.glapp.session
        rows = session.query_rows() if every is None else every
        graded = sum(r.graded for r in rows)
        total = sum(r.candidates for r in rows)
        holes = sum(r.holes for r in rows)
        head = Text.assemble(
            ("raglabel ", "bold"),
            (f"{session.project.path.name if session.project.path else 'memory'} · ", "dim"),
            f"annotator {session.annotator}{'' if session.blind else ' (all annotators)'} · ",
            f"K={session.k} · graded {graded}/{total} · holes {holes} · ",
            f"run columns: RA-nWG@{session.k} · ",
            f"sorted by {self.sort_names()[self.sort]}",
            (
                f" · showing the first {MAX_SHOWN:,} of {self.matching:,} (filter or sort)"
                if self.matching > MAX_SHOWN
                else "",
                "yellow",
            ),
            (f" · filter {self.text_filter!r}" if self.text_filter else "", "yellow"),
        )
        self.query_one("#queries-head", Static).update(head)

    def on_query_table_opened(self, message: QueryTable.Opened) -> None:
        self.glapp.open_query(message.query)

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

    def action_sort(self) -> None:
        self.sort = (self.sort + 1) % len(self.sort_names())
        self.refill(self.query_one(QueryTable).current)

    def action_cycle_k(self) -> None:
        self.glapp.set_k(self.glapp.session.cycle_k())

    def refresh_for_k(self) -> None:
        self.refill(self.query_one(QueryTable).current)

    def action_queue(self) -> None:
        table = self.query_one(QueryTable)
        hole = self.glapp.session.next_hole(table.current if table.current is not None else 0)
        if hole is None:
            self.notify("The queue is empty: every passage in any run's top K has a grade.")
            return
        self.glapp.open_query(hole.query, hole.pid)
