"""raglabel's own label files: the JSONL and CSV that ``export`` writes and ``import`` reads.

Each line is a grade event; the full-history export adds each event's id, so undos can
name the event they revert and the log comes back exactly as it was.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from raglabel.errors import InputError
from raglabel.formats.jsonl import describe, validated
from raglabel.formats.lines import check_readable
from raglabel.storage.grades import GradeEvent

FIELDS = ["event", *GradeEvent.model_fields]


class LabelLine(GradeEvent):
    """A grade event as exported, with the id it had in the project it came from."""

    event: int | None = None


def _csv_value(value: str) -> Any:
    return None if value == "" else value


def read_label_file(path: Path) -> list[tuple[int, LabelLine]]:
    """(line, event) from a raglabel JSONL or CSV label export, in the order written."""
    check_readable(path)
    if path.suffix.lower() == ".csv":
        lines: list[tuple[int, LabelLine]] = []
        with path.open(encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            missing = {"query", "passage", "annotator"} - set(reader.fieldnames or [])
            if missing:
                raise InputError(path, f"header lacks {', '.join(sorted(missing))}", 1)
            for row in reader:
                values = {k: _csv_value(v) for k, v in row.items() if k in FIELDS}
                try:
                    lines.append((reader.line_num, LabelLine.model_validate(values)))
                except ValidationError as exc:
                    raise InputError(path, describe(exc), reader.line_num) from None
    else:
        lines = list(validated(path, LabelLine))
    if not lines:
        raise InputError(path, "has no label lines (the file is empty)")
    # The rules ``grades.record`` enforces on undos hold for a file too: an export never
    # breaks them, so a file that does was edited and its undos would be misread.
    known: dict[int, tuple[int, LabelLine]] = {}
    undone: dict[int, int] = {}
    for number, line in lines:
        if line.target is not None:
            if line.target not in known:
                raise InputError(
                    path, f"undo of event {line.target}, which no earlier line carries", number
                )
            first, target = known[line.target]
            item = (line.query, line.passage, line.annotator)
            if (target.query, target.passage, target.annotator) != item:
                problem = f"is another item's or annotator's (line {first})"
            elif target.kind == "undo":
                problem = f"is itself an undo (line {first})"
            elif line.target in undone:
                problem = f"was already undone on line {undone[line.target]}"
            else:
                problem = ""
            if problem:
                raise InputError(path, f"undo of event {line.target}, which {problem}", number)
            undone[line.target] = number
        if line.event is not None:
            if line.event in known:
                raise InputError(
                    path, f"event {line.event} already used on line {known[line.event][0]}", number
                )
            known[line.event] = (number, line)
    return lines
