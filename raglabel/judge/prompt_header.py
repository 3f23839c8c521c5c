"""A prompt file's header: the labels it asks for, how they become grades, and the reply
shape it asks for.

A prompt file may start with a TOML header between two lines that hold only ``+++``::

    +++
    scale = [0, 1, 2, 3]                    # the labels the prompt asks for
    grades = {0 = 2, 1 = 3, 2 = 4, 3 = 5}   # label -> grade 1-5 (default: the TREC map)
    reply = "final-score"                   # or "json" (the default)
    +++

so that a prompt written for another scale and reply shape (a published one, say) runs as
it is. Every key may be left out: ``scale`` defaults to the labels ``grades`` maps, and
``grades`` to the TREC map (:func:`raglabel.metrics.config.trec_grades`), which must then
cover the scale. Anything else (an unknown key, a value of the wrong type, a label the map
leaves out or maps outside 1-5, a header never closed) is an error naming the file and
the line, raised when the file is read, before any request. A file without a header is
read as before: JSON replies with a grade 1-5 (:data:`NO_HEADER`).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from raglabel.errors import InputError
from raglabel.metrics.config import GRADES, trec_grades

#: The line that opens and closes a header.
DELIMITER: Final = "+++"
#: The reply shapes a prompt may ask for.
JSON: Final = "json"
FINAL_SCORE: Final = "final-score"
REPLIES: Final = (JSON, FINAL_SCORE)
KEYS: Final = ("scale", "grades", "reply")

# tomllib says where it stopped only in its message's tail.
_AT_LINE = re.compile(r" \(at line (\d+), column (\d+)\)$")
_AT_END = " (at end of document)"
_LABEL = re.compile(r"-?[0-9]+")


@dataclass(frozen=True)
class Scale:
    """The labels a prompt asks the model for, in increasing order."""

    labels: tuple[int, ...]

    def __contains__(self, label: object) -> bool:
        return label in self.labels

    @property
    def span(self) -> str:
        """``0..3`` for a run of consecutive labels, else ``0, 2, 4``."""
        low, high = self.labels[0], self.labels[-1]
        if self.labels == tuple(range(low, high + 1)):
            return f"{low}..{high}"
        return ", ".join(map(str, self.labels))

    @property
    def wanted(self) -> str:
        """What a label is, as a request for one: ``integer from 0 to 3``."""
        low, high = self.labels[0], self.labels[-1]
        if self.labels == tuple(range(low, high + 1)):
            return f"integer from {low} to {high}"
        return f"integer among {self.span}"


@dataclass(frozen=True)
class PromptHeader:
    """What a prompt's header declares (or, for a file without one, today's reading)."""

    scale: Scale
    grades: tuple[tuple[int, int], ...]  # (label, grade), one per label of the scale
    reply: str  # JSON or FINAL_SCORE
    declared: bool  # whether the prompt has a header at all

    def grade_of(self, label: int) -> int:
        """The grade of a label of the scale (the header was checked to cover each)."""
        return dict(self.grades)[label]


#: How a prompt without a header is read: JSON replies whose grade is the grade itself.
NO_HEADER: Final = PromptHeader(Scale(GRADES), tuple((g, g) for g in GRADES), JSON, False)


def split(text: str, source: str) -> tuple[PromptHeader, str]:
    """The header of a prompt's text and the body after it; :data:`NO_HEADER` and the
    whole text when the first line is not ``+++``. Errors name ``source`` and the line.
    A byte order mark at the start is no part of either: an editor's marker, not words
    to send to the model."""
    text = text.removeprefix("\ufeff")
    lines = text.split("\n")
    if lines[0].rstrip() != DELIMITER:
        return NO_HEADER, text
    closing = next((i for i in range(1, len(lines)) if lines[i].rstrip() == DELIMITER), None)
    if closing is None:
        raise InputError(
            source,
            f"the header opened here is never closed: end it with a line holding only"
            f" {DELIMITER}, before the prompt's text",
            line=1,
        )
    header_lines = lines[1:closing]
    header = _read(_toml(header_lines, source, closing + 1), header_lines, source)
    return header, "\n".join(lines[closing + 1 :])


def _toml(lines: list[str], source: str, closing_line: int) -> dict[str, object]:
    try:
        return tomllib.loads("\n".join(lines))
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        at = _AT_LINE.search(message)
        if at is not None:
            # The header's first line is the file's second.
            line, column = int(at.group(1)) + 1, int(at.group(2))
            message = message[: at.start()]
        else:
            line, column = closing_line, None
            message = message.removesuffix(_AT_END)
        raise InputError(
            source, f"the header is not valid TOML: {message}", line=line, column=column
        ) from None


Fail = Callable[[str, str], InputError]  # (key, message) -> the error at the key's line


def _read(data: Mapping[str, object], lines: list[str], source: str) -> PromptHeader:
    def fail(key: str, message: str) -> InputError:
        return InputError(source, message, line=_line_of(key, lines))

    unknown = next((key for key in data if key not in KEYS), None)
    if unknown is not None:
        raise fail(unknown, f"the header has no key {unknown!r} (it takes {', '.join(KEYS)})")
    reply = data.get("reply", JSON)
    if not isinstance(reply, str) or reply not in REPLIES:
        raise fail("reply", f'reply must be "{JSON}" or "{FINAL_SCORE}", got {_show(reply)}')
    declared = "grades" in data
    grades = _grades(data["grades"], fail) if declared else trec_grades()
    if "scale" in data:
        scale = _scale(data["scale"], fail)
    elif len(grades) < 2:
        raise fail("grades", "grades must map at least two labels: they make the scale")
    else:
        scale = Scale(tuple(sorted(grades)))
    uncovered = next((label for label in scale.labels if label not in grades), None)
    if uncovered is not None and declared:
        raise fail(
            "grades",
            f"grades gives label {uncovered} of the scale no grade:"
            f" add {uncovered} = G, with G its grade (1-5)",
        )
    if uncovered is not None:
        raise fail(
            "scale",
            f"label {uncovered} of the scale has no grade: the default grades (the TREC map"
            " 0 = 2, 1 = 3, 2 = 4, 3 = 5) cover 0..3 only; declare grades for every label",
        )
    extra = next((label for label in sorted(grades) if label not in scale), None)
    if extra is not None and declared:
        raise fail("grades", f"grades maps label {extra}, which is not on the scale ({scale.span})")
    pairs = tuple((label, grades[label]) for label in scale.labels)
    return PromptHeader(scale, pairs, reply, True)


def _scale(value: object, fail: Fail) -> Scale:
    if not isinstance(value, list) or not all(_is_int(label) for label in value):
        raise fail(
            "scale",
            f"scale must be a list of whole numbers, e.g. [0, 1, 2, 3]; got {_show(value)}",
        )
    repeated = next((label for label in value if value.count(label) > 1), None)
    if repeated is not None:
        raise fail("scale", f"scale lists label {repeated} twice")
    if len(value) < 2:
        raise fail("scale", "a scale needs at least two labels")
    return Scale(tuple(sorted(value)))


def _grades(value: object, fail: Fail) -> dict[int, int]:
    if not isinstance(value, dict):
        raise fail(
            "grades",
            f"grades must be a table of label = grade, e.g. {{0 = 2, 1 = 3}}; got {_show(value)}",
        )
    grades: dict[int, int] = {}
    for key, grade in value.items():
        if _LABEL.fullmatch(key) is None:
            raise fail("grades", f"grades: {key!r} is not a label (a whole number)")
        label = int(key)
        if label in grades:
            # "1" and "01" are two TOML keys but one label.
            raise fail("grades", f"grades maps label {label} twice")
        if not _is_int(grade) or grade not in GRADES:
            raise fail("grades", f"grades maps label {label} to {_show(grade)}, not a grade 1-5")
        grades[label] = grade
    return grades


def _line_of(key: str, lines: list[str]) -> int:
    """The file's line of ``key`` (``key =`` or a ``[key]`` table), else the header's
    first line."""
    name = re.escape(key)
    pattern = re.compile(rf"""\s*(?:["']?{name}["']?\s*[=.]|\[\s*{name}\s*\])""")
    for number, line in enumerate(lines, 2):
        if pattern.match(line) is not None:
            return number
    return 1


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _show(value: object) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)[:40]
