"""What a grading session loads once: queries, candidate pools and the stored runs.

A big project holds millions of candidates and passages; the session reads them as
integers and names a passage only when a screen shows it. A passage's "pid" is its row
in the project file, so grades and candidates are read without their text ids; a
passage the file does not hold (a run entry below the pool depth) gets a negative pid
the first time it is met. Each query's pool is put in order when the query is opened.

Runs keep their passage ids as text, back to back in rank order, one slice per query.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from raglabel.storage.items import (
    passage_ids_by_row,
    passage_rows_by_id,
    passage_texts_of,
    query_rows,
)
from raglabel.storage.pool import candidate_rows, query_pool
from raglabel.storage.project import Project
from raglabel.storage.runs import joined_runs, run_names


# Slots and not frozen: a frozen dataclass sets each field through object.__setattr__,
# and a big project makes 100,000 of them before the first paint (a tenth of the time).
@dataclass(slots=True)
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


class PassageNames:
    """pid <-> passage id, asked of the project file the first time and kept."""

    def __init__(
        self,
        ids_of: Callable[[Sequence[int]], dict[int, str]],
        rows_of: Callable[[Sequence[str]], dict[str, int]],
    ) -> None:
        self._ids_of = ids_of
        self._rows_of = rows_of
        self._ext: dict[int, str] = {}
        self._pid: dict[str, int] = {}
        self._outside = 0  # negative pids handed out

    def __getitem__(self, pid: int) -> str:
        found = self._ext.get(pid)
        if found is None:
            self.name([pid])
            found = self._ext[pid]
        return found

    def learn(self, pid: int, ext: str) -> int:
        """Record that ``pid`` names ``ext``; returns the pid the session calls ``ext`` by.
        A passage met outside the file keeps its negative pid once the file holds it
        (see :meth:`moved_in`): calling it by its row too would count it twice."""
        self._ext[pid] = ext
        return self._pid.setdefault(ext, pid)

    def name(self, pids: Sequence[int]) -> None:
        """Read the passage ids of these pids at once (a query's pool, its grades)."""
        missing = [pid for pid in pids if pid not in self._ext]
        if missing:
            for pid, ext in self._ids_of(missing).items():
                self.learn(pid, ext)
            lost = [pid for pid in missing if pid not in self._ext]
            if lost:
                raise KeyError(f"no passage has pid {lost[0]}")

    def known(self, ext: str) -> int | None:
        """The pid of a passage id the file holds or the session met, else None."""
        found = self._pid.get(ext)
        if found is None:
            found = self._rows_of([ext]).get(ext)
            if found is not None:
                self.learn(found, ext)
        return found

    def pid(self, ext: str) -> int:
        """The pid of a passage id; a new negative one if the file does not hold it."""
        found = self.known(ext)
        if found is None:
            self._outside += 1
            found = -self._outside
            self.learn(found, ext)
        return found

    def moved_in(self) -> dict[int, int]:
        """The negative pid of each passage met outside the file that the file holds now
        (grading one adds it), by its row: the session keeps calling it by that pid."""
        outside = {ext: pid for pid, ext in self._ext.items() if pid < 0}
        if not outside:
            return {}
        return {row: outside[ext] for ext, row in self._rows_of(list(outside)).items()}


class Pools(Sequence[list[int]]):
    """Each query's candidates (pids), put in pool order (best rank, then id) when a
    query's list is first asked for; their number per query is known at once."""

    def __init__(self, sizes: NDArray[np.int64], read: Callable[[int], list[int]]) -> None:
        self.sizes = sizes
        self._read = read
        self._lists: dict[int, list[int]] = {}

    def __len__(self) -> int:
        return int(self.sizes.size)

    def __getitem__(self, q: int) -> list[int]:  # type: ignore[override]
        found = self._lists.get(q)
        if found is None:
            found = self._lists[q] = self._read(q)
        return found

    def __iter__(self) -> Iterator[list[int]]:
        return (self[q] for q in range(len(self)))

    def add(self, q: int, pid: int) -> None:
        self[q].append(pid)
        self.sizes[q] += 1


@dataclass
class Catalog:
    queries: list[Query]
    names_: PassageNames
    candidates: Pools  # per query, in pool order (best rank, then id)
    runs: list[RunLists]
    names: list[str] = field(default_factory=list)  # the runs' names, known before the runs
    # Every candidate read at start as (query index, pid): what the grade book counts.
    read_pairs: tuple[NDArray[np.int64], NDArray[np.int64]] = field(
        default_factory=lambda: (np.zeros(0, np.int64), np.zeros(0, np.int64))
    )
    added: list[tuple[int, int]] = field(default_factory=list)  # candidates made since
    _index_of_row: dict[int, int] = field(default_factory=dict)
    _index_of_ext: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._index_of_row = {q.row_id: q.index for q in self.queries}
        self._index_of_ext = {q.ext_id: q.index for q in self.queries}

    @property
    def passage_ext(self) -> PassageNames:
        """pid -> passage id."""
        return self.names_

    @property
    def pairs(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Every candidate as (query index, pid), in no set order."""
        if not self.added:
            return self.read_pairs
        more = np.array(self.added, dtype=np.int64).reshape(-1, 2)
        return (
            np.concatenate([self.read_pairs[0], more[:, 0]]),
            np.concatenate([self.read_pairs[1], more[:, 1]]),
        )

    def add_candidate(self, q: int, pid: int) -> None:
        self.candidates.add(q, pid)
        self.added.append((q, pid))

    def query_index(self, row_id: int) -> int | None:
        return self._index_of_row.get(row_id)

    def query_by_ext(self, ext_id: str) -> int | None:
        return self._index_of_ext.get(ext_id)

    def query_indexes(self, rows: NDArray[np.int64]) -> NDArray[np.int64]:
        """The index of each query row (-1 for a row the session does not hold)."""
        known = np.fromiter((q.row_id for q in self.queries), np.int64, len(self.queries))
        if not known.size:
            return np.full(rows.size, -1, np.int64)
        # Rows come in row id order, so query index order is row order.
        at = np.searchsorted(known, rows).clip(0, known.size - 1)
        return np.where(known[at] == rows, at, -1).astype(np.int64)

    def passage_row(self, ext_id: str) -> int | None:
        """The pid of a passage id the file holds or the session met, else None."""
        return self.names_.known(ext_id)

    def pid(self, ext_id: str) -> int:
        """The pid of a passage id (a new negative one for a passage outside the file)."""
        return self.names_.pid(ext_id)

    @property
    def run_names(self) -> list[str]:
        return self.names or [run.name for run in self.runs]


def load_catalog(project: Project, *, pools: bool = True) -> Catalog:
    """Queries, and with ``pools`` candidates and runs too (else see :func:`pool_pairs`
    and :func:`load_runs`, which may read them in another thread)."""
    conn = project.conn
    queries = [
        Query(i, row_id, ext_id, text or "")
        for i, (row_id, ext_id, text) in enumerate(query_rows(conn))
    ]
    names = PassageNames(
        lambda rows: passage_ids_by_row(conn, rows), lambda ext: passage_rows_by_id(conn, ext)
    )

    def read(q: int) -> list[int]:
        return [names.learn(pid, ext) for pid, ext in query_pool(conn, queries[q].row_id)]

    sizes = np.zeros(len(queries), np.int64)
    catalog = Catalog(queries, names, Pools(sizes, read), [], run_names(conn))
    if pools:
        catalog.read_pairs = pool_pairs(catalog, project)
        catalog.candidates.sizes = np.bincount(
            catalog.read_pairs[0], minlength=len(queries)
        ).astype(np.int64)
        catalog.runs = load_runs(project, catalog)
    return catalog


def pool_pairs(catalog: Catalog, project: Project) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Every candidate of the catalog's queries as (query index, pid). Reads only
    ``catalog.queries``, so it may run in another thread on its own connection."""
    query_row, passage_row = candidate_rows(project.conn)
    q = catalog.query_indexes(query_row)
    keep = q >= 0
    return q[keep], passage_row[keep]


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
    catalog.passage_ext.name([pid for pid in pids if pid >= 0])
    by_ext = {catalog.passage_ext[pid]: pid for pid in pids}
    for ext_id, title, text in passage_texts_of(project.conn, list(by_ext)):
        pid = by_ext[ext_id]
        found[pid] = Passage(pid, ext_id, title or "", text or "")
    return found
