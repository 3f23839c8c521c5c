"""Inputs as plain Python rows, and the exact line reader.

Every reader ends up here for a file that is anything but plain (tabs, comments,
a bad value): reading line by line is what lets an error name its line. Rows built in
Python (samples, a project's labels and stored rankings) are held as :class:`RunRows`
and :class:`QrelsRows` and aligned by :class:`~raglabel.formats.trec.arrays.ArrayAlignment`
like any file's columns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from raglabel.errors import InputError
from raglabel.formats.limits import MAX_ID_CHARS, check_ids, ids_fit
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
    scores: list[float] | None  # None: lists already in rank order (samples)
    contains: list[bool] | None = None


@dataclass(frozen=True)
class QrelsRows:
    qids: list[str]
    docids: list[str]
    grades: list[int]


@dataclass(frozen=True)
class QrelsColumns:
    """A canonical qrels file's rows as numpy columns, for a bulk import: ids as
    fixed-width UTF-8 bytes, zero-padded (an id holds no byte up to the space, so the
    padding is unambiguous), and the mapped grades."""

    qids: NDArray[np.bytes_]
    docids: NDArray[np.bytes_]
    grades: NDArray[np.int8]


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


def read_qrels_rows(path: str | Path, grade_map: GradeMap | None = None) -> QrelsRows:
    """Qrels read in bulk; any doubt about a line re-reads the file exactly to name it."""
    path = Path(path)
    check_readable(path)
    grade_map = GradeMap() if grade_map is None else grade_map
    columns = _qrels_bytes(path, grade_map)
    if columns is not None:
        return QrelsRows(_strings(columns.qids), _strings(columns.docids), columns.grades.tolist())
    return _qrels_lines(path, grade_map)


def read_qrels_columns(
    path: str | Path, grade_map: GradeMap | None = None
) -> QrelsColumns | QrelsRows:
    """Qrels as numpy columns when the file is canonical (what an import needs: no
    Python string per id), else as rows read the way :func:`read_qrels_rows` reads them."""
    path = Path(path)
    check_readable(path)
    grade_map = GradeMap() if grade_map is None else grade_map
    columns = _qrels_bytes(path, grade_map)
    return _qrels_lines(path, grade_map) if columns is None else columns


def _qrels_lines(path: Path, grade_map: GradeMap) -> QrelsRows:
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


def _qrels_bytes(path: Path, grade_map: GradeMap) -> QrelsColumns | None:
    """A canonical qrels file (single spaces, no comment) cut by numpy, or None.

    Splitting 400,000 lines in Python took longer than storing them in a project.
    """
    from raglabel.formats.trec.columns import split_fields

    data = path.read_bytes()
    fields = split_fields(data, 4)
    labels = None if fields is None else fields.integers(3)
    if fields is None or labels is None:
        return None
    grades, uncovered = grade_map.apply(labels)
    # Ids are cut to a common width, so one long id makes every row that wide: past a
    # few times the file's size, the line reader is the cheaper way (and past the id
    # limit, in bytes so surely in characters, it names the line).
    widths = fields.longest(0) + fields.longest(2)
    if uncovered.any() or widths > MAX_ID_CHARS or fields.rows * widths > 4 * len(data):
        return None
    queries, passages = fields.text(0), fields.text(2)
    if _repeats_a_pair(queries, passages):
        return None  # the exact reader names the repeated pair's lines
    return QrelsColumns(queries, passages, grades)


def _repeats_a_pair(first: NDArray[np.bytes_], second: NDArray[np.bytes_]) -> bool:
    """Whether two rows hold the same (first, second) pair of fixed-width ids.

    Each row's two fields, side by side, are one fixed-width string, and repeats are
    neighbours once those are sorted: a quarter of the time a set of 400,000 tuples
    took. (Ids that differ only by trailing NUL bytes look alike; that sends the file
    to the exact reader, never a repeat past it.)
    """
    pairs = np.empty(len(first), dtype=[("a", first.dtype), ("b", second.dtype)])
    pairs["a"], pairs["b"] = first, second
    joined = np.sort(pairs.view(f"S{first.dtype.itemsize + second.dtype.itemsize}"))
    return bool((joined[1:] == joined[:-1]).any())


def _strings(column: NDArray[np.bytes_]) -> list[str]:
    try:
        strings: list[str] = column.astype(np.str_).tolist()  # ASCII only, and fast
    except UnicodeDecodeError:
        strings = [value.decode("utf-8") for value in column.tolist()]
    return strings


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
