"""Labels and runs aligned on numpy byte arrays: files of a few megabytes, tables from
Python code, samples, a small project's stored rankings and the agreement figures' runs.

The small-input twin of :mod:`raglabel.formats.trec.align` (polars, for large files),
with the same results, which the tests check against the exact reader. Canonical files
are cut into columns by :mod:`raglabel.formats.trec.columns`; any other file goes
through the exact line reader, which names the line of any error.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from raglabel.formats.limits import MAX_ID_CHARS
from raglabel.formats.lines import check_readable, without_byte_order_mark
from raglabel.formats.maps import GradeMap
from raglabel.formats.notices import keep_first, unknown_queries
from raglabel.formats.trec.columns import split_fields
from raglabel.formats.trec.keys import (
    PairIndex,
    distinct_in_blocks,
    filtered_rows,
    id_blocks,
    key_filter,
    pair_keys,
)
from raglabel.formats.trec.order import score_order, tied_runs, trec_scores
from raglabel.formats.trec.table import QrelsTable, RunTable, Text
from raglabel.metrics.labels import LabelSet, counts_from_grades
from raglabel.metrics.run import RankedRun

# hashlib loads OpenSSL on import (about a tenth of a quick eval's own start-up); the
# built-in SHA-256 module gives the same digest without it, but hashes six times slower
# than OpenSSL (which uses the CPU's SHA instructions): the two cost the same at about
# 1.6 MB, so above a megabyte OpenSSL is worth its import. Its name differs by version.
if TYPE_CHECKING:
    from hashlib import sha256 as _builtin_sha256

    from raglabel.formats.trec.rows import QrelsRows
else:
    try:
        from _sha256 import sha256 as _builtin_sha256  # Python 3.11
    except ImportError:  # Python 3.12+, or a build without it
        try:
            from _sha2 import sha256 as _builtin_sha256
        except ImportError:
            from hashlib import sha256 as _builtin_sha256

_BUILTIN_SHA_BYTES = 1 << 20
#: From this many rows a table is graded on a thread beside its ranking: more than the
#: inputs the small strategy gets by size hold (8 MB, about 230,000 run lines), whose
#: quick eval would pay 6 ms to import concurrent.futures for a few ms saved.
_THREAD_ROWS = 1 << 18


def read_qrels_table(path: Path, grade_map: GradeMap | None = None) -> QrelsTable:
    """A qrels file's labels, grades mapped by ``grade_map``: the reader's one entry for
    labels. A canonical file is cut by numpy; any other, or one with a wrong or doubtful
    line (a label the map lacks, a pair judged twice, an id past the limit), is read by
    lines, and exactly where that is needed, so that an error names its line."""
    check_readable(path)
    grade_map = GradeMap() if grade_map is None else grade_map
    data = without_byte_order_mark(path.read_bytes())
    fields = split_fields(data, 4)
    labels = None if fields is None else fields.integers(3)
    if fields is not None and labels is not None:
        grades, uncovered = grade_map.apply(labels)
        # Ids are cut to a common width, so one long id makes every row that wide: past
        # a few times the file's size, the line reader is the cheaper way (and past the
        # id limit, in bytes so surely in characters, it names the line). Twice the
        # widest field bounds the two ids' widths and settles most files without a pass
        # over the columns.
        widths = 2 * fields.widest
        if widths > MAX_ID_CHARS or fields.rows * widths > 4 * len(data):
            widths = fields.longest(0) + fields.longest(2)
        if not uncovered.any() and widths <= MAX_ID_CHARS and fields.rows * widths <= 4 * len(data):
            qids, docids = fields.text(0), fields.text(2)
            index = PairIndex(qids, docids)
            if not index.repeats(docids):  # else the exact reader names the lines
                return QrelsTable(qids, docids, grades, index)
    from raglabel.formats.trec.rows import read_qrels_lines

    return QrelsTable.of_rows(read_qrels_lines(path, grade_map))


def align_qrels(path: Path, grade_map: GradeMap | None) -> ArrayAlignment:
    """Labels from a qrels file, aligned for runs."""
    return ArrayAlignment(read_qrels_table(path, grade_map))


def read_run_table(path: Path) -> RunTable:
    """A run file's table; a file that is not plain goes to the exact reader."""
    check_readable(path)
    fields = split_fields(without_byte_order_mark(path.read_bytes()), 6)
    scores = None if fields is None else fields.decimals(4)
    if fields is not None and scores is not None:
        return RunTable(fields.text(0), fields.text(2), scores)
    from raglabel.formats.trec.rows import read_run_rows

    return RunTable.of_rows(read_run_rows(path))


def _sha256_hex(data: bytes) -> str:
    # Once some module has imported hashlib (pandas and polars do: any notebook, the
    # API), OpenSSL costs nothing more to use, and it is the faster at every size (the
    # API's fingerprint of 100,000 labels: 8.0 ms with the built-in module, 5.6 with it).
    if "hashlib" in sys.modules or len(data) > _BUILTIN_SHA_BYTES:
        import hashlib

        return hashlib.sha256(data).hexdigest()
    return _builtin_sha256(data).hexdigest()


def _byte_order_words(text: Text) -> list[NDArray[np.uint64]]:
    """Sort keys of ids, least significant first, that order them as their bytes do:
    the big-endian 8-byte words of the zero-padded ids (ids hold no NUL byte, so the
    padding sorts a prefix first, as bytes do). Sorting integers instead of strings
    takes a third less time."""
    width = -(-max(text.itemsize, 1) // 8) * 8
    words = np.ascontiguousarray(text.astype(f"S{width}")).view(">u8")
    columns = words.reshape(text.size, width // 8)
    return [columns[:, i] for i in range(width // 8 - 1, -1, -1)]


# Compared and hashed by identity: its arrays compare element-wise, so a field-by-field
# __eq__ could only raise. A plain class, not a dataclass, so that no code is generated
# and compiled for it at every eval's start-up.
class ArrayAlignment:
    """Labels plus, per run, the warnings its alignment raised."""

    __slots__ = ("_filter", "_index", "docids", "grades", "labels", "qids", "warnings")

    def __init__(self, table: QrelsTable) -> None:
        index = table.index()
        self.qids = table.qids
        self.docids = table.docids
        self.grades = table.grades
        counts = counts_from_grades(index.ids.size, index.qidx, table.grades)
        self.labels = LabelSet(tuple(i.decode("utf-8") for i in index.ids.tolist()), counts)
        self.warnings: list[str] = []
        self._index = index
        self._filter: NDArray[np.uint8] | None = None  # made for the first run

    @classmethod
    def from_rows(cls, qrels: QrelsRows) -> ArrayAlignment:
        """Labels from qrels held as Python lists (no pair twice)."""
        return cls(QrelsTable.of_rows(qrels))

    def fingerprint(self) -> str:
        """SHA-256 of the sorted ``qid, docid, grade`` lines (ids as UTF-8 bytes), the same
        digest on every path."""
        index = self._index
        order = np.lexsort((*_byte_order_words(self.docids), index.qidx))
        n, q_width, d_width = order.size, index.ids.itemsize, self.docids.itemsize
        # Each line as a row of fixed width, its ids zero-padded, written column by
        # column into one table (no copy of each part to join them): the query ids are
        # read from the sorted distinct ones, a small array that stays in cache.
        lines = np.empty((n, q_width + d_width + 4), dtype=np.uint8)
        lines[:, :q_width] = index.ids[index.qidx[order]].view(np.uint8).reshape(n, q_width)
        lines[:, q_width] = ord("\t")
        docids = lines[:, q_width + 1 : q_width + 1 + d_width]
        docids[...] = self.docids[order].view(np.uint8).reshape(n, d_width)
        lines[:, q_width + 1 + d_width] = ord("\t")
        np.add(self.grades[order], ord("0"), out=lines[:, -2], casting="unsafe")
        lines[:, -1] = ord("\n")
        # Ids hold no NUL byte, so dropping the zero padding leaves exactly the lines
        # (bytes.translate deletes them in one C loop, faster than a mask over the table).
        text = lines.tobytes().translate(None, b"\0")
        return "sha256:" + _sha256_hex(text)[:16]

    def run(
        self, name: str, table: RunTable, k_override: dict[str, int] | None = None
    ) -> RankedRun:
        """Rank (trec_eval's order, or each query's list order when the table has no
        scores), deduplicate and grade one run; ``k_override`` pins a query's cutoff."""
        qids, docids, scores, contains = table.qids, table.docids, table.scores, table.contains
        n_queries = self.labels.n_queries
        starts, lengths = id_blocks(qids)
        heads = qids[starts]
        if n_queries:
            found = np.minimum(np.searchsorted(self._index.ids, heads), n_queries - 1)
            position = np.repeat(found, lengths)
            known = np.repeat(self._index.ids[found] == heads, lengths)
        else:  # no labels: every query is unknown
            position = np.zeros(qids.size, dtype=np.int64)
            known = np.zeros(qids.size, dtype=np.bool_)
        if not known.all():
            values, first = np.unique(qids[~known], return_index=True)
            unknown = [v.decode("utf-8") for v in values[np.argsort(first)].tolist()]
            self.warnings.append(unknown_queries(name, unknown))
            position, docids = position[known], docids[known]
            scores = None if scores is None else scores[known]
            contains = None if contains is None else contains[known]
        position = position.astype(np.int64)
        keys = pair_keys(position, docids)
        # Grading (in the table's order) and ranking share nothing and are numpy calls
        # that release the GIL: on a large table they run on two cores.
        if keys.size >= _THREAD_ROWS:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=1) as pool:
                graded = pool.submit(self._grades_of, position, docids, keys)
                order, distinct = _ranked(position, scores, docids, keys)
                grades = graded.result()[order]
        else:
            order, distinct = _ranked(position, scores, docids, keys)
            grades = self._grades_of(position, docids, keys)[order]
        qidx = position[order]
        contains = None if contains is None else contains[order]
        keep = None
        if not distinct:
            ranked_keys = keys[order]
            keep = self._first_occurrences(
                name, qidx, docids[order], ranked_keys, np.sort(ranked_keys)
            )
        if keep is not None:
            qidx, grades = qidx[keep], grades[keep]
            contains = None if contains is None else contains[keep]
        lengths = np.bincount(qidx, minlength=n_queries)
        pinned = None
        if k_override:
            pinned = np.array([k_override.get(q, 0) for q in self.labels.query_ids], np.int64)
        return RankedRun(
            name=name,
            offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
            grades=grades,
            contains=contains,
            k_override=pinned,
        )

    def _grades_of(
        self, qidx: NDArray[np.int64], docids: Text, keys: NDArray[np.uint64]
    ) -> NDArray[np.int8]:
        grades = np.zeros(qidx.size, dtype=np.int8)
        index = self._index
        if index.keys_sorted.size == 0 or qidx.size == 0:
            return grades
        # The labels' filter rules most rows without a grade out in one gather; only the
        # rest are searched, in key order, which keeps the searches in cache.
        if self._filter is None:
            self._filter = key_filter(index.keys_sorted)
        maybe = filtered_rows(self._filter, keys)
        wanted = keys[maybe]
        by_key = np.argsort(wanted)
        slot = np.empty(wanted.size, dtype=np.int64)
        slot[by_key] = np.searchsorted(index.keys_sorted, wanted[by_key])
        np.minimum(slot, index.keys_sorted.size - 1, out=slot)
        hit = index.keys_sorted[slot] == wanted
        matched = maybe[hit]
        source = index.key_order[slot[hit]]
        same = (index.qidx[source] == qidx[matched]) & (self.docids[source] == docids[matched])
        grades[matched[same]] = self.grades[source[same]]
        if not same.all():
            # Two qrels pairs sharing a key: ask the strings, for these rows only.
            exact = {
                (int(q), d): int(g)
                for q, d, g in zip(
                    index.qidx.tolist(), self.docids.tolist(), self.grades.tolist(), strict=True
                )
            }
            for row in matched[~same].tolist():
                grades[row] = exact.get((int(qidx[row]), docids[row]), 0)
        return grades

    def _first_occurrences(
        self,
        name: str,
        qidx: NDArray[np.int64],
        docids: Text,
        keys: NDArray[np.uint64],
        sorted_keys: NDArray[np.uint64],
    ) -> NDArray[np.bool_] | None:
        """Mask over ranked rows keeping each passage's best-ranked occurrence (None: all)."""
        repeated = sorted_keys[1:][sorted_keys[1:] == sorted_keys[:-1]]
        if repeated.size == 0:
            return None
        # Confirm every repeat on the strings: a key collision is not a duplicate.
        rows = np.flatnonzero(np.isin(keys, repeated))
        docs = [d.decode("utf-8") for d in docids[rows].tolist()]
        pairs = zip(rows.tolist(), qidx[rows].tolist(), docs, strict=True)
        return keep_first(name, keys.size, pairs, self.labels.query_ids, self.warnings)


def _ranked(
    qidx: NDArray[np.int64],
    scores: NDArray[np.float64] | None,
    docids: Text,
    keys: NDArray[np.uint64],
) -> tuple[NDArray[np.int64], bool]:
    """The rows in ranked order, and True when surely no (query, passage) pair is met
    twice (False: not sure, the ranked keys are checked)."""
    if scores is None:
        order = np.argsort(qidx, kind="stable").astype(np.int64)
    else:
        order = _ranking_order(qidx, scores, docids)
    starts = np.concatenate([[0], np.flatnonzero(qidx[1:] != qidx[:-1]) + 1]).astype(np.int64)
    return order, qidx.size == 0 or distinct_in_blocks(keys, starts, qidx)


def _ranking_order(
    qidx: NDArray[np.int64], run_scores: NDArray[np.float64], docids: Text
) -> NDArray[np.int64]:
    """Label order of queries; within one, trec_eval's order (:mod:`.order`)."""
    scores = trec_scores(run_scores)
    order, _ = score_order(qidx, scores)
    ties = tied_runs(qidx[order], scores[order])
    if ties is not None:
        rows, group = ties
        _, rank = np.unique(docids[order[rows]], return_inverse=True)
        order[rows] = order[rows][np.lexsort((-rank, group))]
    return order
