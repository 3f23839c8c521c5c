"""Option values shared by several commands."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from raglabel.errors import UsageError

if TYPE_CHECKING:
    from raglabel.formats.maps import GradeMap


def named_file(spec: str, option: str) -> tuple[str, Path]:
    """``NAME=FILE`` or a bare ``FILE`` (named after its stem)."""
    name, sep, file = spec.partition("=")
    if sep and name and not Path(spec).exists():
        if not file:
            raise UsageError(f"{option} {spec!r}: no file after '='")
        return name, Path(file)
    return Path(spec).stem, Path(spec)


def grade_map_option(text: str | None) -> GradeMap | None:
    """The parsed ``--grade-map``, or None for the default map."""
    if not text:
        return None
    from raglabel.formats.maps import parse_grade_map

    try:
        return parse_grade_map(text)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
