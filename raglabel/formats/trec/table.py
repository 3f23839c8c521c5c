"""A run and labels as the TREC reader hands them on: one row per line (or entry), in
input order.

Ids are UTF-8 bytes in fixed-width numpy arrays, zero-padded (an id holds no NUL
byte, so the padding is unambiguous and they compare as their bytes do, which is
trec_eval's order). A run file, a table from Python code, a samples file's rankings and
a project's stored rankings all arrive as one, and one alignment ranks and grades it
(:class:`~raglabel.formats.trec.arrays.ArrayAlignment`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from raglabel.formats.trec.keys import PairIndex

if TYPE_CHECKING:
    from raglabel.formats.trec.rows import QrelsRows, RunRows

Text = NDArray[np.bytes_]


def as_text(values: list[str]) -> Text:
    """Ids as UTF-8 bytes, fixed-width, as the columns of a file are cut."""
    return np.array([v.encode("utf-8") for v in values], dtype=np.bytes_)


def as_strings(column: Text) -> list[str]:
    """Ids as Python strings again."""
    try:
        strings: list[str] = column.astype(np.str_).tolist()  # ASCII only, and fast
    except UnicodeDecodeError:
        strings = [value.decode("utf-8") for value in column.tolist()]
    return strings


class QrelsTable:
    """Labels as the TREC reader hands them on: query id, passage id and grade (1..5)
    of every row, no (query, passage) pair twice. Its :meth:`index` is built once, by
    the reader when it checked for repeated pairs, and the alignment uses it again."""

    __slots__ = ("_index", "docids", "grades", "qids")

    def __init__(
        self, qids: Text, docids: Text, grades: NDArray[np.int8], index: PairIndex | None = None
    ) -> None:
        self.qids = qids
        self.docids = docids
        self.grades = grades
        self._index = index

    @classmethod
    def of_rows(cls, rows: QrelsRows) -> QrelsTable:
        """The table of labels held as Python lists."""
        return cls(as_text(rows.qids), as_text(rows.docids), np.array(rows.grades, np.int8))

    def __len__(self) -> int:
        return int(self.qids.size)

    def index(self) -> PairIndex:
        if self._index is None:
            self._index = PairIndex(self.qids, self.docids)
        return self._index

    def rows(self) -> QrelsRows:
        """The labels as Python lists."""
        from raglabel.formats.trec.rows import QrelsRows

        return QrelsRows(as_strings(self.qids), as_strings(self.docids), self.grades.tolist())


# A plain class with slots, not a dataclass: no code generated at every eval's start-up.
class RunTable:
    """Query id, passage id and score of every row; ``scores`` None when each query's
    rows are in rank order already (samples, stored rankings), and ``contains`` (per
    row, whether the passage holds the query's expected answer) when it is known."""

    __slots__ = ("contains", "docids", "qids", "scores")

    def __init__(
        self,
        qids: Text,
        docids: Text,
        scores: NDArray[np.float64] | None,
        contains: NDArray[np.bool_] | None = None,
    ) -> None:
        self.qids = qids
        self.docids = docids
        self.scores = scores
        self.contains = contains

    @classmethod
    def of_rows(cls, rows: RunRows) -> RunTable:
        """The table of a run read by lines."""
        return cls(as_text(rows.qids), as_text(rows.docids), np.array(rows.scores, np.float64))

    def __len__(self) -> int:
        return int(self.qids.size)

    def where(self, keep: NDArray[np.bool_]) -> RunTable:
        """The rows ``keep`` marks, in order."""
        return RunTable(
            self.qids[keep],
            self.docids[keep],
            None if self.scores is None else self.scores[keep],
            None if self.contains is None else self.contains[keep],
        )
