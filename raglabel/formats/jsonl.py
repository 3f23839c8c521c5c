"""JSON Lines and JSON documents read with errors that name the line (and the column, where
the parser knows it), and the field when a model rejects it."""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel, BeforeValidator, Field, ValidationError

from raglabel.errors import InputError
from raglabel.formats.limits import check_line, id_problem
from raglabel.formats.lines import check_readable, without_byte_order_mark


def _id_text(value: Any) -> Any:
    # JSON producers often write numeric ids; an id is its text either way.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


def _one_line(value: str) -> str:
    # Ids travel through TSV, TREC files and newline-joined rankings.
    if any(c in value for c in "\n\r\t\x00"):
        raise ValueError("an id may not contain tabs, line breaks or NUL")
    if value != value.strip():
        raise ValueError("an id may not start or end with white space")
    problem = id_problem(value)
    if problem:
        raise ValueError(problem)
    return value


Identifier = Annotated[
    str, BeforeValidator(_id_text), Field(min_length=1), AfterValidator(_one_line)
]


_KINDS = {list: "a list", str: "a string", int: "a number", float: "a number", bool: "a boolean"}


def describe(error: ValidationError) -> str:
    """The first problem of a line, said without pydantic's words for it."""
    first = error.errors()[0]
    message = first["msg"].removeprefix("Value error, ")
    if first["loc"]:
        return f"field {'.'.join(str(part) for part in first['loc'])}: {message}"
    if first["type"] in {"model_type", "dict_type", "model_attributes_type"}:
        given = first["input"]
        kind = "null" if given is None else _KINDS.get(type(given), type(given).__name__)
        return f"each line must be a JSON object, not {kind}"
    return message  # a rule over the whole line


def objects(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, decoded JSON) for every non-blank line."""
    check_readable(path)
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            check_line(path, raw, number)
            try:
                # Editors on Windows start a UTF-8 file with a byte order mark.
                text = (without_byte_order_mark(raw) if number == 1 else raw).decode("utf-8")
            except UnicodeDecodeError:
                raise InputError(path, "is not valid UTF-8", number) from None
            if not text.strip():
                continue
            try:
                # Without its line break, an error at the end of the line stays on it.
                yield number, json.loads(text.rstrip("\r\n"))
            except json.JSONDecodeError as exc:
                raise json_error(path, exc, first_line=number) from None
            except RecursionError:
                raise InputError(path, "not valid JSON (nested too deeply)", number) from None
            except ValueError as exc:  # a number of more than 4300 digits
                raise InputError(path, f"not valid JSON ({exc})", number) from None


def json_error(path: Path, exc: json.JSONDecodeError, first_line: int = 1) -> InputError:
    """The parser's own words at its own line and column (``file:line:col:``); the text it
    parsed starts at ``first_line`` of the file."""
    return InputError(
        path, f"not valid JSON ({exc.msg})", first_line + exc.lineno - 1, column=exc.colno
    )


class JsonDocument:
    """A whole JSON document, parsed, that can say on which line any of its values starts
    (json.loads keeps no positions; the values are found again with raw_decode)."""

    def __init__(self, path: Path, text: str) -> None:
        """Raises json.JSONDecodeError, RecursionError or ValueError (a number of more
        than 4300 digits): the caller may try another reading (JSON Lines) first."""
        self.path = path
        self.text = text
        self.value: Any = json.loads(text)
        self.start = _skip(text, 0)
        self._newlines: list[int] | None = None

    def line(self, offset: int) -> int:
        if self._newlines is None:
            self._newlines = [m.start() for m in _NEWLINE.finditer(self.text)]
        return bisect.bisect_left(self._newlines, offset) + 1

    def items(self, offset: int) -> list[tuple[int, Any]]:
        """(offset, value) of each item of the array that starts at ``offset``."""
        text = self.text
        out: list[tuple[int, Any]] = []
        pos = _skip(text, offset + 1)
        while text[pos] != "]":
            value, end = _DECODER.raw_decode(text, pos)
            out.append((pos, value))
            pos = _skip(text, end)
            if text[pos] == ",":
                pos = _skip(text, pos + 1)
        return out

    def member(self, offset: int, key: str) -> int | None:
        """Where the value of ``key`` starts in the object at ``offset`` (its last
        occurrence, the one json.loads keeps), or None."""
        text = self.text
        found: int | None = None
        pos = _skip(text, offset + 1)
        while text[pos] != "}":
            name, pos = _DECODER.raw_decode(text, pos)
            pos = _skip(text, _skip(text, pos) + 1)  # past ':'
            if name == key:
                found = pos
            _, pos = _DECODER.raw_decode(text, pos)
            pos = _skip(text, pos)
            if text[pos] == ",":
                pos = _skip(text, pos + 1)
        return found


_DECODER = json.JSONDecoder()
_NEWLINE = re.compile("\n")


def _skip(text: str, pos: int) -> int:
    """Past JSON's white space (only these four characters are white space to JSON)."""
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def document_text(path: Path) -> str:
    """A whole file as text for a JSON document: lines checked as JSONL lines are, a byte
    order mark dropped, bad UTF-8 refused at its line."""
    raw = path.read_bytes()
    for number, line in enumerate(raw.split(b"\n"), start=1):
        check_line(path, line, number)
    text = without_byte_order_mark(raw)  # it holds no line break: lines stay the file's
    try:
        return text.decode("utf-8")
    except UnicodeDecodeError as exc:
        number = text.count(b"\n", 0, exc.start) + 1
        raise InputError(path, "is not valid UTF-8", number) from None


M = TypeVar("M", bound=BaseModel)


def validated(path: Path, model: type[M]) -> Iterator[tuple[int, M]]:
    """Every line validated as ``model``; the first bad one is an error naming line and field."""
    for number, value in objects(path):
        try:
            yield number, model.model_validate(value)
        except ValidationError as exc:
            raise InputError(path, describe(exc), number) from None
