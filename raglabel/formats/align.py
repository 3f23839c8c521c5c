"""Turn qrels and run frames into the arrays the metric engine takes.

Run order follows trec_eval: score descending, ties by passage id descending as
bytes; the file's own order and rank column are never trusted. Joining a run to
its grades goes through 64-bit hashes of (qid, docid), and every hash match is then
confirmed on the strings themselves, so a collision cannot mislabel an entry.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import polars as pl
from numpy.typing import NDArray

from raglabel.metrics.labels import LabelSet, counts_from_grades
from raglabel.metrics.run import RankedRun


@dataclass
class Alignment:
    """Labels plus, per run, the warnings its alignment raised."""

    labels: LabelSet
    qrels: pl.DataFrame
    warnings: list[str] = field(default_factory=list)
    _key_order: NDArray[np.int64] | None = None
    _keys_sorted: NDArray[np.uint64] | None = None

    @classmethod
    def from_qrels(cls, qrels: pl.DataFrame) -> Alignment:
        """Labels from a ``qid, docid, grade`` frame; queries sorted by id (as bytes)."""
        query_ids = qrels["qid"].unique().sort()
        qidx = _index_of(qrels["qid"], query_ids)
        counts = counts_from_grades(len(query_ids), qidx, qrels["grade"].to_numpy())
        labels = LabelSet(tuple(query_ids.to_list()), counts)
        keys = _pair_hash(qrels)
        order = np.argsort(keys, kind="stable").astype(np.int64)
        return cls(labels=labels, qrels=qrels, _key_order=order, _keys_sorted=keys[order])

    def fingerprint(self) -> str:
        """SHA-256 of the sorted ``qid, docid, grade`` lines, as the row reader computes it."""
        canonical = self.qrels.sort(["qid", "docid"]).select(
            pl.format("{}\t{}\t{}", "qid", "docid", "grade").alias("line")
        )
        digest = hashlib.sha256()
        for chunk in canonical.iter_slices(200_000):
            digest.update("".join(line + "\n" for line in chunk["line"].to_list()).encode())
        return "sha256:" + digest.hexdigest()[:16]

    def grades_of(
        self, frame: pl.DataFrame, keys: NDArray[np.uint64] | None = None
    ) -> NDArray[np.int8]:
        """Grade of every (qid, docid) row of ``frame``; 0 where it has none."""
        assert self._keys_sorted is not None and self._key_order is not None
        if keys is None:
            keys = _pair_hash(frame)
        grades = np.zeros(frame.height, dtype=np.int8)
        if self._keys_sorted.size == 0 or frame.height == 0:
            return grades
        # A hash-set membership test is cheap; the binary search then runs only on the
        # (few) rows that have a grade, where its cache misses do not matter.
        known = pl.Series(keys, dtype=pl.UInt64).is_in(
            pl.Series(self._keys_sorted, dtype=pl.UInt64).implode()
        )
        matched = np.flatnonzero(known.to_numpy())
        if matched.size == 0:
            return grades
        source = self._key_order[np.searchsorted(self._keys_sorted, keys[matched])]
        theirs = self.qrels[source]
        ours = frame.select("qid", "docid")[matched]
        same = ((ours["qid"] == theirs["qid"]) & (ours["docid"] == theirs["docid"])).to_numpy()
        grades[matched[same]] = theirs["grade"].to_numpy()[same]
        return grades

    def run(
        self,
        name: str,
        frame: pl.DataFrame,
        *,
        in_list_order: bool = False,
        k_override: dict[str, int] | None = None,
    ) -> RankedRun:
        """Rank, deduplicate and grade a ``qid, docid[, score][, contains]`` run frame.

        ``in_list_order`` keeps each query's rows as given (lists without scores).
        Strings are compared only at query boundaries, among tied scores and for hash
        matches; everything else runs on integer arrays.
        """
        frame = self._known_queries(name, frame)
        starts = _block_starts(frame)
        keys = _pair_hash(frame)
        qidx = self._query_index(frame, starts)
        grades = self.grades_of(frame, keys)
        contains = frame["contains"].to_numpy() if "contains" in frame.columns else None
        order = None if in_list_order else _ranking_order(frame, starts)
        if order is not None:
            keys, qidx, grades = keys[order], qidx[order], grades[order]
            contains = None if contains is None else contains[order]
        keep = self._first_occurrences(name, frame, keys, order)
        if keep is not None:
            qidx, grades = qidx[keep], grades[keep]
            contains = None if contains is None else contains[keep]
        pinned = None
        if k_override:
            pinned = np.array([k_override.get(q, 0) for q in self.labels.query_ids], np.int64)
        return _assemble(
            name, self.labels.n_queries, qidx, grades, contains=contains, k_override=pinned
        )

    def _query_index(self, frame: pl.DataFrame, starts: NDArray[np.int64]) -> NDArray[np.int64]:
        """Label index of each row, looking up each block of equal qids once."""
        if frame.height == 0:
            return np.zeros(0, dtype=np.int64)
        if starts.size > self.labels.n_queries * 4:
            # Rows of a query are scattered: a join beats a lookup per block.
            return _index_of(frame["qid"], pl.Series(self.labels.query_ids, dtype=pl.String))
        position = {q: i for i, q in enumerate(self.labels.query_ids)}
        qids = frame["qid"].gather(starts).to_list()
        block_index = np.array([position[q] for q in qids], dtype=np.int64)
        return np.repeat(block_index, np.diff(np.append(starts, frame.height)))

    def _known_queries(self, name: str, frame: pl.DataFrame) -> pl.DataFrame:
        known = frame["qid"].is_in(pl.Series(self.labels.query_ids, dtype=pl.String).implode())
        if bool(known.all()):
            return frame
        unknown = frame.filter(~known)["qid"].unique(maintain_order=True)
        self.warnings.append(
            f"run {name!r}: {len(unknown)} quer{'y' if len(unknown) == 1 else 'ies'} "
            f"not in the labels skipped ({_sample(unknown.to_list())})"
        )
        return frame.filter(known)

    def _first_occurrences(
        self,
        name: str,
        frame: pl.DataFrame,
        keys: NDArray[np.uint64],
        order: NDArray[np.int64] | None,
    ) -> NDArray[np.bool_] | None:
        """Mask over ranked rows keeping each passage's best-ranked occurrence (None: all).

        ``keys`` are in ranked order; ``order`` maps ranked rows back to ``frame``.
        """
        series = pl.Series(keys)
        if series.n_unique() == frame.height:
            return None
        repeat = (~series.is_first_distinct()).to_numpy()
        # Confirm every repeat on the strings: a hash collision is not a duplicate.
        rows = np.flatnonzero(series.is_in(series.filter(pl.Series(repeat)).implode()).to_numpy())
        seen: set[tuple[str, str]] = set()
        drop = np.zeros(frame.height, dtype=np.bool_)
        examples: list[str] = []
        source = rows if order is None else order[rows]
        pairs = frame.select("qid", "docid")[source].rows()
        for row, pair in zip(rows.tolist(), pairs, strict=True):
            if pair in seen:
                drop[row] = True
                examples.append(f"{pair[1]} in {pair[0]}")
            seen.add(pair)
        if not drop.any():
            return None
        self.warnings.append(
            f"run {name!r}: {int(drop.sum())} repeated passage id(s) dropped, "
            f"keeping the best-ranked ({_sample(examples)})"
        )
        return ~drop


def _sample(items: list[str], limit: int = 3) -> str:
    shown = ", ".join(str(item) for item in items[:limit])
    return shown + (", ..." if len(items) > limit else "")


def _pair_hash(frame: pl.DataFrame) -> NDArray[np.uint64]:
    hashed: NDArray[np.uint64] = (
        frame.select(pl.struct("qid", "docid").hash(seed=0x5EED)).to_series().to_numpy()
    )
    return hashed


def _index_of(values: pl.Series, sorted_ids: pl.Series) -> NDArray[np.int64]:
    """Position of each value in ``sorted_ids`` (which must contain every value)."""
    lookup = pl.DataFrame({"_id": sorted_ids, "_pos": np.arange(len(sorted_ids))})
    joined = pl.DataFrame({"_id": values}).join(lookup, on="_id", how="left", maintain_order="left")
    positions: NDArray[np.int64] = joined["_pos"].to_numpy().astype(np.int64)
    return positions


def _block_starts(frame: pl.DataFrame) -> NDArray[np.int64]:
    """Rows where the qid differs from the row before."""
    if frame.height == 0:
        return np.zeros(0, dtype=np.int64)
    qid = frame["qid"]
    changed = (qid != qid.shift(1)).fill_null(value=True).to_numpy()
    return np.flatnonzero(changed).astype(np.int64)


def _ranking_order(frame: pl.DataFrame, starts: NDArray[np.int64]) -> NDArray[np.int64] | None:
    """Row order grouping queries, best first, ties by passage id descending (as bytes).

    None when the file is in that order already. Run files are nearly always written
    grouped and sorted by score; then only groups of tied scores are re-ordered,
    instead of sorting millions of rows.
    """
    if frame.height < 2:
        return None
    score = frame["score"].to_numpy()
    new_query = np.zeros(frame.height, dtype=np.bool_)
    new_query[starts] = True
    same_query = ~new_query[1:]
    grouped = frame["qid"].gather(starts).n_unique() == starts.size
    if not grouped or bool((same_query & (score[1:] > score[:-1])).any()):
        ranked: NDArray[np.int64] = (
            frame.select(pl.arg_sort_by(["qid", "score", "docid"], descending=[False, True, True]))
            .to_series()
            .to_numpy()
            .astype(np.int64)
        )
        return ranked
    tied_pair = same_query & (score[1:] == score[:-1])
    if not tied_pair.any():
        return None
    in_tie = np.zeros(frame.height, dtype=np.bool_)
    in_tie[:-1] |= tied_pair
    in_tie[1:] |= tied_pair
    rows = np.flatnonzero(in_tie)
    # A tie group starts at a tied row that is not tied to the row before it.
    group = np.cumsum(~np.concatenate([[False], tied_pair])[rows])
    ties = pl.DataFrame({"_group": group, "_row": rows, "docid": frame["docid"].gather(rows)})
    reordered = ties.sort(["_group", "docid"], descending=[False, True])["_row"].to_numpy()
    if np.array_equal(reordered, rows):
        return None
    order = np.arange(frame.height, dtype=np.int64)
    order[rows] = reordered
    return order


def _assemble(
    name: str,
    n_queries: int,
    qidx: NDArray[np.int64],
    grades: NDArray[np.int8],
    *,
    contains: NDArray[np.bool_] | None,
    k_override: NDArray[np.int64] | None,
) -> RankedRun:
    """CSR arrays in label order; rows of one query are contiguous and ranked."""
    if qidx.size > 1 and bool((np.diff(qidx) < 0).any()):
        order = np.argsort(qidx, kind="stable")
        qidx, grades = qidx[order], grades[order]
        contains = None if contains is None else contains[order]
    lengths = np.bincount(qidx, minlength=n_queries)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return RankedRun(
        name=name,
        offsets=offsets,
        grades=grades.astype(np.int8),
        contains=contains,
        k_override=k_override,
    )
