"""The live metrics of one query: every run at the current K, and its rarity weights."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from raglabel.metrics.definitions import display_name
from raglabel.metrics.names import MetricKey
from raglabel.metrics.table import metric
from raglabel.session.live_metrics import PANEL_METRICS, QueryPanel
from raglabel.tui.widgets.format import number
from raglabel.tui.widgets.in_place import update_in_place


def _rich_share() -> Callable[[int, list[int]], list[int]] | None:
    """Rich's own share-out of a table's spare width, which is private to Rich: should
    a release move it, the panel's table is drawn by Rich itself (as any table that is
    not plain is)."""
    try:
        from rich._ratio import ratio_distribute
    except ImportError:  # pragma: no cover - depends on the installed Rich
        return None
    return ratio_distribute


_share = _rich_share()

#: Each of the panel's metrics with the name it is headed by: the table's short name,
#: as the panel is a narrow column beside the passage.
_HEADERS = {name: metric(name).short for name in PANEL_METRICS}


def full_height(runs: int) -> int:
    """Lines the whole panel takes for this many runs: its table (a header and a row
    per run), grade counts, weights, a possible inversion warning and the border."""
    return (runs or 1) + 1 + 2 + 1 + 2


class Folded:
    """The panel folded into one line, fitted to the width it is drawn at: each run's
    RA-nWG and how to see the rest. Runs that do not fit whole are counted (``+2
    more``), never cut after their name with the value gone."""

    def __init__(self, panel: QueryPanel, key: str) -> None:
        self.head = Text(key, style="bold reverse")
        self.head.append(" all metrics · ", style="dim")
        self.head.append(f"{display_name(MetricKey('ra_nwg', panel.k))} ", style="bold")
        if not panel.values:
            self.head.append("no runs in this project", style="dim")
        self.runs = []
        for run, values in panel.values.items():
            pair = Text(f"{run} ")
            pair.append(number(values["ra_nwg"], 2), style="bold")
            self.runs.append(pair)
        self.tail = Text("  ⚠ inversion", style="bold red") if panel.inverted else Text()

    def line(self, width: int) -> Text:
        if width <= 0:
            return Text()
        out = self.head.copy()
        for i, pair in enumerate(self.runs):
            gap = "  " if i else ""
            after = len(self.runs) - i - 1
            # Room for this run, the count of those after it, and the warning.
            need = len(gap) + pair.cell_len + (len(f"  +{after} more") if after else 0)
            if out.cell_len + need + self.tail.cell_len > width:
                out.append(f"{gap}+{len(self.runs) - i} more", style="dim")
                break
            out.append(gap)
            out.append_text(pair)
        out.append_text(self.tail)
        out.truncate(width, overflow="ellipsis")
        out.no_wrap = True
        return out

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.line(options.max_width)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(1, self.line(10**6).cell_len)


class _DrawnOnce:
    """A renderable drawn once per set of console options and replayed after.

    Textual draws a ``height: auto`` widget's content twice for each update, once to
    measure its height and once for its lines, and laying out the Rich table takes
    about 10 ms a time: a tenth of opening a query, and of the update after a grade."""

    def __init__(self, renderable: RenderableType) -> None:
        self._renderable = renderable
        self._key: tuple[object, ...] | None = None
        self._segments: list[Segment] = []

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        # Every option the table, its cells or the texts read; the height is not one
        # (the table lays its cells out with none), so measuring and drawing share it.
        key = (
            id(console),
            options.max_width,
            options.min_width,
            options.justify,
            options.overflow,
            options.no_wrap,
            options.highlight,
            options.markup,
            options.ascii_only,
            options.legacy_windows,
            options.encoding,
        )
        if key != self._key:
            self._segments = list(console.render(self._renderable, options))
            self._key = key
        yield from self._segments

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self._renderable)


def _plain(cell: str) -> bool:
    """Whether ``cell`` is drawn as its own characters, one cell each, whatever the
    console: no markup, emoji code, escape, control or wide character in it."""
    return cell.isascii() and cell.isprintable() and not any(c in cell for c in "[]:\\")


class _MetricsTable:
    """The metrics table as Rich draws it (``table``: no box, padding 1 between columns,
    expanded to the width), its lines written out directly when every cell is plain and
    the columns fit: Rich measured and drew each of its cells through a console, 6 ms
    of each open and each grade. Anything else is drawn by the table itself."""

    def __init__(self, table: Table, header: list[str], rows: list[list[str]]) -> None:
        self.table = table
        self._header = header
        self._rows = rows
        self._plain = all(_plain(cell) for row in [header, *rows] for cell in row)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        widths = self._widths(options.max_width) if self._plain else None
        if widths is None:
            yield self.table
            return
        last = len(widths) - 1
        header_style = console.get_style("bold")  # the table's header_style
        for index, row in enumerate([self._header, *self._rows]):
            parts = []
            for column, (cell, width) in enumerate(zip(row, widths, strict=True)):
                left = 0 if column == 0 else 1  # pad_edge=False: no pad at the edges
                right = 0 if column == last else 1
                room = width - left - right
                text = cell.ljust(room) if column == 0 else cell.rjust(room)
                parts.append(" " * left + text + " " * right)
            yield Segment("".join(parts), header_style if index == 0 else None)
            yield Segment.line()

    def _widths(self, max_width: int) -> list[int] | None:
        """Each column's width with its padding, as ``Table`` works them out when the
        columns fit (``_calculate_column_widths``); None when they do not (then Rich
        shrinks and crops them)."""
        last = len(self._header) - 1
        widths = [
            max(len(row[column]) for row in [self._header, *self._rows])
            + (column != 0)
            + (column != last)
            or 1
            for column in range(last + 1)
        ]
        total = sum(widths)
        if total > max_width or _share is None:
            return None
        if total < max_width:  # expand=True: the rest shared out as Rich shares it
            widths = [
                width + pad
                for width, pad in zip(widths, _share(max_width - total, widths), strict=True)
            ]
        return widths

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.table)


class MetricsPanel(Static):
    """The live metrics; compact, it is one line, so a short terminal keeps the passage."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.compact = False
        self.toggle_key = "m"
        self._panel: QueryPanel | None = None

    def set_compact(self, compact: bool) -> None:
        if compact == self.compact and self.has_class("-compact") == compact:
            return
        self.compact = compact
        self.set_class(compact, "-compact")
        if self._panel is not None:
            self.show(self._panel, again=True)

    def show(self, panel: QueryPanel, *, again: bool = False) -> None:
        """Draw ``panel``. One equal to the panel shown (a skip, a flag, a grade that moves
        no figure) is left as it is, sparing a redraw, unless ``again`` (the shape changed)."""
        if panel == self._panel and not again:
            return
        self._panel = panel
        if self.compact:
            update_in_place(self, Folded(panel, self.toggle_key))
            return
        header = [f"@{panel.k}", *_HEADERS.values()]
        rows = [
            [run, *(number(values[key], 2) for key in _HEADERS)]
            for run, values in panel.values.items()
        ]
        table = Table(box=None, pad_edge=False, header_style="bold", expand=True)
        table.add_column(header[0], no_wrap=True)
        for name in header[1:]:
            table.add_column(name, justify="right", no_wrap=True)
        for row in rows:
            table.add_row(*row)
        counts = Text("grades ", style="bold")
        for g in (5, 4, 3, 2, 1):
            counts.append(f"{g}:{panel.counts[g]} ")
        weights = Text("weights ", style="bold")
        for g in (5, 4, 3, 2, 1):
            weights.append(f"w{g}={panel.weights[g]:.3g} ")
        parts: list[_MetricsTable | Text] = [_MetricsTable(table, header, rows), counts, weights]
        if panel.inverted:
            parts.append(
                Text("⚠ grade inversion: a lower grade outweighs a higher one", "bold red")
            )
        if not panel.values:
            parts.insert(0, Text("No runs in this project.", style="dim"))
        update_in_place(self, _DrawnOnce(Group(*parts)))
