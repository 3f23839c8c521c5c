"""Turn qrels and run frames into the arrays the metric engine takes.

Run order follows trec_eval: score descending, ties by passage id descending as
bytes; the file's own order and rank column are never trusted. Queries travel as
label indexes (found through polars' categorical codes, not string comparisons);
joining a run to its grades goes through 64-bit keys of (query, docid), and every
key match is then confirmed on the passage ids themselves, so a collision cannot
mislabel an entry.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from raglabel.formats.notices import keep_first, unknown_queries
from raglabel.formats.trec.keys import distinct_in_blocks, filtered_rows, key_filter
from raglabel.formats.trec.ranking import assemble, block_starts, ranking_order
from raglabel.metrics.labels import LabelSet, counts_from_grades
from raglabel.metrics.run import RankedRun

_SEED = 0x5EED
_FINGERPRINT_ROWS = 100_000
# An odd 64-bit constant (the golden ratio's): spreads query indexes over all bits.
_MIX = np.uint64(0x9E3779B97F4A7C15)
# Above this many slice ends a part is joined entry by entry (a loop of slices is cheap
# only while each slice is long).
_MAX_SLICES = 4096


NOT_GROUPED = "its lines are not grouped by query"

#: A String id column is looked up one run of equal ids at a time (in Python) when its
#: runs average at least this many rows; else every row goes through categorical codes.
_ROWS_PER_LOOKUP = 8


class NotInBlocks(Exception):  # noqa: N818 (a refusal, not an error: the file is read whole)
    """A run that cannot be aligned block by block; the message says why."""


@dataclass
class Alignment:
    """Labels plus, per run, the warnings its alignment raised."""

    labels: LabelSet
    qrels: pl.DataFrame
    warnings: list[str] = field(default_factory=list)
    _qidx: NDArray[np.int32] = field(default_factory=lambda: np.zeros(0, np.int32))
    _key_order: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))
    _keys_sorted: NDArray[np.uint64] = field(default_factory=lambda: np.zeros(0, np.uint64))
    # Label index of each query id, for String ids (see _label_index); filled once.
    _query_positions: dict[str, int] = field(default_factory=dict)
    # One bit per value of a key's low bits: whether some label's key has them (see
    # grades_of and keys.key_filter).
    _filter: NDArray[np.uint8] = field(default_factory=lambda: np.zeros(1, np.uint8))

    @classmethod
    def from_qrels(cls, qrels: pl.DataFrame) -> Alignment:
        """Labels from a ``qid, docid, grade`` frame; queries sorted by id (as bytes)."""
        # The parser leaves the columns in dozens of chunks; the fingerprint's sort and
        # every block's gathers of passage ids and grades run faster on one (the sort
        # by half), and joining them costs a copy of the labels once.
        qrels = qrels.rechunk()
        query_ids, qidx = _query_index(qrels["qid"])
        counts = counts_from_grades(len(query_ids), qidx, qrels["grade"].to_numpy())
        labels = LabelSet(tuple(query_ids), counts)
        keys = _pair_keys(qidx, qrels["docid"])
        # Not a stable sort (half the time): labels whose keys collide are told apart by
        # their passage ids whichever of them a search meets first (see grades_of).
        order = np.argsort(keys).astype(np.int64)
        return cls(
            labels=labels,
            qrels=qrels,
            _qidx=qidx.astype(np.int32),
            _key_order=order,
            _keys_sorted=keys[order],
            _filter=key_filter(keys),
        )

    def fingerprint(self) -> str:
        """SHA-256 of the sorted ``qid, docid, grade`` lines (ids as UTF-8 bytes), the same
        digest on every path."""
        # Label indexes follow the sorted query ids, and sort faster than the ids.
        order = (
            pl.DataFrame({"_q": self._qidx, "docid": self.qrels["docid"]})
            .select(pl.arg_sort_by(["_q", "docid"]))
            .to_series()
        )
        digest = hashlib.sha256()
        # The sorted order, then the lines a slice at a time: a sorted copy of a million
        # labels and their text held whole (as frame, str and bytes) was the peak of a
        # large evaluation.
        for start in range(0, len(order), _FINGERPRINT_ROWS):
            rows = self.qrels[order[start : start + _FINGERPRINT_ROWS]]
            lines = rows.select(pl.format("{}\t{}\t{}\n", "qid", "docid", "grade").str.join(""))
            digest.update(lines.item().encode())
        return "sha256:" + digest.hexdigest()[:16]

    def grades_of(
        self, frame: pl.DataFrame, qidx: NDArray[np.int32], keys: NDArray[np.uint64]
    ) -> NDArray[np.int8]:
        """Grade of every (query ``qidx``, ``docid``) row of ``frame``; 0 where it has none."""
        grades = np.zeros(frame.height, dtype=np.int8)
        if self._keys_sorted.size == 0 or frame.height == 0:
            return grades
        # The labels' filter, made once, rules out most rows in one gather (a hash set
        # built for every block of a large run cost more than the rest of grading); the
        # binary search then runs only on the few rows left and keeps those whose key a
        # label has. Searched in key order, successive searches walk the same few paths
        # of the sorted keys, which stay in cache (a third cheaper than in row order).
        maybe = filtered_rows(self._filter, keys)
        wanted = keys[maybe]
        by_key = np.argsort(wanted)
        slot = np.empty(wanted.size, dtype=np.intp)
        slot[by_key] = np.searchsorted(self._keys_sorted, wanted[by_key])
        np.minimum(slot, self._keys_sorted.size - 1, out=slot)
        hit = self._keys_sorted[slot] == wanted
        matched = maybe[hit].astype(np.int64)
        if matched.size == 0:
            return grades
        source = self._key_order[slot[hit]]
        ours = frame["docid"].gather(matched)
        theirs = self.qrels["docid"].gather(source)
        same = (qidx[matched] == self._qidx[source]) & (ours == theirs).to_numpy()
        grades[matched[same]] = self.qrels["grade"].to_numpy()[source[same]]
        if not same.all():
            # Two qrels pairs sharing a key: ask the strings, for these rows only.
            rows = matched[~same]
            grades[rows] = self._joined_grades(qidx[rows], frame["docid"].gather(rows))
        return grades

    def _joined_grades(self, qidx: NDArray[np.int32], docids: pl.Series) -> NDArray[np.int8]:
        wanted = pl.DataFrame({"_q": qidx, "docid": docids})
        have = pl.DataFrame({"_q": self._qidx, "docid": self.qrels["docid"]}).with_columns(
            self.qrels["grade"]
        )
        joined = wanted.join(have, on=["_q", "docid"], how="left", maintain_order="left")
        grades: NDArray[np.int8] = joined["grade"].fill_null(0).to_numpy().astype(np.int8)
        return grades

    def run(
        self,
        name: str,
        frame: pl.DataFrame,
        *,
        in_list_order: bool = False,
        k_override: dict[str, int] | None = None,
        unknown: list[str] | None = None,
    ) -> RankedRun:
        """Rank, deduplicate and grade a ``qid, docid[, score][, contains]`` run frame.

        ``in_list_order`` keeps each query's rows as given (lists without scores). The
        qid column may be String or Categorical. Passage ids are compared only among
        tied scores and for key matches; everything else runs on integer arrays. With
        ``unknown``, the ids of queries the labels lack go there (in file order) instead
        of into a warning.
        """
        frame, qidx = self._known_queries(name, frame, unknown)
        starts = block_starts(qidx)
        keys = _pair_keys(qidx, frame["docid"])
        # Grading (mostly a hash probe in polars) and ranking (numpy) release the GIL
        # and share nothing, so they run on both cores.
        with ThreadPoolExecutor(max_workers=1) as pool:
            graded = pool.submit(self.grades_of, frame, qidx, keys)
            distinct = distinct_in_blocks(keys, starts, qidx)
            moves = None
            if not in_list_order:
                moves = ranking_order(qidx, starts, as_numpy(frame["score"]), frame["docid"])
            grades = graded.result()
        contains = frame["contains"].to_numpy() if "contains" in frame.columns else None
        if moves is not None:
            qidx, grades = moves.queries(qidx), moves.apply(grades)
            contains = None if contains is None else moves.apply(contains)
        keep = None
        if not distinct:
            order = None if moves is None else moves.permutation(frame.height)
            keep = self._first_occurrences(name, frame, qidx, keys, order)
        if keep is not None:
            qidx, grades = qidx[keep], grades[keep]
            contains = None if contains is None else contains[keep]
        pinned = None
        if k_override:
            pinned = np.array([k_override.get(q, 0) for q in self.labels.query_ids], np.int64)
        return assemble(
            name, self.labels.n_queries, qidx, grades, contains=contains, k_override=pinned
        )

    def run_in_blocks(self, name: str, frames: Iterator[pl.DataFrame | None]) -> RankedRun:
        """The run whose blocks of whole queries ``frames`` gives, ranked and graded block
        by block: what :meth:`run` makes of the whole file.

        Raises :class:`NotInBlocks` where that is not sure, and the caller reads the file
        whole: a block the quick reader refused (None), a query met again in a later
        block (the file is not grouped by query), or a block raising a warning other than
        queries the labels lack (those are gathered into the whole file's one warning;
        the others count and name over the whole file).
        """
        parts: list[RankedRun] = []
        seen = np.zeros(self.labels.n_queries, dtype=np.bool_)
        warned = len(self.warnings)
        # Queries the labels lack, over all blocks: one warning at the end, as the file
        # read whole gives it (each query's lines are in one block, in file order).
        unknown: list[str] = []
        for frame in frames:
            if frame is None:
                raise NotInBlocks("a block needs the exact reader")
            before = len(unknown)
            part = self.run(name, frame, unknown=unknown)
            if len(self.warnings) > warned:
                del self.warnings[warned:]
                raise NotInBlocks("a block raised a warning")
            present = part.lengths > 0
            if bool((seen & present).any()) or not set(unknown[:before]).isdisjoint(
                unknown[before:]
            ):
                raise NotInBlocks(NOT_GROUPED)
            seen |= present
            parts.append(part)
        if unknown:
            self.warnings.append(unknown_queries(name, unknown))
        return _joined(name, self.labels.n_queries, parts)

    def _known_queries(
        self, name: str, frame: pl.DataFrame, unknown: list[str] | None = None
    ) -> tuple[pl.DataFrame, NDArray[np.int32]]:
        """``frame`` without rows of queries the labels lack, and each row's label index."""
        qidx = self._label_index(frame["qid"])
        known = qidx >= 0
        if bool(known.all()):
            return frame, qidx
        missing = frame["qid"].filter(pl.Series(~known)).unique(maintain_order=True)
        ids = missing.cast(pl.String).to_list()
        if unknown is None:
            self.warnings.append(unknown_queries(name, ids))
        else:
            unknown += ids
        return frame.filter(pl.Series(known)), qidx[known]

    def _label_index(self, qid: pl.Series) -> NDArray[np.int32]:
        """Label index of each value of ``qid``, -1 for an unknown query.

        Categorical codes are shared by every categorical series alive in the process, so
        a lookup table indexed by code maps a whole column in one gather. Alive matters:
        polars frees the shared categories when no series holds them any more, and the
        next cast numbers the ids afresh. So the run's categorical series is held until
        the labels' codes are read, or a String column (a project's stored runs) would
        be numbered twice, in two orders.
        """
        if qid.len() == 0:
            return np.zeros(0, dtype=np.int32)
        if qid.dtype == pl.String:
            # Rows of one query come together (a run file, a block of one, a project's
            # ranked entries): each run of equal ids is looked up once, which costs far
            # less than numbering every row's id in the shared categorical table.
            runs = qid.rle()
            if runs.len() * _ROWS_PER_LOOKUP <= qid.len():
                if not self._query_positions:
                    self._query_positions.update(
                        (q, i) for i, q in enumerate(self.labels.query_ids)
                    )
                positions = self._query_positions
                heads = runs.struct.field("value").to_list()
                found = np.array([positions.get(q, -1) for q in heads], dtype=np.int32)
                qidx: NDArray[np.int32] = np.repeat(found, runs.struct.field("len").to_numpy())
                return qidx
        categorical = qid.cast(pl.Categorical)
        ours = pl.Series(self.labels.query_ids, dtype=pl.String).cast(pl.Categorical)
        codes = as_numpy(categorical.to_physical())
        label_codes = ours.to_physical().to_numpy()
        table = np.full(max(int(codes.max()), int(label_codes.max(initial=0))) + 1, -1, np.int32)
        table[label_codes] = np.arange(label_codes.size, dtype=np.int32)
        coded: NDArray[np.int32] = table[codes]
        return coded

    def _first_occurrences(
        self,
        name: str,
        frame: pl.DataFrame,
        qidx: NDArray[np.int32],
        keys: NDArray[np.uint64],
        order: NDArray[np.int64] | None,
    ) -> NDArray[np.bool_] | None:
        """Mask over ranked rows keeping each passage's best-ranked occurrence (None: all).

        ``keys`` are in file order; ``qidx`` and the mask in ranked order; ``order`` maps
        ranked rows back to ``frame``.
        """
        if pl.Series(keys).n_unique() == frame.height:
            return None
        series = pl.Series(keys if order is None else keys[order])
        repeat = (~series.is_first_distinct()).to_numpy()
        # Confirm every repeat on the strings: a key collision is not a duplicate.
        rows = np.flatnonzero(series.is_in(series.filter(pl.Series(repeat)).implode()).to_numpy())
        source = rows if order is None else order[rows]
        docids = frame["docid"].gather(source).to_list()
        pairs = zip(rows.tolist(), qidx[rows].tolist(), docids, strict=True)
        return keep_first(name, frame.height, pairs, self.labels.query_ids, self.warnings)


def _joined(name: str, n_queries: int, parts: list[RankedRun]) -> RankedRun:
    """One run from parts that each hold some queries' whole rankings."""
    lengths = np.zeros(n_queries, dtype=np.int64)
    for part in parts:
        lengths += part.lengths
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    grades = np.zeros(int(offsets[-1]), dtype=np.int8)
    while parts:
        part = parts.pop()
        # A part holds each of its queries whole, so consecutive label indexes it holds
        # (queries it lacks that are empty everywhere do not break them) are one slice of
        # the part and one slice of the whole run: copied as slices, with no index per
        # entry. A part is at most as many slices as it holds queries.
        holds = np.concatenate([[False], part.lengths == lengths, [False]])
        edges = np.flatnonzero(holds[1:] != holds[:-1])
        if edges.size <= _MAX_SLICES:
            firsts, ends = edges[::2], edges[1::2]
            spans = zip(
                offsets[firsts].tolist(),
                offsets[ends].tolist(),
                part.offsets[firsts].tolist(),
                part.offsets[ends].tolist(),
                strict=True,
            )
            for start, stop, own_start, own_stop in spans:
                grades[start:stop] = part.grades[own_start:own_stop]
            continue
        # Each of the part's entries moves to its query's place in the whole run. Not
        # through the part's cached query index: held for every part, those indexes
        # would be eight bytes an entry of the whole run.
        qidx = np.repeat(np.arange(n_queries, dtype=np.int64), part.lengths)
        rank = np.arange(part.grades.size, dtype=np.int64) - part.offsets[qidx]
        grades[offsets[qidx] + rank] = part.grades
    return RankedRun(name=name, offsets=offsets, grades=grades)


def _pair_keys(qidx: NDArray[np.integer], docids: pl.Series) -> NDArray[np.uint64]:
    """Equal (query index, docid) pairs get equal keys; different ones almost never do."""
    keys = qidx.astype(np.uint64)
    keys *= _MIX
    keys ^= as_numpy(docids.hash(seed=_SEED))
    return keys


def as_numpy(series: pl.Series) -> NDArray[Any]:
    """A column without nulls as one numpy array.

    The parser leaves a long column in many chunks, and polars joins them in newly
    mapped memory, every page of which faults on first touch; numpy joins the chunks'
    own arrays (no copies) into memory it maps in huge pages, several times faster.
    """
    if series.n_chunks() == 1 or series.null_count():
        return series.to_numpy()
    return np.concatenate([chunk.to_numpy() for chunk in series.get_chunks()])


def _query_index(qids: pl.Series) -> tuple[list[str], NDArray[np.int64]]:
    """The distinct query ids in order (as bytes), and each row's position among them.

    Labels nearly always come grouped by query: then each run of equal ids is looked up
    once, which costs a fraction of polars' distinct values, sort and join (40 ms for
    400k labels, at the start of an evaluation, before its first block is scored).
    Python orders strings by code point, which is the order of their UTF-8 bytes.
    """
    if qids.dtype == pl.String and not qids.null_count():
        runs = qids.rle()
        if runs.len() * _ROWS_PER_LOOKUP <= qids.len():
            heads: list[str] = runs.struct.field("value").to_list()
            ordered = sorted(set(heads))
            positions = {qid: i for i, qid in enumerate(ordered)}
            found = np.array([positions[qid] for qid in heads], dtype=np.int64)
            qidx: NDArray[np.int64] = np.repeat(found, runs.struct.field("len").to_numpy())
            return ordered, qidx
    query_ids = qids.unique().sort()
    return query_ids.to_list(), _index_of(qids, query_ids)


def _index_of(values: pl.Series, sorted_ids: pl.Series) -> NDArray[np.int64]:
    """Position of each value in ``sorted_ids`` (which must contain every value)."""
    lookup = pl.DataFrame({"_id": sorted_ids, "_pos": np.arange(len(sorted_ids))})
    joined = pl.DataFrame({"_id": values}).join(lookup, on="_id", how="left", maintain_order="left")
    positions: NDArray[np.int64] = joined["_pos"].to_numpy().astype(np.int64)
    return positions
