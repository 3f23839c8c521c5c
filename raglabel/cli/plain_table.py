"""Text tables drawn like rich's ``SIMPLE_HEAVY`` box, without importing rich.

``raglabel eval`` prints its tables through here: importing and warming up rich costs
more than the whole evaluation of a 100k-line run. :func:`draw` gives exactly the
characters rich would print to a file, or None when rich would do something this module
does not (wrap a cell, read markup or an emoji code, measure a wide character), and the
caller then asks rich. tests/test_plain_table.py holds the two to the same output.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

# What rich reads in a cell instead of printing it: a markup tag, an emoji code, an
# escape. Such a cell goes to rich itself.
_RICH_SYNTAX = re.compile(r"\[[a-z#/@]|:[\w+-]+:|\\")


# Plain classes: frozen dataclasses cost about a millisecond each of every eval's
# start-up to create, more than drawing a table.
class Column:
    __slots__ = ("header", "right")

    def __init__(self, header: str, right: bool = False) -> None:
        self.header = header
        self.right = right


class Table:
    __slots__ = ("columns", "rows", "title")

    def __init__(
        self, columns: Sequence[Column], rows: Sequence[Sequence[str]], title: str | None = None
    ) -> None:
        self.columns = columns
        self.rows = rows
        self.title = title


def _plain(text: str) -> bool:
    # Rich trims and re-spaces whitespace at the ends of a cell; a cell with it goes there.
    return (
        text.isascii()
        and text.isprintable()
        and text == text.strip()
        and not _RICH_SYNTAX.search(text)
    )


def _colour_forced() -> bool:
    # Rich writes styles (bold headers) into a file when told to, through these.
    return any(os.environ.get(name) for name in ("FORCE_COLOR", "TTY_COMPATIBLE"))


def draw(table: Table, width: int) -> str | None:
    """The table as rich prints it on a console ``width`` columns wide, or None."""
    cells = [column.header for column in table.columns]
    cells += [cell for row in table.rows for cell in row]
    if not table.columns or not all(map(_plain, cells)) or _colour_forced():
        return None
    if any(len(row) != len(table.columns) for row in table.rows):
        return None
    widths = [len(column.header) for column in table.columns]
    for row in table.rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]
    # One space of padding each side of a cell, and a space for each edge and divider.
    total = sum(widths) + 3 * len(widths) + 1
    if total > width:
        return None
    lines: list[str] = []
    if table.title is not None:
        title = " ".join(table.title.split())
        if len(title) > total or not _plain(title) or title != table.title:
            return None
        left = (total - len(title)) // 2
        lines.append(" " * left + title + " " * (total - len(title) - left))
    lines.append(" " * total)
    lines.append(_row([column.header for column in table.columns], table.columns, widths))
    lines.append(" " + "\u2501" * (total - 2) + " ")
    lines += [_row(row, table.columns, widths) for row in table.rows]
    lines.append(" " * total)
    return "".join(line + "\n" for line in lines)


def _row(cells: Sequence[str], columns: Sequence[Column], widths: Sequence[int]) -> str:
    parts = [
        cell.rjust(width) if column.right else cell.ljust(width)
        for cell, column, width in zip(cells, columns, widths, strict=True)
    ]
    return "  " + "   ".join(parts) + "  "
