"""Column widths that use the width a table has: full run names and whole titles when
they fit, narrower run columns (never narrower than their numbers) when they do not."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import DataTable

from raglabel.tui.widgets.format import short_run

#: Cells are padded by one column on each side (DataTable's cell_padding).
PAD = 2
#: Room kept for the vertical scrollbar.
SCROLLBAR = 2


def fit_columns(
    total: int, fixed: int, names: list[str], *, floor: int, want_text: int
) -> tuple[list[int], int]:
    """Widths of the run columns and of the text column that takes what is left.

    ``total`` is the table's width, ``fixed`` the width the other columns take with
    their padding. Run columns get their name's full width when the text column still
    gets ``want_text``; otherwise they shrink evenly, down to ``floor``.
    """
    full = [max(floor, len(name)) for name in names]
    usable = total - SCROLLBAR - fixed - PAD
    room = usable - sum(w + PAD for w in full)
    if room >= want_text or not names:
        return full, max(room, 0)
    each = max(floor, (usable - want_text) // len(names) - PAD)
    widths = [min(w, each) for w in full]
    return widths, max(usable - sum(w + PAD for w in widths), 0)


def set_widths(table: DataTable[Any], widths: dict[str, tuple[int, str | None]]) -> bool:
    """Give existing columns new widths (and labels); True if anything changed."""
    changed = False
    for key, (width, name) in widths.items():
        column = table.columns.get(key)  # type: ignore[call-overload]
        if column is None:
            continue
        label = None if name is None else Text(short_run(name, width))
        if column.width != width or (label is not None and column.label != label):
            column.width = width
            if label is not None:
                column.label = label
            changed = True
    if changed:
        # DataTable recomputes its size and redraws from its columns' widths.
        table._require_update_dimensions = True
        table._clear_caches()
        table.refresh()
    return changed
