"""Text tables drawn like rich's ``SIMPLE_HEAVY`` box, without importing rich.

``raglabel eval`` prints its tables through here: importing and warming up rich costs
more than the whole evaluation of a 100k-line run. :func:`draw` gives exactly the
characters rich would print to a file, or None when rich would do something this module
does not (wrap a cell, read markup or an emoji code, measure a wide character), and the
caller then asks rich. tests/unit/test_plain_table.py holds the two to the same output.

Before either draws a table, :func:`fit` lays it out so that nothing is wrapped or cut
where a reader could misread it: a value (an interval ``[0.531, 0.900]`` with its count)
stays whole on one line, and a header cut to save width keeps the end that tells it from
the others (``precision_4…@3`` beside ``precision_4…@5``); and :func:`split` first makes
a table wider than the console blocks of its columns that each fit, so the terminal
never wraps one mid-value.
"""

from __future__ import annotations

import os
import re
import sys
import unicodedata
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
    """Columns, rows of cells and a title; the first ``keys`` columns name a row (a
    metric; a metric, baseline and run) and lead every block :func:`split` makes. A
    block's ``siblings`` are the headers of the whole table: a header cut in one block
    must not read as a column of another. A table with a ``corner`` may be turned, rows
    for columns, where that fits better (:func:`layout`): its first column's header
    then, ``run`` for the metric table's runs."""

    __slots__ = ("columns", "corner", "keys", "rows", "siblings", "title")

    def __init__(
        self,
        columns: Sequence[Column],
        rows: Sequence[Sequence[str]],
        title: str | None = None,
        *,
        keys: int = 1,
        siblings: Sequence[str] = (),
        corner: str | None = None,
    ) -> None:
        self.columns = columns
        self.rows = rows
        self.title = title
        self.keys = keys
        self.siblings = siblings
        self.corner = corner


def _plain(text: str) -> bool:
    # Rich trims and re-spaces whitespace at the ends of a cell; a cell with it goes there.
    return (
        text.isascii()
        and text.isprintable()
        and text == text.strip()
        and not _RICH_SYNTAX.search(text)
    )


def console_width() -> int | None:
    """The width tables are laid out for when stdout is a terminal: ``COLUMNS`` when
    set to a number (as the shell and rich read it), else the terminal's own. None for
    a pipe or a file: nothing wraps there, so a table is printed whole at its own width
    (a ``COLUMNS`` inherited there, as readline sets it for its children, is no
    console's)."""
    if not _is_terminal():
        return None
    text = os.environ.get("COLUMNS", "").strip()
    if text.isdigit() and int(text) > 0:
        return int(text)
    try:
        return os.get_terminal_size(sys.stdout.fileno()).columns
    except (OSError, ValueError):  # a replaced stdout without a descriptor
        return None


def _is_terminal() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stdout
        return False


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


def _cutoff(name: str) -> str:
    """The end of a metric's name that says its cutoff (``@3``, ``@k``, ``_10``), or
    empty: the part a cut header always keeps, as it tells the name from its siblings."""
    found = _CUTOFF.search(name)
    return found.group() if found is not None and found.start() > 0 else ""


_CUTOFF = re.compile(r"@[A-Za-z0-9]+$|_[0-9]+$")


def _narrowest(table: Table) -> tuple[list[int], list[int], list[int]]:
    """Per column: its header's width, its widest value, and the least width its header
    may be cut to (never below :data:`MIN_HEADER`, its values or its cutoff and a
    character before the ellipsis)."""
    count = len(table.columns)
    heads = [text_width(column.header) for column in table.columns]
    values = [
        max((text_width(row[i]) for row in table.rows if i < len(row)), default=0)
        for i in range(count)
    ]
    floors = [
        min(head, max(value, MIN_HEADER, len(_cutoff(column.header)) + 2))
        for head, value, column in zip(heads, values, table.columns, strict=True)
    ]
    if floors != heads:
        # Headers that read alike cut that far need more to be told apart.
        cut = cut_names([column.header for column in table.columns], floors, table.siblings)
        floors = [max(floor, text_width(text)) for floor, text in zip(floors, cut, strict=True)]
    return heads, values, floors


def fit(table: Table, width: int) -> tuple[Table, int]:
    """``table`` and the console width to draw it at, so that rich wraps and cuts
    nothing: the columns whose header is longer than every value in them give up
    width first, widest first and only as much as the table is too wide, each header
    cut to a name no other header reads as (:func:`cut_names`) and never below
    :data:`MIN_HEADER` or its values; a table still too wide is drawn wider than
    ``width`` (:func:`split` first makes it blocks that fit). Rich, given less than a
    table's width, wraps cells at their spaces (an interval over two lines) and cuts
    names alike (``precision_4plus…`` for both ``@3`` and ``@5``)."""
    count = len(table.columns)
    heads, values, floors = _narrowest(table)
    widths = [max(head, value) for head, value in zip(heads, values, strict=True)]
    # One space of padding each side of a cell, and a space for each edge and divider.
    excess = sum(widths) + 3 * count + 1 - width
    if excess > 0:
        while excess > 0:
            # The widest header that can still give a column up, first of equals.
            shrinkable = [i for i in range(count) if widths[i] > max(floors[i], values[i])]
            if not shrinkable:
                break
            widest = max(shrinkable, key=lambda i: (widths[i], -i))
            widths[widest] -= 1
            excess -= 1
        room = [min(head, w) for head, w in zip(heads, widths, strict=True)]
        headers = cut_names([column.header for column in table.columns], room, table.siblings)
        columns = [
            Column(header, column.right)
            for header, column in zip(headers, table.columns, strict=True)
        ]
        table = Table(columns, table.rows, table.title, keys=table.keys, siblings=table.siblings)
        # Measured again as cut: a header kept distinct, or a wide character, may be wider.
        widths = [max(text_width(h), v) for h, v in zip(headers, values, strict=True)]
    return table, max(width, sum(widths) + 3 * count + 1)


def own_width(table: Table) -> int:
    """The console width ``table`` is drawn whole at, its title unwrapped."""
    heads, values, _ = _narrowest(table)
    widths = [max(head, value) for head, value in zip(heads, values, strict=True)]
    return max(sum(widths) + 3 * len(widths) + 1, text_width(table.title or ""))


#: Columns a table takes besides its cells: per column and once. Rich's simple box
#: pads a cell a space each side with a space between and at each edge.
BOXED = (3, 1)


def split(
    table: Table, width: int, *, spacing: tuple[int, int] = BOXED, cut: bool = True
) -> list[Table]:
    """``table`` as blocks of its columns that each fit ``width`` (once :func:`fit` has
    cut their headers, or with headers whole without ``cut``; ``spacing`` as
    :data:`BOXED`), every block led by the table's first ``keys`` columns (the names of
    its rows), in order, no column left out: a terminal given a wider table wraps it
    mid-value (``0.3667 [0.`` over ``250, 0.483]``). A single column too wide for any
    block is a block of its own, drawn wider: a value is never cut. One block is the
    table as it is."""
    count = len(table.columns)
    keys = min(table.keys, count)
    if any(len(row) != count for row in table.rows):
        return [table]  # rich reports what is wrong with it
    heads, values, floors = _narrowest(table)
    least = [
        max(floor if cut else head, value)
        for floor, head, value in zip(floors, heads, values, strict=True)
    ]
    each, once = spacing
    if sum(least) + each * count + once <= width or count <= keys + 1:
        return [table]
    lead = sum(least[:keys]) + each * keys + once
    groups: list[list[int]] = [[]]
    used = lead
    for i in range(keys, count):
        if groups[-1] and used + least[i] + each > width:
            groups.append([])
            used = lead
        groups[-1].append(i)
        used += least[i] + each
    if len(groups) == 1:
        return [table]
    blocks = []
    for number, group in enumerate(groups, 1):
        chosen = [*range(keys), *group]
        part = f"part {number} of {len(groups)}"
        blocks.append(
            Table(
                [table.columns[i] for i in chosen],
                [[row[i] for i in chosen] for row in table.rows],
                f"{table.title} ({part})" if table.title else part,
                keys=keys,
                siblings=[column.header for column in table.columns],
            )
        )
    return blocks


def layout(
    table: Table, width: int, *, spacing: tuple[int, int] = BOXED, cut: bool = True
) -> tuple[list[Table], str | None]:
    """The blocks ``table`` is printed as on a console ``width`` wide, and the line
    said before them (None for the table as it is): split into blocks of columns
    (:func:`split`, ``spacing`` and ``cut`` as there), or, for a table with a
    ``corner``, turned rows for columns where that takes fewer blocks (six runs with
    intervals side by side are 3 blocks at 80 columns, a row each are one)."""
    blocks = split(table, width, spacing=spacing, cut=cut)
    if len(blocks) == 1:
        return blocks, None
    turned = _turned(table)
    if turned is not None:
        turned_blocks = split(turned, width, spacing=spacing, cut=cut)
        if len(turned_blocks) < len(blocks):
            first = turned.columns[0].header
            text = (
                f"(too wide for {width} columns with a {first} a column: printed a {first} a row)"
            )
            if len(turned_blocks) > 1:
                text = text[:-1] + f", in {len(turned_blocks)} parts; no column is left out)"
            return turned_blocks, _fill(text, width)
    names = [column.header for column in table.columns[: max(table.keys, 1)]]
    led = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    column = "column" if len(names) == 1 else "columns"
    text = (
        f"(too wide for {width} columns: printed in {len(blocks)} parts, each led by the"
        f" {led} {column}; no column is left out)"
    )
    return blocks, _fill(text, width)


def wrapped(line: str, width: int | None) -> list[str]:
    """``line`` in lines of at most ``width`` where it has spaces to break at, each
    further line indented to just after the line's label (``conventions: ``), or two
    more than the first without one; a word (a fingerprint, a ``name=value``
    convention, a path) is never split, so one wider than the console stays whole on
    a line of its own."""
    if width is None or len(line) <= width:
        return [line]
    import textwrap

    label = line.find(": ")
    hang = label + 2 if 0 < label < min(24, width // 3) else len(line) - len(line.lstrip()) + 2
    indent = " " * hang
    return textwrap.wrap(
        line,
        width,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )


def _fill(text: str, width: int) -> str:
    import textwrap  # only a table too wide for its console needs it

    return textwrap.fill(text, width, break_long_words=False, break_on_hyphens=False)


def _turned(table: Table) -> Table | None:
    """``table`` with rows for columns, or None where it has no ``corner`` or its rows
    do not all have a cell per column. The row names head the columns, the column
    headers name the rows; a value keeps the side it was set to."""
    count = len(table.columns)
    if table.corner is None or table.keys != 1 or not table.rows:
        return None
    if any(len(row) != count for row in table.rows):
        return None
    right = any(column.right for column in table.columns[1:])
    columns = [Column(table.corner), *(Column(row[0], right) for row in table.rows)]
    rows = [[table.columns[i].header, *(row[i] for row in table.rows)] for i in range(1, count)]
    return Table(columns, rows, table.title)


def cut_names(
    names: Sequence[str], widths: Sequence[int], siblings: Sequence[str] = ()
) -> list[str]:
    """Each name in its width, cut with an ellipsis where it does not fit. A cut name
    always keeps its cutoff (``@3``, ``_10``: what tells ``precision_4plus@3`` from
    ``@5``) and a character of its start: ``precision_4…@3``. A cut that could be
    another of the names (``precisi…@3`` beside ``precision@3`` and
    ``precision_4plus@3``) keeps more of its end, from the start of a word
    (``ndcg_…_10``), and failing that takes more columns than it was given, up to the
    whole name: no header reads as two names, nor as one of ``siblings`` (the columns
    of the other blocks of a table split in blocks). A name is shown whole rather than
    cut to as many characters as it has."""
    distinct = sorted({*names, *siblings})
    shown = []
    for name, width in zip(names, widths, strict=True):
        others = [other for other in distinct if other != name]
        least = len(_cutoff(name))
        room = width
        text = _cut(name, room, least)
        while text != name and any(_could_be(text, other) for other in others):
            # Ends that start at a word (``_4plus@3``), each leaving a few characters
            # of the start to read the name by.
            tails = [t for t in range(least + 1, room - 3) if not name[-t].isalnum()]
            text = next(
                (
                    tried
                    for tail in tails
                    for tried in [_cut(name, room, tail)]
                    if not any(_could_be(tried, other) for other in others)
                ),
                text,
            )
            if any(_could_be(text, other) for other in others):
                room += 1
                text = _cut(name, room, least)
        shown.append(text)
    return shown


def _could_be(shown: str, name: str) -> bool:
    """Whether a header as shown, whole or cut (``head…tail``), reads as ``name``."""
    if _ELLIPSIS not in shown:
        return shown == name
    head, tail = shown.split(_ELLIPSIS, 1)
    return len(name) > len(head) + len(tail) and name.startswith(head) and name.endswith(tail)


def _cut(name: str, width: int, tail: int) -> str:
    """``name`` in ``width`` columns: whole if it fits, else a character or more of
    its start, an ellipsis and its last ``tail`` characters (wider than ``width``
    where those do not fit in it); whole again where the cut would be no shorter."""
    if text_width(name) <= width:
        return name
    head = max(width - 1 - tail, 1)
    text = name[:head] + _ELLIPSIS + (name[len(name) - tail :] if tail else "")
    return name if text_width(text) >= text_width(name) else text
