"""The live metrics of one query: every run at the current K, and its rarity weights."""

from __future__ import annotations

from collections.abc import Iterator

from rich.console import Console, ConsoleOptions, Group, RenderableType
from rich.measure import Measurement
from rich.segment import Segment
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from raglabel.session.live_metrics import QueryPanel
from raglabel.tui.widgets.format import number

_HEADERS = {
    "ra_nwg": "RA-nWG",
    "proc": "PROC",
    "pct_proc": "%PROC",
    "n_recall_4plus": "NR4+",
    "n_recall_5": "NR5",
    "harm": "Harm",
    "judged": "Judged",
}


def full_height(runs: int) -> int:
    """Lines the whole panel takes for this many runs: its table (a header and a row
    per run), grade counts, weights, a possible inversion warning and the border."""
    return (runs or 1) + 1 + 2 + 1 + 2


def one_line(panel: QueryPanel, key: str) -> Text:
    """The panel folded into one line: each run's RA-nWG, and how to see the rest."""
    out = Text(f"{key}", style="bold reverse")
    out.append(" all metrics · ", style="dim")
    out.append(f"RA-nWG@{panel.k} ", style="bold")
    if not panel.values:
        out.append("no runs in this project", style="dim")
    for i, (run, values) in enumerate(panel.values.items()):
        out.append(("  " if i else "") + f"{run} ")
        out.append(number(values["ra_nwg"], 2), style="bold")
    if panel.inverted:
        out.append("  ⚠ inversion", style="bold red")
    out.no_wrap = True
    out.overflow = "ellipsis"
    return out


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
            self.show(self._panel)

    def show(self, panel: QueryPanel) -> None:
        self._panel = panel
        if self.compact:
            self.update(one_line(panel, self.toggle_key))
            return
        table = Table(box=None, pad_edge=False, header_style="bold", expand=True)
        table.add_column(f"@{panel.k}", no_wrap=True)
        for name in _HEADERS.values():
            table.add_column(name, justify="right", no_wrap=True)
        for run, values in panel.values.items():
            table.add_row(run, *(number(values[key], 2) for key in _HEADERS))
        counts = Text("grades ", style="bold")
        for g in (5, 4, 3, 2, 1):
            counts.append(f"{g}:{panel.counts[g]} ")
        weights = Text("weights ", style="bold")
        for g in (5, 4, 3, 2, 1):
            weights.append(f"w{g}={panel.weights[g]:.3g} ")
        parts: list[Table | Text] = [table, counts, weights]
        if panel.inverted:
            parts.append(
                Text("⚠ grade inversion: a lower grade outweighs a higher one", "bold red")
            )
        if not panel.values:
            parts.insert(0, Text("No runs in this project.", style="dim"))
        self.update(_DrawnOnce(Group(*parts)))
