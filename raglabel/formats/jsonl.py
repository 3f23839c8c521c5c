"""JSON Lines reading with errors that name the line, and the field when a model rejects it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel, BeforeValidator, Field, ValidationError

from raglabel.errors import InputError
from raglabel.formats.limits import check_line, id_problem
from raglabel.formats.lines import check_readable


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
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise InputError(path, "is not valid UTF-8", number) from None
            if not text.strip():
                continue
            try:
                yield number, json.loads(text)
            except json.JSONDecodeError as exc:
                raise InputError(path, f"not valid JSON ({exc.msg})", number) from None
            except RecursionError:
                raise InputError(path, "not valid JSON (nested too deeply)", number) from None


M = TypeVar("M", bound=BaseModel)


def validated(path: Path, model: type[M]) -> Iterator[tuple[int, M]]:
    """Every line validated as ``model``; the first bad one is an error naming line and field."""
    for number, value in objects(path):
        try:
            yield number, model.model_validate(value)
        except ValidationError as exc:
            raise InputError(path, describe(exc), number) from None
