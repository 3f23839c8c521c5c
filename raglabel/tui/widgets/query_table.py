"""Every query with its progress, holes and each run's RA-nWG at K.

The query text keeps at least ``TEXT_LEAST`` columns: when the run columns would take
them, only as many runs as leave them are shown, a page of runs at a time, and a key
turns to the next page (and past the last, hides the run columns).

Virtual: the table holds the order of the queries (an array of indexes) and builds
only the rows on screen, as it draws them. A DataTable built a row object and measured
every cell of every row it held, so it could hold a few hundred of a big project's
100,000 queries; this one reaches all of them by scrolling and the cursor keys, and a
sort or a filter costs the order and one screenful.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size, Spacing
from textual.message import Message
from textual.strip import Strip

from raglabel.session.grading import QueryRow
from raglabel.tui.widgets.columns import PAD, SCROLLBAR, fit_columns
from raglabel.tui.widgets.format import number, one_line, short_runs
from raglabel.tui.widgets.line_table import LineTable

#: A score column is never narrower than its number ("0.359").
SCORE_WIDTH = 5
#: The query text keeps this much before run names are shortened.
TEXT_WANTED = 48
#: The query text keeps this much before run columns are folded away: a query is
#: chosen by its words, which ten columns did not show.
TEXT_LEAST = 30
#: Built rows kept for redrawing; a screenful is a few dozen.
KEPT_ROWS = 512


def _progress(row: QueryRow) -> Text:
    if not row.counted:  # candidates and grades still being read: unknown, not 0/0
        return Text("…", style="dim")
    done = row.candidates and row.graded >= row.candidates
    return Text(f"{row.graded}/{row.candidates}", style="green" if done else "")


def _holes(row: QueryRow) -> Text:
    if not row.scored:
        return Text("…", style="dim")
    return Text(str(row.holes), style="bold yellow" if row.holes else "dim")


def _score(row: QueryRow, value: float) -> Text:
    # Runs still being read show as "…", not as NA: NA means undefined, not unknown.
    return Text(number(value) if row.scored else "…", justify="right")


def _plain(value: str) -> Text:
    # Plain, not markup: a query's text is data ("[b]" in it is shown, not obeyed).
    return Text(one_line(value), no_wrap=True, end="")


@dataclass
class _Column:
    label: str
    width: int  # without the padding


class QueryTable(LineTable):
    """The queries in a given order (indexes into the session's catalog), a row cursor
    over them, and a header line that stays put while the rows scroll under it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor_up", "cursor up", show=False),
        Binding("down", "cursor_down", "cursor down", show=False),
        Binding("pageup", "page_up", "page up", show=False),
        Binding("pagedown", "page_down", "page down", show=False),
        Binding("ctrl+home", "first", "first query", show=False),
        Binding("ctrl+end", "last", "last query", show=False),
        Binding("home", "scroll_home", "left edge", show=False),
        Binding("end", "scroll_end", "right edge", show=False),
    ]

    class Opened(Message):
        def __init__(self, query: int) -> None:
            self.query = query
            super().__init__()

    class RunsShown(Message):
        """The runs with a column changed (a page turned, or the width)."""

    def __init__(
        self,
        run_names: list[str],
        id_width: int,
        row_of: Callable[[int], QueryRow],
        *,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.run_names = run_names
        self.id_width = id_width
        self._row_of = row_of
        #: How many run columns fit beside ``TEXT_LEAST`` of the text (all, until sized).
        self.per_page = len(run_names)
        #: The first run of the page of run columns shown; None: run columns hidden.
        self.first_run: int | None = 0
        self._columns: list[_Column] = []
        self._runs_shown: list[int] = []
        self._lay_out(width=None)
        self._order: NDArray[np.int64] = np.zeros(0, np.int64)
        self._cursor = 0
        # Rows as last asked of the session, and their drawn lines, by query index;
        # dropped whenever what they show may have changed.
        self._rows: dict[int, QueryRow] = {}
        self._lines = {}
        self._size_table()

    # -- which runs have a column ------------------------------------------------------------

    @property
    def runs_shown(self) -> list[int]:
        """The runs with a column, by index into ``run_names``, left to right."""
        return list(self._runs_shown)

    def next_runs(self) -> None:
        """The next page of run columns; after the last, none (the text takes the row);
        then the first again. With every run on one page: all, none, all."""
        if not self.run_names:
            return
        if self.first_run is None:
            self.first_run = 0
        else:
            following = self.first_run + max(self.per_page, 1)
            self.first_run = following if following < len(self.run_names) else None
        self._relayout()

    def show_run(self, run: int) -> None:
        """The page of run columns that holds run ``run`` (a sort by its score)."""
        if self.per_page < 1 or run in self._runs_shown:
            return
        self.first_run = run // self.per_page * self.per_page
        self._relayout()

    def _relayout(self) -> None:
        self._lay_out(self.size.width or None)
        self._lines.clear()
        self._size_table()
        self.refresh()
        self.post_message(self.RunsShown())

    # -- what it shows -------------------------------------------------------------------

    def show(self, order: Sequence[int] | NDArray[np.int64], current: int | None = None) -> None:
        """These queries in this order; the cursor on ``current`` if it is among them
        (on the same line of the screen as before, so a re-sort does not lose the
        reader's place), else on the first."""
        line = self._cursor - round(self.scroll_y)
        self._order = np.asarray(order, dtype=np.int64)
        self._rows.clear()
        self._lines.clear()
        self._size_table()
        position = None if current is None else self.position(current)
        self._cursor = 0 if position is None else position
        if position is None:
            self.scroll_to(y=0, animate=False, immediate=True)
        else:
            self.scroll_to(y=max(position - max(line, 0), 0), animate=False, immediate=True)
            self._scroll_cursor_into_view()
        self.refresh()

    def update(self, row: QueryRow) -> None:
        """Show ``row`` anew (a grade changed its progress, holes or scores)."""
        position = self.position(row.index)
        if position is None:
            return
        self._rows[row.index] = row
        self.forget_lines(row.index)
        self.refresh_position(position)

    def position(self, query: int) -> int | None:
        """Where query ``query`` stands in the order, if it is there."""
        found = np.flatnonzero(self._order == query)
        return int(found[0]) if found.size else None

    @property
    def row_count(self) -> int:
        return int(self._order.size)

    @property
    def cursor_row(self) -> int:
        return self._cursor

    @property
    def current(self) -> int | None:
        """The query under the cursor."""
        if not self._order.size:
            return None
        return int(self._order[self._cursor])

    def row_at(self, position: int) -> QueryRow:
        """The row at ``position`` of the order, as the table shows it."""
        q = int(self._order[position])
        row = self._rows.get(q)
        if row is None:
            if len(self._rows) >= KEPT_ROWS:
                self._rows.clear()
            row = self._rows[q] = self._row_of(q)
        return row

    def cells(self, position: int) -> list[Text]:
        """The cells of the row at ``position``: id, progress, holes, one score per
        run shown, text."""
        row = self.row_at(position)
        scores = row.ra_nwg
        return [
            _plain(row.ext_id),
            _progress(row),
            _holes(row),
            *(
                _score(row, scores[run] if run < len(scores) else math.nan)
                for run in self._runs_shown
            ),
            _plain(row.text),
        ]

    # -- the cursor ------------------------------------------------------------------------

    def move_cursor(self, *, row: int, scroll: bool = True) -> None:
        """Put the cursor on the row at position ``row`` (clamped to the order)."""
        if not self._order.size:
            return
        target = min(max(row, 0), self._order.size - 1)
        if target != self._cursor:
            old, self._cursor = self._cursor, target
            self.refresh_position(old)
            self.refresh_position(target)
        if scroll:
            self._scroll_cursor_into_view()

    def _scroll_cursor_into_view(self) -> None:
        region = Region(round(self.scroll_x), self._cursor + 1, 1, 1)
        # The header line is fixed above the rows: a row under it is out of view.
        self.scroll_to_region(region, animate=False, spacing=Spacing(top=1), force=True)

    def action_select_cursor(self) -> None:
        query = self.current
        if query is not None:
            self.post_message(self.Opened(query))

    async def _on_click(self, event: events.Click) -> None:
        # As a DataTable: a click moves the cursor, a click on the cursor's row opens it.
        offset = event.get_content_offset(self)
        if offset is None or offset.y < 1:
            return
        position = offset.y - 1 + round(self.scroll_y)
        if position >= self.row_count:
            return
        event.stop()
        if position == self._cursor:
            self.action_select_cursor()
        else:
            self.move_cursor(row=position)

    # -- widths ----------------------------------------------------------------------------

    def on_resize(self, event: events.Resize) -> None:
        """Run names in full and the query text to the edge, as far as the width allows."""
        shown = self._runs_shown
        self._lay_out(event.size.width)
        self._lines.clear()
        self._size_table()
        if self._runs_shown != shown:
            self.post_message(self.RunsShown())
        # A lower table may hide the cursor's row: the reader's place stays in view.
        # After the refresh, once the scroll region is measured at the new size.
        self.call_after_refresh(self._scroll_cursor_into_view)
        self.refresh()

    def _lay_out(self, width: int | None) -> None:
        """The columns at ``width`` (None: not sized yet, every run at nine columns):
        the page of runs that leaves the text ``TEXT_LEAST`` columns, names cut to fit."""
        fixed = self.id_width + 8 + 5 + 3 * PAD
        count = len(self.run_names)
        if width is None:
            self.per_page = count
        else:
            room = width - SCROLLBAR - fixed - PAD - TEXT_LEAST
            self.per_page = min(count, max(room // (SCORE_WIDTH + PAD), 0))
        if self.first_run is not None:
            # Pages start at multiples of the page size, which the width changes.
            self.first_run = self.first_run // max(self.per_page, 1) * max(self.per_page, 1)
            start = self.first_run
            self._runs_shown = list(range(start, min(start + self.per_page, count)))
        else:
            self._runs_shown = []
        names = [self.run_names[run] for run in self._runs_shown]
        if width is None:
            runs, text = [9] * len(names), 200
        else:
            runs, text = fit_columns(width, fixed, names, floor=SCORE_WIDTH, want_text=TEXT_WANTED)
        self._columns = [
            _Column("query", self.id_width),
            _Column("progress", 8),
            _Column("holes", 5),
            *(_Column(label, w) for label, w in zip(short_runs(names, runs), runs, strict=True)),
            _Column("text", max(text, 10)),
        ]

    def _size_table(self) -> None:
        width = sum(column.width + PAD for column in self._columns)
        self.virtual_size = Size(width, self.row_count + 1)

    # -- drawing ---------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        scroll_x = round(self.scroll_x)
        if y == 0:
            line = self._header()
        else:
            position = y - 1 + round(self.scroll_y)
            if position >= self.row_count:
                return Strip.blank(width, self.base_style)
            line = self._row_line(position)
        return line.crop_extend(scroll_x, scroll_x + width, self.base_style)

    def _header(self) -> Strip:
        style = self.get_component_styles("datatable--header").rich_style
        return self._draw([Text(column.label) for column in self._columns], style, Style())

    def _row_line(self, position: int) -> Strip:
        q = int(self._order[position])
        cursor = position == self._cursor
        key = (q, position % 2, cursor, self.has_focus)
        line = self._lines.get(key)
        if line is None:
            stripe = "datatable--odd-row" if position % 2 else "datatable--even-row"
            style = self.get_component_styles(stripe).rich_style
            post = Style()
            if cursor:
                # The cursor's colours win over a cell's own (green progress, say).
                cursor_style = self.get_component_rich_style("datatable--cursor")
                style += cursor_style
                post = Style.from_color(cursor_style.color, cursor_style.bgcolor)
            if len(self._lines) >= KEPT_ROWS:
                self._lines.clear()
            line = self._lines[key] = self._draw(self.cells(position), style, post)
        return line

    def _draw(self, cells: list[Text], style: Style, post: Style) -> Strip:
        return self.draw_cells(cells, [column.width for column in self._columns], style, post)
