"""What a grading session loads once: queries, candidate pools and the stored runs.

Passages are named by their SQLite row id inside a session (integers compare and hash
faster than text ids, and runs become numpy arrays); their text is read only when a
query is opened, since a project may hold far more passage text than anyone reads.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True)
class Query:
    index: int  # position in the session's query order
    row_id: int
    ext_id: str
    text: str


@dataclass(frozen=True)
class Passage:
    row_id: int
    ext_id: str
    title: str
    text: str


@dataclass
class RunLists:
    """One stored run as CSR arrays over the session's queries (a query the run lacks
    has an empty list, and so scores 0 wherever a metric is defined)."""

    name: str
    offsets: NDArray[np.int64]
    pids: NDArray[np.int64]

    def ranked(self, q: int) -> NDArray[np.int64]:
        return self.pids[self.offsets[q] : self.offsets[q + 1]]


@dataclass
class Catalog:
    queries: list[Query]
    passage_ext: dict[int, str]
    candidates: list[list[int]]  # per query, in pool order (best rank, then id)
    runs: list[RunLists]
    _index_of_row: dict[int, int] = field(default_factory=dict)
    _passage_row: dict[str, int] = field(default_factory=dict)
    _index_of_ext: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._index_of_row = {q.row_id: q.index for q in self.queries}
        self._index_of_ext = {q.ext_id: q.index for q in self.queries}
        self._passage_row = {ext: row for row, ext in self.passage_ext.items()}

    def query_index(self, row_id: int) -> int | None:
        return self._index_of_row.get(row_id)

    def query_by_ext(self, ext_id: str) -> int | None:
        return self._index_of_ext.get(ext_id)

    def passage_row(self, ext_id: str) -> int | None:
        return self._passage_row.get(ext_id)

    @property
    def run_names(self) -> list[str]:
        return [run.name for run in self.runs]


def load_catalog(conn: sqlite3.Connection) -> Catalog:
    queries = [
        Query(i, row_id, ext_id, text or "")
        for i, (row_id, ext_id, text) in enumerate(
            conn.execute("SELECT id, ext_id, text FROM query ORDER BY id")
        )
    ]
    index_of = {q.row_id: q.index for q in queries}
    passage_ext: dict[int, str] = dict(conn.execute("SELECT id, ext_id FROM passage"))
    row_of = {ext: row for row, ext in passage_ext.items()}
    candidates: list[list[int]] = [[] for _ in queries]
    for query_id, passage_id in conn.execute(
        "SELECT query_id, passage_id FROM candidate ORDER BY query_id, best_rank IS NULL,"
        " best_rank, passage_id"
    ):
        candidates[index_of[query_id]].append(passage_id)
    runs = [
        _load_run(conn, run_id, name, index_of=index_of, row_of=row_of, n_queries=len(queries))
        for run_id, name in conn.execute("SELECT id, name FROM run ORDER BY id").fetchall()
    ]
    return Catalog(queries, passage_ext, candidates, runs)


def _load_run(
    conn: sqlite3.Connection,
    run_id: int,
    name: str,
    *,
    index_of: dict[int, int],
    row_of: dict[str, int],
    n_queries: int,
) -> RunLists:
    lists: list[list[int]] = [[] for _ in range(n_queries)]
    for query_id, blob in conn.execute(
        "SELECT query_id, passage_ids FROM ranking WHERE run_id = ?", (run_id,)
    ):
        lists[index_of[query_id]] = [row_of[ext] for ext in bytes(blob).decode().split("\n")]
    lengths = np.fromiter((len(ids) for ids in lists), dtype=np.int64, count=n_queries)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    pids = np.fromiter((p for ids in lists for p in ids), dtype=np.int64, count=int(offsets[-1]))
    return RunLists(name, offsets, pids)


def load_passages(conn: sqlite3.Connection, row_ids: list[int]) -> dict[int, Passage]:
    """Title and text of these passages (a query's candidates), by row id."""
    found: dict[int, Passage] = {}
    # SQLite caps the number of bound parameters; a query's pool is far below it.
    for start in range(0, len(row_ids), 500):
        chunk = row_ids[start : start + 500]
        marks = ",".join("?" * len(chunk))
        for row_id, ext_id, title, text in conn.execute(
            f"SELECT id, ext_id, title, text FROM passage WHERE id IN ({marks})", chunk
        ):
            found[row_id] = Passage(row_id, ext_id, title or "", text or "")
    return found
