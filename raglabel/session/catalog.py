"""What a grading session loads once: queries, candidate pools and the stored runs.

Runs keep their passage ids as text, back to back in rank order, one slice per query:
a project's runs may name a million distinct passages, and numbering them all would
cost more than everything else at start. A passage the session shows (a candidate, a
hole, a graded one) gets a small integer, its "pid", the first time it is met; its
text is read when its query is opened.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from raglabel.storage.items import passage_texts_of, query_rows
from raglabel.storage.pool import pool_order
from raglabel.storage.project import Project
from raglabel.storage.runs import joined_runs, run_names


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
    def run_names(self) -> list[str]:
        return self.names or [run.name for run in self.runs]


def load_catalog(project: Project, *, runs: bool = True) -> Catalog:
    """Queries and candidates; with ``runs``, the runs too (else see :func:`load_runs`)."""
    conn = project.conn
    queries = [
        Query(i, row_id, ext_id, text or "")
        for i, (row_id, ext_id, text) in enumerate(query_rows(conn))
    ]
    index_of = {q.row_id: q.index for q in queries}
    catalog = Catalog(queries, [], [[] for _ in queries], [], run_names(conn))
    if runs:
        catalog.runs = load_runs(project, catalog)
    for query_row, _, ext_id in pool_order(conn):
        catalog.candidates[index_of[query_row]].append(catalog.pid(ext_id))
    return catalog


def load_runs(project: Project, catalog: Catalog) -> list[RunLists]:
    """Every stored run over the catalog's queries. Reads only ``catalog.queries``, so it
    may run in another thread (on its own connection) while the app starts."""
    index_of = {q.row_id: q.index for q in catalog.queries}
    out = []
    for run in joined_runs(project.conn):
        # Queries are numbered in row id order, the order the run's ids come in.
        lengths = np.zeros(len(catalog.queries), dtype=np.int64)
        for query_row, length in zip(run.query_rows, run.lengths, strict=True):
            lengths[index_of[query_row]] = length
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        out.append(RunLists(run.name, offsets, run.ids))
    return out


def load_passages(project: Project, catalog: Catalog, pids: list[int]) -> dict[int, Passage]:
    """Title and text of these passages (a query's candidates), by pid."""
    found: dict[int, Passage] = {}
    wanted = [catalog.passage_ext[pid] for pid in pids]
    for ext_id, title, text in passage_texts_of(project.conn, wanted):
        pid = catalog.pid(ext_id)
        found[pid] = Passage(pid, ext_id, title or "", text or "")
    return found
