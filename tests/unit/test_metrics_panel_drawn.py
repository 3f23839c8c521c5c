"""The metrics panel's table drawn once per update: the same segments as drawing it
anew, and laid out again when the width changes."""

from __future__ import annotations

import io
import math

import pytest
from examples import thinned
from rich.console import Console, Group, RenderableType
from rich.segment import Segment
from rich.style import Style
from rich.table import Table
from rich.text import Text

from raglabel.session.live_metrics import QueryPanel
from raglabel.tui.widgets.metrics_panel import (
    _HEADERS,
    Folded,
    MetricsPanel,
    _DrawnOnce,
    _MetricsTable,
)


def _group() -> Group:
    table = Table(box=None, pad_edge=False, header_style="bold", expand=True)
    table.add_column("@10", no_wrap=True)
    for name in ("RA-nWG", "PROC", "Judged"):
        table.add_column(name, justify="right", no_wrap=True)
    for run in ("bm25", "a-much-longer-run-name"):
        table.add_row(run, "0.51", "0.25", "100%")
    return Group(table, Text("grades 5:1 4:2 3:0 2:7 1:3 "), Text("weights w5=1 w4=0.5 "))


def _drawn(console: Console, renderable: RenderableType, width: int) -> list[Segment]:
    return list(console.render(renderable, console.options.update_width(width)))


def test_drawn_once_matches_a_fresh_draw_at_every_width() -> None:
    console = Console(file=io.StringIO(), width=200)
    once = _DrawnOnce(_group())
    for width in (120, 120, 60, 25, 120):
        assert _drawn(console, once, width) == _drawn(console, _group(), width)


def test_a_second_draw_at_the_same_width_replays_the_first() -> None:
    console = Console(file=io.StringIO(), width=200)
    group = _group()
    once = _DrawnOnce(group)
    first = _drawn(console, once, 90)
    group.renderables.append(Text("drawn only if laid out again"))
    assert _drawn(console, once, 90) == first
    assert "laid out again" in "".join(s.text for s in _drawn(console, once, 91))


# -- the table written out directly -------------------------------------------------------


def _cells(console: Console, renderable: RenderableType, width: int) -> list[list[tuple]]:
    """Each line's characters with their style, as a terminal shows them: how the
    segments are split, and a missing style for a null one, make no difference."""
    options = console.options.update_width(width)
    lines = console.render_lines(renderable, options, pad=False)
    return [
        [(char, segment.style or Style()) for segment in line for char in segment.text]
        for line in lines
    ]


def _panel(runs: dict[str, float], k: int, inverted: bool = False) -> QueryPanel:
    values = {
        run: {key: value * (i + 1) / 7 for i, key in enumerate(_HEADERS)}
        for run, value in runs.items()
    }
    return QueryPanel(k, values, (0, 3, 0, 12, 1, 40), (0, 1.0, 0.5, 0.25, 0.1, 0.01), inverted)


PANELS = [
    _panel({"bm25": 0.5, "dense": math.nan, "a-much-longer-run-name": 1.0}, 10),
    _panel({"r": 0.0}, 5, inverted=True),
    _panel({f"run0{i}": 0.1 * i for i in range(1, 6)}, 100),
    _panel({}, 20),  # no runs: the header only
    _panel({"odd[bold]name": 0.3, "x": 0.2}, 10),  # markup: drawn by Rich
    _panel({"emoji:smile:": 0.3, "wide名前": 0.2}, 10),  # emoji code, a wide character
]


def _handed(panel: QueryPanel) -> tuple[_DrawnOnce, Group, _MetricsTable]:
    """What the panel is handed for ``panel``: its content, the group in it, and the
    table in that."""
    shown: list[object] = []

    class Panel(MetricsPanel):
        def update(self, content: object = "", **_: object) -> None:
            shown.append(content)

    Panel().show(panel)
    drawn = shown[-1]
    assert isinstance(drawn, _DrawnOnce)
    group = drawn._renderable
    assert isinstance(group, Group)
    table = next(part for part in group.renderables if isinstance(part, _MetricsTable))
    return drawn, group, table


@pytest.mark.parametrize("panel", PANELS)
def test_the_table_written_out_is_what_rich_draws(panel: QueryPanel) -> None:
    # Textual's console (markup on, no highlighting or emoji) and Rich's default one.
    consoles = [
        Console(file=io.StringIO(), width=300, markup=True, highlight=False, emoji=False),
        Console(file=io.StringIO(), width=300),
    ]
    drawn, group, fast = _handed(panel)
    by_rich = Group(*[fast.table if part is fast else part for part in group.renderables])
    for console in consoles:
        for width in thinned((*range(1, 120, 3), 160, 240)):
            assert _cells(console, fast, width) == _cells(console, fast.table, width), width
            assert _cells(console, drawn, width) == _cells(console, by_rich, width), width


def test_plain_cells_are_written_out_and_others_left_to_rich() -> None:
    assert [_handed(panel)[2]._plain for panel in PANELS] == [True, True, True, True, False, False]


@pytest.mark.parametrize("inverted", [False, True])
def test_the_folded_line_counts_the_runs_it_has_no_room_for(inverted: bool) -> None:
    runs = ("bm25", "dense", "dense_rerank", "hybrid", "grounded", "embellished")
    panel = QueryPanel(
        k=10,
        values={run: {"ra_nwg": i / 10} for i, run in enumerate(runs)},
        counts=(0, 1, 1, 1, 1, 1),
        weights=(0, 0, 0, 0.1, 0.5, 1.0),
        inverted=inverted,
    )
    folded = Folded(panel, "m")
    whole = folded.line(1000).plain
    assert whole.startswith("m all metrics · RA-nWG@10 bm25 0.00  dense 0.10")
    assert "more" not in whole and whole.endswith("⚠ inversion" if inverted else "0.50")
    assert folded.line(0).plain == ""
    for width in range(1, len(whole)):
        line = folded.line(width).plain
        assert len(line) <= width, (width, line)
        tail = "  ⚠ inversion" if inverted else ""
        if width < len("m all metrics · RA-nWG@10 +6 more" + tail):
            assert line.endswith("…"), (width, line)  # not even a count fits: cut
            continue
        shown = [run for run in runs if f" {run} 0." in line]
        assert shown == list(runs[: len(shown)])
        count = f" +{len(runs) - len(shown)} more"
        assert line.endswith(count + tail), (width, line)
