"""Column widths that use the width a table has: full run names and whole titles when
they fit, narrower run columns (never narrower than their numbers) when they do not."""

from __future__ import annotations

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
