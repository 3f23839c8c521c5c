"""Labels and runs held in memory (Python code's dicts and DataFrames), as a
:class:`~raglabel.analysis.sources.Source`.

A run's columns are the TREC reader's own table
(:class:`~raglabel.formats.trec.table.RunTable`) and go straight into the alignment that
small qrels and run files go through
(:class:`~raglabel.formats.trec.arrays.ArrayAlignment`): the same ranking rule, the same
deduplication, the same fingerprint, so the same report as ``raglabel eval`` on the
same rows written as files, with no file written. A qrels file or a run file may stand
in for any of the tables; it is read by the files' own numpy reader.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from raglabel.analysis import checks
from raglabel.errors import InputError
from raglabel.formats.limits import MAX_ID_CHARS
from raglabel.formats.maps import GradeMap
from raglabel.formats.trec import table
from raglabel.formats.trec.arrays import ArrayAlignment, align_qrels, read_run_table
from raglabel.formats.trec.table import QrelsTable, Text
from raglabel.metrics.run import RankedRun


class IdColumn:
    """Query or passage ids checked as a TREC file's reader checks them, as UTF-8 bytes.

    Made from the ids joined by NUL characters (``joined``), which a DataFrame library
    gives without a Python string per id, or from a list of them (``of``)."""

    __slots__ = ("values",)

    def __init__(self, joined: str, count: int, table: str, what: str) -> None:
        self.values = _checked_ids(joined, count, table, what)

    @classmethod
    def of(cls, ids: list[str], table: str, what: str) -> IdColumn:
        """A TypeError when an id is not a str (the caller says what it takes)."""
        return cls("\x00".join(ids), len(ids), table, what)

    @classmethod
    def repeated(cls, ids: list[str], counts: list[int], table: str, what: str) -> IdColumn:
        """Each of ``ids`` ``counts`` times over (a dict of dicts' queries): the few
        distinct ids are checked and encoded, not every row's copy."""
        column = cls.of(ids, table, what)
        column.values = np.repeat(column.values, counts)
        return column

    def __len__(self) -> int:
        return int(self.values.size)

    def text(self, row: int) -> str:
        return bytes(self.values[row]).decode("utf-8")


class LabelTable:
    """One judgment per row: query, passage and the label as given (before the grade
    map), with ``name`` saying where it came from (the report's ``labels``)."""

    __slots__ = ("docids", "labels", "name", "qids")

    def __init__(
        self, name: str, qids: IdColumn, docids: IdColumn, labels: NDArray[np.int64]
    ) -> None:
        self.name = name
        self.qids = qids.values
        self.docids = docids.values
        self.labels = labels


class RunTable(table.RunTable):
    """One retrieved passage per row: query, passage and score; rows in any order. The
    reader's table, made from checked id columns."""

    __slots__ = ()

    def __init__(self, qids: IdColumn, docids: IdColumn, scores: NDArray[np.float64]) -> None:
        super().__init__(qids.values, docids.values, scores)


class MemoryInputs:
    """Labels and named runs for one evaluation: each a table, or a file's path."""

    __slots__ = ("labels", "runs")

    def __init__(self, labels: LabelTable | Path, runs: list[tuple[str, RunTable | Path]]) -> None:
        self.labels = labels
        self.runs = runs

    @property
    def labels_name(self) -> str:
        """How the report names where the labels came from."""
        return str(self.labels) if isinstance(self.labels, Path) else self.labels.name

    def run_paths(self) -> dict[str, Path]:
        """The runs given as files, for the hints a file's first line gives."""
        return {name: run for name, run in self.runs if isinstance(run, Path)}


class MemorySource:
    """Tables (or files) aligned on numpy arrays; every run comes with the labels."""

    kind = "python"  # the numpy aligner, which ``--reader python`` names for files
    source = "human"

    def __init__(self, inputs: MemoryInputs, grade_map: GradeMap | None) -> None:
        if isinstance(inputs.labels, Path):
            self._arrays = align_qrels(inputs.labels, grade_map)
        else:
            self._arrays = _align_table(inputs.labels, grade_map)
        self.labels = self._arrays.labels
        self.warnings = self._arrays.warnings  # the aligner appends to this very list
        self._runs = inputs.runs

    def fingerprint(self) -> str:
        return self._arrays.fingerprint()

    def own_runs(self) -> list[RankedRun]:
        return [
            self.run_file(name, run) if isinstance(run, Path) else self._table_run(name, run)
            for name, run in self._runs
        ]

    def answers(self) -> NDArray[np.bool_] | None:
        return None

    def run_file(self, name: str, path: Path) -> RankedRun:
        try:
            return self._arrays.run(name, read_run_table(path))
        except InputError as exc:
            hint = checks.run_file_hint(path)
            if hint is None:
                raise
            raise InputError(exc.source, f"{exc.message} ({hint})", exc.line) from None

    def _table_run(self, name: str, run: RunTable) -> RankedRun:
        if len(run) == 0:
            # A run file with no line is refused by its reader; so is an empty table.
            raise InputError(f"run {name!r}", "has no entries")
        return self._arrays.run(name, run)


def _align_table(table: LabelTable, grade_map: GradeMap | None) -> ArrayAlignment:
    """The labels of a table, refused as a qrels file's reader refuses its lines."""
    where = f"qrels {table.name}"
    if table.labels.size == 0:
        raise InputError(where, "has no judgments")
    grade_map = GradeMap() if grade_map is None else grade_map
    grades, uncovered = grade_map.apply(table.labels)
    if uncovered.any():
        row = int(np.flatnonzero(uncovered)[0])
        raise InputError(
            where, f"{_pair(table, row)}: {grade_map.uncovered(int(table.labels[row]))}"
        )
    labels = QrelsTable(table.qids, table.docids, grades)
    if labels.index().repeats(labels.docids):
        seen: set[tuple[bytes, bytes]] = set()
        for row, pair in enumerate(zip(table.qids.tolist(), table.docids.tolist(), strict=True)):
            if pair in seen:
                raise InputError(
                    where, f"{_pair(table, row)} is judged twice; keep one judgment per pair"
                )
            seen.add(pair)
    return ArrayAlignment(labels)


def _pair(table: LabelTable, row: int) -> str:
    qid = bytes(table.qids[row]).decode("utf-8")
    docid = bytes(table.docids[row]).decode("utf-8")
    return f"passage {docid!r} of query {qid!r}"


def _checked_ids(joined: str, count: int, table: str, what: str) -> Text:
    """``count`` ids joined by NUL characters, as UTF-8 bytes, refusing what a TREC line
    could not hold: an empty id, white space, a NUL character, or more than
    ``MAX_ID_CHARS`` characters.

    The ids are checked and encoded as one text, and numpy cuts the bytes into a
    fixed-width array: a hundred thousand ids take a few milliseconds, where a loop in
    Python (or numpy's own conversion of str to bytes) took tens of them.
    """
    if count == 0:
        return np.zeros(0, dtype="S1")
    raw, ends = _separated(joined, table, what)
    if ends.size != count:  # a separator more than the ids need: an id holds one
        raise InputError(table, f"a {what} holds a NUL character")
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    lengths = ends - starts
    if not lengths.all():
        raise InputError(table, f"a {what} is empty")
    width = int(lengths.max())
    if width > MAX_ID_CHARS:  # bytes: a character is one or more, so check the text
        longest = max(joined.split("\x00"), key=len)
        if len(longest) > MAX_ID_CHARS:
            raise InputError(
                table,
                f"{what} {longest[:40]!r}... is {len(longest)} characters long; an id may"
                f" be at most {MAX_ID_CHARS}",
            )
    # Row i is the ``width`` bytes from id i's start, zeroed past the id's end: the
    # layout of numpy's fixed-width bytes. Every offset of the bytes (padded at the end)
    # is the start of one ``width``-byte item of a view that copies nothing, so picking
    # the ids' starts is one gather of whole items (half the time of picking rows of a
    # two-dimensional window).
    padded = raw + bytes(width)
    windows: Text = np.ndarray(
        (len(padded) - width + 1,), dtype=f"S{width}", buffer=padded, strides=(1,)
    )
    encoded: Text = windows[starts]
    cells = encoded.view(np.uint8).reshape(count, width)
    # Column by column from the shortest id's length: ids are mostly of similar
    # lengths, so a few columns. Multiplying a column by its mask took a quarter of
    # the time of assigning zeros where the mask says (0.4 ms against 1.6 for 100,000
    # ids), and a mask of the whole matrix twice as long.
    for column in range(int(lengths.min()), width):
        cells[:, column] *= lengths > column
    return encoded


def _separated(joined: str, table: str, what: str) -> tuple[bytes, NDArray[np.int64]]:
    """The ids' UTF-8 bytes with a NUL after the last, and where each NUL is, once the
    text is known to hold no white space (else an :class:`InputError` naming an id)."""
    if joined and joined.isascii():  # known without reading the text
        raw = joined.encode("ascii") + b"\x00"
        codes = np.frombuffer(raw, dtype=np.uint8)
        # ASCII's white space (\t \n \v \f \r, \x1c-\x1f and space) and NUL are all
        # codes up to 32: one pass finds the separators and shows that there is no
        # white space, unless some code up to 32 is not a NUL (then the text is read).
        low = np.flatnonzero(codes <= 32)
        if not codes[low].any():
            return raw, low.astype(np.int64, copy=False)
    _refuse_white_space(joined, table, what)
    raw = joined.encode("utf-8") + b"\x00"
    ends = np.flatnonzero(np.frombuffer(raw, dtype=np.uint8) == 0)
    return raw, ends.astype(np.int64, copy=False)


def _refuse_white_space(joined: str, table: str, what: str) -> None:
    """Python's own reading of white space (Unicode's, as ``str.split`` has it), which
    visits every character: a hundred thousand ids cost about a millisecond."""
    if len(joined.split()) != 1:
        bad = next(i for i in joined.split("\x00") if len(i.split()) != 1 or i != i.strip())
        raise InputError(table, f"{what} {bad!r} is empty or holds white space")
