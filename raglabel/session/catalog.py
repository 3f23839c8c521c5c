"""What a grading session loads once: queries, candidate pools and the stored runs.

Runs keep their passage ids as text, back to back in rank order, one slice per query:
a project's runs may name a million distinct passages, and numbering them all would
cost more than everything else at start. A passage the session shows (a candidate, a
hole, a graded one) gets a small integer, its "pid", the first time it is met; its
text is read when its query is opened.
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
    pid: int
    ext_id: str
    title: str
    text: str


@dataclass
class RunLists:
    """One stored run over the session's queries: ``ext[offsets[q]:offsets[q + 1]]`` is
    query ``q``'s ranking (empty when the run lacks the query, which then scores 0
    wherever a metric is defined)."""

    name: str
    offsets: NDArray[np.int64]
    ext: list[str]

    def ranked(self, q: int) -> list[str]:
        return self.ext[self.offsets[q] : self.offsets[q + 1]]


@dataclass
class Catalog:
    queries: list[Query]
    passage_ext: list[str]  # pid -> passage id
    candidates: list[list[int]]  # per query, in pool order (best rank, then id)
    runs: list[RunLists]
    names: list[str] = field(default_factory=list)  # the runs' names, known before the runs
    _pid_of: dict[str, int] = field(default_factory=dict)
    _index_of_row: dict[int, int] = field(default_factory=dict)
    _index_of_ext: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._index_of_row = {q.row_id: q.index for q in self.queries}
        self._index_of_ext = {q.ext_id: q.index for q in self.queries}
        if not self._pid_of:
            self._pid_of = {ext: pid for pid, ext in enumerate(self.passage_ext)}

    def query_index(self, row_id: int) -> int | None:
        return self._index_of_row.get(row_id)

    def query_by_ext(self, ext_id: str) -> int | None:
        return self._index_of_ext.get(ext_id)

    def passage_row(self, ext_id: str) -> int | None:
        """The pid of a passage id the session has met, else None."""
        return self._pid_of.get(ext_id)

    def pid(self, ext_id: str) -> int:
        """The pid of a passage id, numbering it if the session meets it for the first time."""
        found = self._pid_of.get(ext_id)
        if found is None:
            found = self._pid_of[ext_id] = len(self.passage_ext)
            self.passage_ext.append(ext_id)
        return found

    @property
    def n_passages(self) -> int:
        return len(self.passage_ext)

    @property
    def run_names(self) -> list[str]:
        return self.names or [run.name for run in self.runs]


def load_catalog(conn: sqlite3.Connection, *, runs: bool = True) -> Catalog:
    """Queries and candidates; with ``runs``, the runs too (else see :func:`load_runs`)."""
    queries = [
        Query(i, row_id, ext_id, text or "")
        for i, (row_id, ext_id, text) in enumerate(
            conn.execute("SELECT id, ext_id, text FROM query ORDER BY id")
        )
    ]
    index_of = {q.row_id: q.index for q in queries}
    names = [name for (name,) in conn.execute("SELECT name FROM run ORDER BY id")]
    catalog = Catalog(queries, [], [[] for _ in queries], [], names)
    if runs:
        catalog.runs = load_runs(conn, catalog)
    pool = conn.execute(
        "SELECT c.query_id, c.best_rank, p.ext_id FROM candidate c"
        " JOIN passage p ON p.id = c.passage_id"
    ).fetchall()
    # Sorting here is cheaper than SQLite's ORDER BY over the join: best rank first,
    # passages only a label file named (no rank) last, then by id.
    pool.sort(key=lambda row: (row[0], row[1] is None, row[1] or 0, row[2]))
    for query_id, _, ext_id in pool:
        catalog.candidates[index_of[query_id]].append(catalog.pid(ext_id))
    return catalog


def load_runs(conn: sqlite3.Connection, catalog: Catalog) -> list[RunLists]:
    """Every stored run over the catalog's queries. Reads only ``catalog.queries``, so it
    may run in another thread (on its own connection) while the app starts."""
    index_of = {q.row_id: q.index for q in catalog.queries}
    return [
        _load_run(conn, run_id, name, index_of, len(catalog.queries))
        for run_id, name in conn.execute("SELECT id, name FROM run ORDER BY id").fetchall()
    ]


def _load_run(
    conn: sqlite3.Connection, run_id: int, name: str, index_of: dict[int, int], n_queries: int
) -> RunLists:
    rows = sorted(
        (index_of[query_id], bytes(blob).decode())
        for query_id, blob in conn.execute(
            "SELECT query_id, passage_ids FROM ranking WHERE run_id = ?", (run_id,)
        )
    )
    # One split over the whole run instead of a Python step per entry.
    ext = "\n".join(text for _, text in rows).split("\n") if rows else []
    lengths = np.zeros(n_queries, dtype=np.int64)
    for q, text in rows:
        lengths[q] = text.count("\n") + 1
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return RunLists(name, offsets, ext)


def load_passages(
    conn: sqlite3.Connection, catalog: Catalog, pids: list[int]
) -> dict[int, Passage]:
    """Title and text of these passages (a query's candidates), by pid."""
    found: dict[int, Passage] = {}
    # SQLite caps the number of bound parameters; a query's pool is far below it.
    for start in range(0, len(pids), 500):
        chunk = [catalog.passage_ext[pid] for pid in pids[start : start + 500]]
        marks = ",".join("?" * len(chunk))
        for ext_id, title, text in conn.execute(
            f"SELECT ext_id, title, text FROM passage WHERE ext_id IN ({marks})", chunk
        ):
            pid = catalog.pid(ext_id)
            found[pid] = Passage(pid, ext_id, title or "", text or "")
    return found
