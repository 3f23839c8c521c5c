"""Text tables drawn like rich's ``SIMPLE_HEAVY`` box, without importing rich.

``raglabel eval`` prints its tables through here: importing and warming up rich costs
more than the whole evaluation of a 100k-line run. :func:`draw` gives exactly the
characters rich would print to a file, or None when rich would do something this module
does not (wrap a cell, read markup or an emoji code, measure a wide character), and the
caller then asks rich. tests/test_plain_table.py holds the two to the same output.

Before either draws a table, :func:`fit` lays it out so that nothing is wrapped or cut
where a reader could misread it: a value (an interval ``[0.531, 0.900]`` with its count)
stays whole on one line, and a header cut to save width keeps the end that tells it from
the others (``precision_4…@3`` beside ``precision_4…@5``).
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections import Counter
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


#: A header is never cut shorter than this, nor than the values of its column.
MIN_HEADER = 8
_ELLIPSIS = "\u2026"


def text_width(text: str) -> int:
    """Terminal columns ``text`` takes, at most: its widest line, wide (East Asian)
    characters as two columns, combining marks as none. Never less than rich counts,
    so a console this wide never makes rich wrap."""
    return max((_line_width(line) for line in text.split("\n")), default=0)


def _line_width(line: str) -> int:
    if line.isascii():
        return len(line)
    width = 0
    for char in line:
        if unicodedata.combining(char):
            continue
        width += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return width


def fit(table: Table, width: int) -> tuple[Table, int]:
    """``table`` and the console width to draw it at, so that rich wraps and cuts
    nothing: the columns whose header is longer than every value in them give up
    width first, widest first and only as much as the table is too wide, each header
    cut to a name no other header reads as (:func:`cut_names`) and never below
    :data:`MIN_HEADER` or its values; a table still too wide is drawn wider than
    ``width``. Rich, given less than a table's width, wraps cells at their spaces (an
    interval over two lines) and cuts names alike (``precision_4plus…`` for both
    ``@3`` and ``@5``)."""
    count = len(table.columns)
    heads = [text_width(column.header) for column in table.columns]
    values = [
        max((text_width(row[i]) for row in table.rows if i < len(row)), default=0)
        for i in range(count)
    ]
    widths = [max(head, value) for head, value in zip(heads, values, strict=True)]
    # One space of padding each side of a cell, and a space for each edge and divider.
    excess = sum(widths) + 3 * count + 1 - width
    if excess > 0:
        floors = [
            min(head, max(value, MIN_HEADER)) for head, value in zip(heads, values, strict=True)
        ]
        while excess > 0:
            # The widest header that can still give a column up, first of equals.
            shrinkable = [i for i in range(count) if widths[i] > max(floors[i], values[i])]
            if not shrinkable:
                break
            widest = max(shrinkable, key=lambda i: (widths[i], -i))
            widths[widest] -= 1
            excess -= 1
        room = [min(head, w) for head, w in zip(heads, widths, strict=True)]
        headers = cut_names([column.header for column in table.columns], room)
        columns = [
            Column(header, column.right)
            for header, column in zip(headers, table.columns, strict=True)
        ]
        table = Table(columns, table.rows, table.title)
        # Measured again as cut: a wide character may have kept a header wider.
        widths = [max(text_width(h), v) for h, v in zip(headers, values, strict=True)]
    return table, max(width, sum(widths) + 3 * count + 1)


def cut_names(names: Sequence[str], widths: Sequence[int]) -> list[str]:
    """Each name cut to its width with an ellipsis where it was cut; names that would
    read alike keep the end that tells them apart, from the start of its word
    (``precision_4plus@3`` and ``@5`` at 14 columns: ``precision_4…@3`` and
    ``precision_4…@5``); names alike at both ends are numbered (``dens…1``)."""
    shown = [_cut(name, width, 0) for name, width in zip(names, widths, strict=True)]
    alike = Counter(shown)
    groups: dict[str, list[int]] = {}
    for i, text in enumerate(shown):
        if alike[text] > 1:
            groups.setdefault(text, []).append(i)
    for members in groups.values():
        cut = [i for i in members if shown[i] != names[i]]
        others = {text for j, text in enumerate(shown) if j not in members}
        # A character of the head always stays before the ellipsis.
        for tail in range(1, max((widths[i] for i in cut), default=0) - 1):
            tried = {
                i: _cut(names[i], widths[i], _word_tail(names[i], tail, widths[i])) for i in cut
            }
            texts = [tried.get(i, shown[i]) for i in members]
            if len(set(texts)) == len(texts) and not others & set(texts):
                for i, text in tried.items():
                    shown[i] = text
                break
        else:
            for number, i in enumerate(cut, 1):
                suffix = str(number)
                room = max(widths[i] - 1 - len(suffix), 0)
                shown[i] = names[i][:room] + _ELLIPSIS + suffix
    return shown


def _word_tail(name: str, tail: int, width: int) -> int:
    """``tail`` end characters of ``name``, grown back to the start of the word they
    begin in and the separator before it (``3`` -> ``@3``, ``0`` of ``_10`` ->
    ``_10``), while a character of the head still fits before the ellipsis."""
    start = len(name) - tail
    while start > 0 and name[start - 1].isalnum() and name[start].isalnum():
        start -= 1
    if start > 0 and not name[start - 1].isalnum():
        start -= 1
    grown = len(name) - start
    return grown if grown <= width - 2 else tail


def _cut(name: str, width: int, tail: int) -> str:
    """``name`` in ``width`` columns: whole if it fits, else its start, an ellipsis
    and its last ``tail`` characters."""
    if text_width(name) <= width:
        return name
    head = max(width - 1 - tail, 0)
    return name[:head] + _ELLIPSIS + (name[len(name) - tail :] if tail else "")
