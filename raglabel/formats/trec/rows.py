"""The line strategies of the TREC reader: a bulk split, and the exact line reader.

Every reader ends up here for a file that is anything but plain (tabs, comments,
a bad value): reading line by line is what lets an error name its line. What they
read becomes the reader's tables (:mod:`.table`). Labels built in Python (samples, a
project's labels) are held as :class:`QrelsRows` until they are aligned.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from raglabel.errors import InputError
from raglabel.formats.limits import check_ids, ids_fit
from raglabel.formats.lines import (
    check_readable,
    clean_text,
    data_lines,
    parse_float,
    parse_int,
    require_fields,
)
from raglabel.formats.maps import GradeMap
from raglabel.formats.trec.shape import refuse_run_as_qrels, require_run_fields


@dataclass(frozen=True)
class RunRows:
    qids: list[str]
    docids: list[str]
    scores: list[float]


@dataclass(frozen=True)
class QrelsRows:
    qids: list[str]
    docids: list[str]
    grades: list[int]


def _split_lines(path: Path) -> list[list[str]] | None:
    """Fields of every data line of a small, clean file; None sends it to the exact reader."""
    text = clean_text(path)
    if text is None:
        return None
    rows = [line.split() for line in text.split("\n")]
    return [fields for fields in rows if fields and not fields[0].startswith("#")]


def read_run_rows(path: str | Path) -> RunRows:
    """A run read in bulk, for files the numpy columns refuse (a strategy of
    :func:`~raglabel.formats.trec.arrays.read_run_table`); any doubt about a line
    re-reads the file exactly to name it."""
    path = Path(path)
    check_readable(path)
    rows = _split_lines(path)
    if rows is not None and all(len(fields) >= 6 for fields in rows):
        try:
            scores = [float(fields[4]) for fields in rows]
        except ValueError:
            pass
        else:
            qids = [fields[0] for fields in rows]
            docids = [fields[2] for fields in rows]
            if rows and all(map(math.isfinite, scores)) and ids_fit(qids, docids):
                return RunRows(qids, docids, scores)
    return read_run_exactly(path)


def read_run_exactly(path: Path) -> RunRows:
    """Line by line, so that the first bad line is named; for files that need it."""
    qids: list[str] = []
    docids: list[str] = []
    scores: list[float] = []
    for number, fields in data_lines(path):
        require_run_fields(path, number, fields, first=not qids)
        check_ids(path, number, fields[0], fields[2])
        scores.append(parse_float(path, number, fields[4], "score"))
        qids.append(fields[0])
        docids.append(fields[2])
    if not qids:
        raise InputError(path, "has no run lines (the file is empty or only comments)")
    return RunRows(qids, docids, scores)


def read_qrels_lines(path: Path, grade_map: GradeMap) -> QrelsRows:
    """Qrels split in bulk, for files the numpy columns refuse (a strategy of
    :func:`~raglabel.formats.trec.arrays.read_qrels_table`); any doubt about a line
    re-reads the file exactly to name it."""
    # Every qrels file that is not four plain fields a line comes here, a run among them.
    refuse_run_as_qrels(path)
    rows = _split_lines(path)
    if rows and all(len(fields) >= 4 for fields in rows):
        try:
            grades = [grade_map.grade_of(int(fields[3])) for fields in rows]
        except ValueError:
            pass
        else:
            qids = [fields[0] for fields in rows]
            docids = [fields[2] for fields in rows]
            unique = len(set(zip(qids, docids, strict=True))) == len(rows)
            if None not in grades and unique and ids_fit(qids, docids):
                return QrelsRows(qids, docids, [g for g in grades if g is not None])
    return read_qrels_exactly(path, grade_map)


def read_qrels_exactly(path: Path, grade_map: GradeMap) -> QrelsRows:
    """Line by line, so that the first bad line is named; for files that need it."""
    rows = QrelsRows([], [], [])
    first_line: dict[tuple[str, str], int] = {}
    for number, fields in data_lines(path):
        require_fields(path, number, fields, "qid iteration docid relevance")
        check_ids(path, number, fields[0], fields[2])
        label = parse_int(path, number, fields[3], "relevance")
        grade = grade_map.grade_of(label)
        if grade is None:
            raise InputError(
                path,
                grade_map.uncovered(label),
                number,
            )
        pair = (fields[0], fields[2])
        if pair in first_line:
            raise InputError(
                path,
                f"passage {pair[1]!r} is judged twice for query {pair[0]!r} "
                f"(lines {first_line[pair]} and {number}); keep one judgment per pair",
                number,
            )
        first_line[pair] = number
        rows.qids.append(pair[0])
        rows.docids.append(pair[1])
        rows.grades.append(grade)
    if not rows.qids:
        raise InputError(path, "has no qrels lines (the file is empty or only comments)")
    return rows
