"""Sizes past which an input is garbage, not data: a line of 100 MB is a broken export
or the wrong file, and should be refused at its line rather than stored."""

from __future__ import annotations

from pathlib import Path

from raglabel.errors import InputError

#: The longest line any line-based reader accepts (a passage, with its JSON around it).
MAX_LINE_BYTES = 16 << 20
#: The longest id: query, passage and sample ids are keys, not text.
MAX_ID_CHARS = 1024


def check_line(path: Path, raw: bytes, number: int) -> None:
    """Refuse a line that holds a NUL byte or is longer than any real record."""
    if len(raw) > MAX_LINE_BYTES:
        raise InputError(
            path,
            f"the line is {len(raw) / (1 << 20):.1f} MiB long; lines may be at most"
            f" {MAX_LINE_BYTES >> 20} MiB",
            number,
        )
    if b"\x00" in raw:
        raise InputError(path, "contains a NUL byte", number)


def id_problem(ident: str) -> str | None:
    if len(ident) > MAX_ID_CHARS:
        return f"an id may be at most {MAX_ID_CHARS} characters long (this one has {len(ident)})"
    return None


def check_ids(path: Path, number: int, *ids: str) -> None:
    for ident in ids:
        problem = id_problem(ident)
        if problem:
            raise InputError(path, problem, number)


def ids_fit(*columns: list[str]) -> bool:
    """Whether every id of these columns is short enough (else the exact reader names
    the line of the first that is not)."""
    return all(max(map(len, column), default=0) <= MAX_ID_CHARS for column in columns)
