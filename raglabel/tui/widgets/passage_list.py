"""The candidate passages of one query: grade, suggestion, each run's rank, id.

Drawn line by line (Textual's Line API), as the Queries table is: a DataTable measured
and drew every cell of every row through a console each time a query was opened, a
tenth of a second and more of every open. This one lays out the rows on screen as it
draws them and keeps their lines until a row changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size, Spacing
from textual.message import Message
from textual.strip import Strip

from raglabel.session.grading import PassageRow
from raglabel.tui.widgets.columns import PAD, SCROLLBAR, fit_columns
from raglabel.tui.widgets.format import GRADE_STYLES, one_line, short_runs
from raglabel.tui.widgets.line_table import LineTable

#: A rank column is never narrower than this ("rank" of three digits and a margin).
RANK_WIDTH = 4
#: The passage column keeps this much (id and the start of the title) before run
#: names are shortened.
PASSAGE_WANTED = 44
#: The grade and judge columns' width.
MARK_WIDTH = 5


def _grade_cell(row: PassageRow) -> Text:
    if row.grade is not None:
        mark = "" if row.own is None or row.own == row.grade else f"({row.own})"
        return Text(f"{row.grade}{mark}", style=GRADE_STYLES[row.grade])
    if row.skipped:
        return Text("skip", style="dim italic")
    return Text("·", style="dim")


def _suggestion_cell(row: PassageRow) -> Text:
    s = row.suggestion
    if s is None:
        return Text("")
    spread = "" if s.low == s.high else f" {s.low}-{s.high}"
    # Italic and dim on purpose: a suggestion must never be mistaken for a grade.
    cell = Text(f"~{s.grade}{spread}", style="italic #8a8aff")
    if s.flagged:
        cell.append("!", style="bold red")
    return cell


def _passage_cell(row: PassageRow) -> Text:
    # Ids and titles are data: a newline or a tab in one must not reach the terminal.
    text = Text(one_line(row.ext_id), style="bold")
    if row.flagged:
        text.append(" ⚑", style="red")
    if row.skipped and row.grade is not None:
        text.append(" skipped", style="dim italic")
    if row.title:
        text.append(f"  {one_line(row.title)}", style="dim")
    return text


@dataclass(frozen=True)
class _Layout:
    judge: bool  # a judge column (only for a query the judge has seen)
    runs: tuple[int, ...]  # each run's width
    passage: int  # the passage column's width

    def widths(self) -> list[int]:
        return [MARK_WIDTH, *([MARK_WIDTH] if self.judge else []), *self.runs, self.passage]


class PassageList(LineTable):
    """The rows of one query's passages by pid; the row under the cursor is the passage
    being graded."""

    # A DataTable's moving keys (the Grade screen's own, remappable, come after them).
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor_up", "cursor up", show=False),
        Binding("down", "cursor_down", "cursor down", show=False),
        Binding("left", "scroll_left", "scroll left", show=False),
        Binding("right", "scroll_right", "scroll right", show=False),
        Binding("pageup", "page_up", "page up", show=False),
        Binding("pagedown", "page_down", "page down", show=False),
        Binding("ctrl+home", "first", "first passage", show=False),
        Binding("ctrl+end", "last", "last passage", show=False),
        Binding("home", "scroll_home", "left edge", show=False),
        Binding("end", "scroll_end", "right edge", show=False),
    ]

    class Focused(Message):
        def __init__(self, pid: int) -> None:
            self.pid = pid
            super().__init__()

    def __init__(self, run_names: list[str], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.run_names = run_names
        self._rows: dict[int, PassageRow] = {}
        self._order: list[int] = []  # pids, as listed
        self._position: dict[int, int] = {}  # pid -> its place in ``_order``
        self._cursor = 0
        self._layout: _Layout | None = None
        self._labels: list[str] = []
        # Drawn lines by (pid, odd row, under the cursor, focused): dropped whenever
        # what they show may have changed.
        self._lines = {}
        # A row's styles (under its cells, over them) by (odd row, under the cursor,
        # focused): looked up once, not for every row drawn.
        self._styles: dict[tuple[bool, bool, bool], tuple[Style, Style]] = {}
        self._scroll_waits = False  # a scroll to the cursor waits for a height

    # -- columns -------------------------------------------------------------------------

    #: Whole titles come before whole run names: set beside the passage on a wide
    #: screen, where the metrics panel next to the list names every run in full.
    whole_titles = False

    def _fixed_and_longest(self) -> tuple[bool, int, int]:
        """Whether there is a judge column, the width the grade (and judge) columns
        take with their padding, and the longest passage cell of the rows."""
        judge = any(row.suggestion is not None for row in self._rows.values())
        fixed = (MARK_WIDTH + PAD) + ((MARK_WIDTH + PAD) if judge else 0)
        longest = max((len(_passage_cell(row)) for row in self._rows.values()), default=20)
        return judge, fixed, longest

    def wanted_width(self) -> int:
        """The width that shows every run name and every passage cell of the rows whole,
        the scrollbar's room included."""
        _, fixed, longest = self._fixed_and_longest()
        runs = sum(max(RANK_WIDTH, len(name)) + PAD for name in self.run_names)
        return SCROLLBAR + fixed + runs + longest + PAD

    def set_whole_titles(self, whole: bool) -> None:
        if whole != self.whole_titles:
            self.whole_titles = whole
            if self._layout is not None:
                self._use(self._layout_for(self.size.width or 80))
                self.refresh()

    def _layout_for(self, width: int) -> _Layout:
        judge, fixed, longest = self._fixed_and_longest()
        runs, passage = fit_columns(
            width,
            fixed,
            self.run_names,
            floor=RANK_WIDTH,
            want_text=longest if self.whole_titles else min(longest, PASSAGE_WANTED),
        )
        return _Layout(judge, tuple(runs), max(passage, 20))

    def _use(self, layout: _Layout) -> None:
        self._layout = layout
        self._labels = [
            "grade",
            *(["judge"] if layout.judge else []),
            *short_runs(self.run_names, layout.runs),
            "passage",
        ]
        self._lines.clear()
        self._size_list()

    def _size_list(self) -> None:
        width = sum(w + PAD for w in self._layout.widths()) if self._layout else 0
        self.virtual_size = Size(width, len(self._order) + 1)

    def on_resize(self, event: events.Resize) -> None:
        layout = self._layout_for(event.size.width)
        if layout != self._layout:
            self._use(layout)
        self._lines.clear()  # the fill to the edge follows the width
        self.refresh()
        if self._order:
            # A kept Grade screen is filled while off the stack, at the size it had then;
            # resized meanwhile (or now), the cursor must still be in view.
            self._scroll_cursor_into_view()

    # -- what it shows -------------------------------------------------------------------

    def show(self, rows: list[PassageRow], current: int | None = None) -> None:
        """These rows, the cursor on ``current`` (else on the first), from the top."""
        self._rows = {row.pid: row for row in rows}
        self._order = [row.pid for row in rows]
        self._position = {pid: i for i, pid in enumerate(self._order)}
        layout = self._layout_for(self.size.width or 80)
        if layout != self._layout:
            self._use(layout)
        self._lines.clear()
        self._size_list()
        self._cursor = 0
        self.scroll_to(0, 0, animate=False, immediate=True)
        self.refresh()
        if current is not None:
            self.select(current)
        elif self._order:
            self.post_message(self.Focused(self._order[0]))

    def update(self, row: PassageRow) -> None:
        """Show ``row`` anew (its grade or marks changed)."""
        self._rows[row.pid] = row
        if row.pid not in self._position:
            return
        if row.suggestion is not None and not (self._layout and self._layout.judge):
            self.show([self._rows[pid] for pid in self._order], self.current)
            return
        self.forget_lines(row.pid)
        self.refresh_position(self._position[row.pid])

    def select(self, pid: int) -> None:
        """The cursor on passage ``pid`` (nothing happens if it is not listed)."""
        position = self._position.get(pid)
        if position is not None:
            self.move_cursor(row=position)

    @property
    def order(self) -> list[int]:
        """The listed pids, top to bottom."""
        return list(self._order)

    @property
    def row_count(self) -> int:
        return len(self._order)

    @property
    def cursor_row(self) -> int:
        return self._cursor

    @property
    def current(self) -> int | None:
        """The passage under the cursor."""
        return self._order[self._cursor] if self._order else None

    def cells(self, pid: int) -> list[Text]:
        """Passage ``pid``'s cells as shown: grade, judge (when shown), ranks, passage
        (cut to its column with an ellipsis, so a cut title does not read as whole)."""
        row = self._rows[pid]
        ranks = [Text(str(r) if r is not None else "", justify="right") for r in row.ranks]
        judge = [_suggestion_cell(row)] if self._layout and self._layout.judge else []
        passage = _passage_cell(row)
        if self._layout is not None and passage.cell_len > self._layout.passage:
            passage.truncate(self._layout.passage, overflow="ellipsis")
        return [_grade_cell(row), *judge, *ranks, passage]

    # -- the cursor ----------------------------------------------------------------------

    def move_cursor(self, *, row: int) -> None:
        """The cursor on the row at position ``row`` (clamped), in view; the screen hears
        which passage it is on."""
        if not self._order:
            return
        target = min(max(row, 0), len(self._order) - 1)
        if target != self._cursor:
            old, self._cursor = self._cursor, target
            self.refresh_position(old)
            self.refresh_position(target)
        self._scroll_cursor_into_view()
        self.post_message(self.Focused(self._order[target]))

    def _scroll_cursor_into_view(self) -> None:
        if not self.size.height:
            # Not laid out yet (a screen filled as it mounts), or squeezed to nothing: in
            # view once it has a height (``on_resize``), one wait however many keys came.
            if not self._scroll_waits:
                self._scroll_waits = True
                self.call_after_refresh(self._scroll_when_laid_out)
            return
        region = Region(round(self.scroll_x), self._cursor + 1, 1, 1)
        # The header line is fixed above the rows: a row under it is out of view.
        self.scroll_to_region(region, animate=False, spacing=Spacing(top=1), force=True)

    def _scroll_when_laid_out(self) -> None:
        self._scroll_waits = False
        if self.size.height and self._order:
            self._scroll_cursor_into_view()

    async def _on_click(self, event: events.Click) -> None:
        # As a DataTable: a click on a row puts the cursor there.
        offset = event.get_content_offset(self)
        if offset is None or offset.y < 1:
            return
        position = offset.y - 1 + round(self.scroll_y)
        if position < len(self._order):
            event.stop()
            self.move_cursor(row=position)

    # -- drawing -------------------------------------------------------------------------

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles.clear()

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        scroll_x = round(self.scroll_x)
        if self._layout is None:
            return Strip.blank(width, self.base_style)
        if y == 0:
            line = self._header()
        else:
            position = y - 1 + round(self.scroll_y)
            if position >= len(self._order):
                return Strip.blank(width, self.base_style)
            line = self._row_line(position)
        return line.crop_extend(scroll_x, scroll_x + width, self.base_style)

    def _header(self) -> Strip:
        style = self.get_component_styles("datatable--header").rich_style
        return self._draw([Text(label) for label in self._labels], style, Style())

    def _row_line(self, position: int) -> Strip:
        pid = self._order[position]
        cursor = position == self._cursor
        key = (pid, bool(position % 2), cursor, self.has_focus)
        line = self._lines.get(key)
        if line is None:
            style, post = self._row_styles(key[1], cursor, key[3])
            line = self._lines[key] = self._draw(self.cells(pid), style, post)
        return line

    def _row_styles(self, odd: bool, cursor: bool, focused: bool) -> tuple[Style, Style]:
        found = self._styles.get((odd, cursor, focused))
        if found is None:
            stripe = "datatable--odd-row" if odd else "datatable--even-row"
            style = self.get_component_styles(stripe).rich_style
            post = Style()
            if cursor:
                # The cursor's colours win over a cell's own (a grade's colour, say).
                cursor_style = self.get_component_rich_style("datatable--cursor")
                style += cursor_style
                post = Style.from_color(cursor_style.color, cursor_style.bgcolor)
            found = self._styles[(odd, cursor, focused)] = (style, post)
        return found

    def _draw(self, cells: list[Text], style: Style, post: Style) -> Strip:
        assert self._layout is not None
        return self.draw_cells(cells, self._layout.widths(), style, post)
