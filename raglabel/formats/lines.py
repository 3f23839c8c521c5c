"""Line-level reading shared by the whitespace-separated formats.

The fast readers hand canonical files (:mod:`raglabel.formats.trec.canonical`) to
polars or numpy; whenever a file is anything but canonical (tabs, carriage returns, odd
spacing, bad bytes, a bad value), this exact reader takes over, so that an error can
name its line.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

from raglabel.errors import InputError


def check_readable(path: Path) -> int:
    """Size of ``path`` in bytes, or a clear error when it cannot be read."""
    if not path.exists():
        raise InputError(path, "no such file")
    if not path.is_file():
        raise InputError(path, "not a regular file")
    try:
        with path.open("rb"):
            pass
    except OSError as exc:
        raise InputError(path, f"cannot be read: {exc.strerror}") from None
    return path.stat().st_size


_WHOLE_FILE_BYTES = 64 << 20

#: UTF-8's byte order mark, which editors on Windows put at the start of a file. At a
#: file's start every reader of raglabel (TREC and JSON alike) reads it as nothing;
#: anywhere else it is a character like any other.
BYTE_ORDER_MARK = b"\xef\xbb\xbf"


def without_byte_order_mark(data: bytes) -> bytes:
    """``data`` (a file's first bytes, or the whole file) without a leading byte order
    mark: the one rule, used by every strategy of the TREC reader."""
    return data.removeprefix(BYTE_ORDER_MARK)


def clean_text(path: Path) -> str | None:
    """The whole file as text when it is small, NUL-free and valid UTF-8; else None
    (a large file is streamed, and a bad one re-read line by line to name the line).
    A leading byte order mark is not part of the text."""
    if path.stat().st_size > _WHOLE_FILE_BYTES:
        return None
    data = without_byte_order_mark(path.read_bytes())
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def require_fields(path: Path, number: int, fields: list[str], layout: str) -> None:
    """A line must have at least the fields ``layout`` names (extra ones are ignored)."""
    wanted = len(layout.split())
    if len(fields) < wanted:
        raise InputError(path, f"expected {wanted} fields ({layout}), found {len(fields)}", number)


def data_lines(path: Path) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of every line that is neither blank nor a ``#`` comment."""
    text = clean_text(path)
    if text is not None:
        for number, line in enumerate(text.split("\n"), start=1):
            fields = line.split()
            if fields and not fields[0].startswith("#"):
                yield number, fields
        return
    with path.open("rb") as handle:
        for number, chunk in enumerate(handle, start=1):
            raw = without_byte_order_mark(chunk) if number == 1 else chunk
            if b"\x00" in raw:
                raise InputError(path, "contains a NUL byte", number)
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(
                    path, f"is not valid UTF-8 (byte {exc.start + 1} of the line)", number
                ) from None
            fields = text.split()
            if not fields or fields[0].startswith("#"):
                continue
            yield number, fields


def line_of_row(path: Path, row: int) -> int | None:
    """File line number of data row ``row`` (0-based), for error messages."""
    for index, (number, _fields) in enumerate(data_lines(path)):
        if index == row:
            return number
    return None


def parse_float(path: Path, line: int, text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(path, f"{what} {text!r} is not a number", line) from None
    if not math.isfinite(value):
        raise InputError(path, f"{what} {text!r} is not a finite number", line)
    return value


def parse_int(path: Path, line: int, text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise InputError(path, f"{what} {text!r} is not an integer", line) from None
