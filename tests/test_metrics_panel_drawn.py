"""The metrics panel's table drawn once per update: the same segments as drawing it
anew, and laid out again when the width changes."""

from __future__ import annotations

import io

from rich.console import Console, Group, RenderableType
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from raglabel.tui.widgets.metrics_panel import _DrawnOnce


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
