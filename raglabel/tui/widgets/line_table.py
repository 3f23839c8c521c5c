"""What the Queries table and the passage list share: a ScrollView that draws its own
lines (only the rows on screen, each a Strip), with a DataTable's look and a DataTable's
way of padding, cropping and styling a cell, without its console pass per cell."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import ClassVar

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Region
from textual.scroll_view import ScrollView
from textual.strip import Strip

from raglabel.tui.widgets.columns import PAD

#: What lays a cell's text out in segments (styles by name): the table's own, as a
#: widget is handed its data and never reaches for the app.
_CELLS = Console(
    file=io.StringIO(),
    force_terminal=True,
    color_system="truecolor",
    legacy_windows=False,
    markup=False,
    emoji=False,
    highlight=False,
)


class LineTable(ScrollView, can_focus=True):
    """A table drawn line by line; subclasses say what the rows and columns are."""

    # DataTable's look, so the screens read as they did: header, zebra stripes, cursor.
    DEFAULT_CSS = """
    LineTable {
        background: $surface;
        color: $foreground;
        height: auto;
        max-height: 100%;

        &:focus {
            background-tint: $foreground 5%;
            & > .datatable--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .datatable--header {
                background-tint: $foreground 5%;
            }
        }
        &:dark {
            & > .datatable--even-row {
                background: $surface-darken-1 40%;
            }
        }
        & > .datatable--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        &:ansi > .datatable--header {
            background: ansi_bright_blue;
            color: ansi_default;
        }
        & > .datatable--odd-row {
        }
        & > .datatable--even-row {
            background: $surface-lighten-1 50%;
        }
        & > .datatable--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "datatable--cursor",
        "datatable--header",
        "datatable--odd-row",
        "datatable--even-row",
    }

    # What a subclass keeps: the cursor's row, how many rows there are, and how the
    # cursor moves (in view, telling the screen what it is on); and its drawn lines,
    # keyed by what they show, the row's own id first.
    _cursor: int
    _lines: dict[tuple[int, ...], Strip]

    @property
    def row_count(self) -> int:
        raise NotImplementedError

    def move_cursor(self, *, row: int) -> None:
        raise NotImplementedError

    def _page(self) -> int:
        return max(self.scrollable_content_region.height - 1, 1)

    def action_cursor_up(self) -> None:
        self.move_cursor(row=self._cursor - 1)

    def action_cursor_down(self) -> None:
        self.move_cursor(row=self._cursor + 1)

    def action_page_down(self) -> None:
        self.scroll_relative(y=self._page(), animate=False, force=True, immediate=True)
        self.move_cursor(row=self._cursor + self._page())

    def action_page_up(self) -> None:
        self.scroll_relative(y=-self._page(), animate=False, force=True, immediate=True)
        self.move_cursor(row=self._cursor - self._page())

    def action_first(self) -> None:
        self.move_cursor(row=0)

    def action_last(self) -> None:
        self.move_cursor(row=self.row_count - 1)

    def action_scroll_home(self) -> None:
        self.scroll_to(x=0, animate=False)

    def action_scroll_end(self) -> None:
        self.scroll_to(x=self.max_scroll_x, animate=False)

    #: The widget's own style while its lines are drawn (``render_lines``), else None.
    _pass_style: Style | None = None

    def render_lines(self, crop: Region) -> list[Strip]:
        # ``rich_style`` walks every ancestor and blends their colours: a screenful of
        # lines asked for it once a line, a fifth of the passage list's first paint.
        self._pass_style = self.rich_style
        try:
            return super().render_lines(crop)
        finally:
            self._pass_style = None

    @property
    def base_style(self) -> Style:
        """The widget's own style, under every line: the same ``rich_style`` gives."""
        return self.rich_style if self._pass_style is None else self._pass_style

    def notify_style_update(self) -> None:
        # Focus, theme and dark mode change the component styles the lines were drawn in.
        super().notify_style_update()
        self._lines.clear()

    def forget_lines(self, row: int) -> None:
        """Drop the drawn lines of the row whose id is ``row``."""
        for key in [key for key in self._lines if key[0] == row]:
            del self._lines[key]

    def refresh_position(self, position: int) -> None:
        """Draw again the line of the row at ``position``, if it is on screen."""
        y = position + 1 - round(self.scroll_y)
        if 1 <= y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    def draw_cells(
        self, cells: Sequence[Text], widths: Sequence[int], style: Style, post: Style
    ) -> Strip:
        """One line of cells, each padded to its column, then ``style`` to the edge."""
        segments: list[Segment] = []
        for cell, width in zip(cells, widths, strict=True):
            segments += cell_segments(cell, width, style, post)
        table_width = sum(w + PAD for w in widths)
        edge = max(self.size.width, table_width) - table_width
        segments.append(Segment(" " * edge, style))
        return Strip(segments).simplify()


#: Drawn cells of one piece (a grade, a rank, a count), by what they are drawn from:
#: the same few hundred recur on every row and every screenful.
_PLAIN_CELLS: dict[tuple[object, ...], list[Segment]] = {}
#: Beyond this many the cache starts again (the Queries table's counts, say, vary more).
_PLAIN_CELLS_MAX = 4096


def cell_segments(cell: Text, width: int, style: Style, post: Style) -> list[Segment]:
    """A cell's segments: its text cropped or filled to ``width`` (as it is justified),
    a space either side, in ``style`` under the text's own styles and ``post`` over
    them.

    What a DataTable draws through a console for each cell (padding, cropping and
    styling renderables), a few times faster: a screenful after each sort was a
    quarter of a second of a big project's keys.
    """
    if cell.spans:
        return _cell_segments(cell, width, style, post)
    # Segments are immutable, so one list serves every row (callers copy it in).
    key = (cell.plain, cell.style, cell.justify, width, style, post)
    found = _PLAIN_CELLS.get(key)
    if found is None:
        if len(_PLAIN_CELLS) >= _PLAIN_CELLS_MAX:
            _PLAIN_CELLS.clear()
        found = _PLAIN_CELLS[key] = _cell_segments(cell, width, style, post)
    return found


def _cell_segments(cell: Text, width: int, style: Style, post: Style) -> list[Segment]:
    text = cell
    if cell.cell_len > width:
        text = cell.copy()
        # A cut text ends in "…", so a query or passage cut at its column is never read
        # as the whole of it.
        text.truncate(width, overflow="ellipsis")
    base = style + _CELLS.get_style(cell.style) if cell.style else style
    if not text.spans:  # a rank, a grade: one piece, without laying out any spans
        body = [Segment(text.plain, base + post)] if text.plain else []
    else:
        body = [
            Segment(piece.text, (base + piece.style if piece.style else base) + post)
            for piece in text.render(_CELLS)
            if piece.text
        ]
    pad = Segment(" " * (PAD // 2), style + post)
    room = width - text.cell_len
    if room <= 0:
        return [pad, *body, pad]
    fill = Segment(" " * room, style + post)
    if cell.justify == "right":
        return [pad, fill, *body, pad]
    return [pad, *body, fill, pad]
