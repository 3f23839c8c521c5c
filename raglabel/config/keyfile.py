"""The key file's model: checked with pydantic, imported only when a key file exists."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    ValidationError,
    model_validator,
)

from raglabel.config.bindings import BINDING_IDS, key_list
from raglabel.config.toml_file import line_of
from raglabel.errors import InputError


def _binding(name: str) -> str:
    if name not in BINDING_IDS:
        raise ValueError(f"unknown binding {name!r}; valid ids: {', '.join(BINDING_IDS)}")
    return name


BindingId = Annotated[str, AfterValidator(_binding)]
Keys = Annotated[tuple[str, ...], BeforeValidator(key_list)]


class KeyFile(BaseModel):
    """A key file: binding id -> the keys that replace its defaults."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    keys: dict[BindingId, Keys] = {}

    @model_validator(mode="after")
    def _distinct(self) -> Self:
        # Checked over the defaults too: a remap onto a key another binding keeps would
        # leave one of the two unreachable.
        owner: dict[str, str] = {}
        for name, (default, _) in BINDING_IDS.items():
            keys = self.keys.get(name) or tuple(default.split(","))
            for key in keys:
                other = owner.setdefault(key, name)
                if other != name:
                    raise ValueError(
                        f"key {key!r} is bound to both {other!r} and {name!r}; remap one of them"
                    )
        return self


def _message(exc: ValidationError, text: str) -> tuple[str, int | None]:
    problems = []
    line: int | None = None
    for error in exc.errors():
        keys = [str(part) for part in error["loc"] if part != "[key]"]
        if line is None and keys:
            line = line_of(text, keys[-1], "keys" if len(keys) > 1 else None)
        where = ".".join(str(part) for part in error["loc"] if part != "[key]")
        if error["type"] == "extra_forbidden":
            problems.append(f"unknown setting {where!r}: a key file holds only a [keys] table")
            continue
        cause = error.get("ctx", {}).get("error")
        said = str(cause) if cause is not None else error["msg"]
        if error["type"] == "dict_type":
            said = "must be a table of binding id = keys"
        problems.append(f"{where}: {said}" if where else said)
    return "; ".join(problems), line


def parse_keys(path: Path, table: dict[str, Any], text: str = "") -> dict[str, str]:
    """The remapped ids of a key file's TOML ``table``, each to its keys joined by commas;
    ``text`` (the file's) lets an error name the line."""
    try:
        parsed = KeyFile.model_validate(table)
    except ValidationError as exc:
        message, line = _message(exc, text)
        raise InputError(path, message, line) from None
    return {name: ",".join(keys) for name, keys in parsed.keys.items()}
