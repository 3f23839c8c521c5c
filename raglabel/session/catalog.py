"""What a grading session loads once: queries, candidate pools and the stored runs.

A big project holds millions of candidates and passages; the session reads them as
integers and names a passage only when a screen shows it. A passage's "pid" is its row
in the project file, so grades and candidates are read without their text ids; a
passage the file does not hold (a run entry below the pool depth) gets a negative pid
the first time it is met. Each query's pool is put in order when the query is opened.

Runs are held as pids too, back to back in rank order, one slice per query, read from
the passage rows each ranking stores. An entry whose passage the file did not hold when
the run was stored (below the pool depth) is 0 there, until its query is *resolved*:
its ids read and named like any other (:meth:`Catalog.resolve`). A query is resolved
whenever a screen needs its entries by passage: opening it, grading in it, or a grade
on a passage that got a row after the run was stored. Before the runs are read at all,
an opened query's rankings are read on their own, with the same pids.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
from raglabel.storage.runs import (
    queries_rankings,
    query_rankings,
    ranking_ids,
    run_rows,
    stored_runs,
)


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
    """One stored run over the session's queries: ``pids[offsets[q]:offsets[q + 1]]`` is
    query ``q``'s ranking (empty when the run lacks the query, which then scores 0
    wherever a metric is defined). A 0 is an entry not named yet (see the module's
    notes); only a passage row above ``upto`` may hide behind one."""

    name: str
    offsets: NDArray[np.int64]
    pids: NDArray[np.int32]
    upto: int
    run_id: int = 0  # the stored run these entries were read from

    def ranked(self, q: int) -> NDArray[np.int32]:
        return self.pids[self.offsets[q] : self.offsets[q + 1]]


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
        return self._outside_pid(ext) if found is None else found

    def pids(self, exts: Sequence[str]) -> list[int]:
        """The pid of each passage id, asking the file once for all it does not know yet."""
        missing = [ext for ext in dict.fromkeys(exts) if ext not in self._pid]
        if missing:
            for ext, row in self._rows_of(missing).items():
                self.learn(row, ext)
        return [self._pid.get(ext) or self._outside_pid(ext) for ext in exts]

    def _outside_pid(self, ext: str) -> int:
        self._outside += 1
        return self.learn(-self._outside, ext)

    def moved_in(self) -> dict[int, int]:
        """The negative pid of each passage met outside the file that the file holds now
        (another process imported it: a label file, a corpus), by its row: the session
        keeps calling it by that pid."""
        outside = {ext: pid for pid, ext in self._ext.items() if pid < 0}
        if not outside:
            return {}
        return {row: outside[ext] for ext, row in self._rows_of(list(outside)).items()}


class Pools:
    """Each query's candidates (pids), put in pool order (best rank, then id) when a
    query's list is first asked for; their number per query is known at once.

    Not a ``Sequence``: its mixins (iteration, ``in``, ``index``, ``count``) would read
    every pool, one query at a time, a hundred thousand reads on a big project."""

    # Setting it to None makes ``iter()`` and ``in`` raise TypeError instead of falling
    # back to ``__getitem__`` over every query.
    __iter__ = None

    def __init__(self, sizes: NDArray[np.int64], read: Callable[[int], list[int]]) -> None:
        self.sizes = sizes
        self._read = read
        self._lists: dict[int, list[int]] = {}

    def __len__(self) -> int:
        return int(self.sizes.size)

    def __getitem__(self, q: int) -> list[int]:
        found = self._lists.get(q)
        if found is None:
            found = self._lists[q] = self._read(q)
        return found

    def read_so_far(self) -> dict[int, list[int]]:
        """The lists read so far, by query index."""
        return self._lists

    def add(self, q: int, pid: int) -> None:
        self[q].append(pid)
        self.sizes[q] += 1


@dataclass
class Catalog:
    queries: list[Query]
    passage_ext: PassageNames  # pid <-> passage id
    candidates: Pools  # per query, in pool order (best rank, then id)
    runs: list[RunLists]
    names: list[str] = field(default_factory=list)  # the runs' names, known before the runs
    # The stored runs' ids beside ``names``: every later read asks for these runs, so a
    # run another process imports or replaces meanwhile cannot shift the session's.
    run_ids: list[int] = field(default_factory=list)
    # Every candidate read at start as (query index, pid): what the grade book counts.
    read_pairs: tuple[NDArray[np.int64], NDArray[np.int64]] = field(
        default_factory=lambda: (np.zeros(0, np.int64), np.zeros(0, np.int64))
    )
    added: list[tuple[int, int]] = field(default_factory=list)  # candidates made since
    # Whether ``read_pairs`` and the pools' sizes hold the counts (read at start, or by
    # the runs thread): until then a pool read has nothing to agree with.
    counted: bool = False
    # Told of the candidates a pool read found beyond the counts (another process made
    # them since), with their query: the grade book counts the graded ones.
    grew: Callable[[int, list[int]], None] = lambda q, pids: None
    # A query's passage ids in every run (run order), read on their own: opening a query
    # must not wait for the whole runs.
    read_ranked: Callable[[int], list[list[str]]] = lambda _: []
    # The same for several queries at once, by query row.
    read_ranked_all: Callable[[list[int]], dict[int, list[list[str]]]] = lambda rows: {
        row: [] for row in rows
    }
    # Queries whose entries are all named in ``runs``.
    resolved: set[int] = field(default_factory=set)
    # Before the runs are in: each opened query's rankings as pids, run by run.
    opened: dict[int, list[NDArray[np.int64]]] = field(default_factory=dict)
    _index_of_row: dict[int, int] = field(default_factory=dict)
    _index_of_ext: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._index_of_row = {q.row_id: q.index for q in self.queries}
        self._index_of_ext = {q.ext_id: q.index for q in self.queries}

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

    def take_counts(
        self, pairs: tuple[NDArray[np.int64], NDArray[np.int64]], sizes: NDArray[np.int64]
    ) -> dict[int, list[int]]:
        """Put the candidates counted (``pool_pairs``) and their number per query in place,
        and make the pools read before them agree (see :meth:`agree`); returns the
        candidates those pools hold beyond the counts, by query."""
        self.read_pairs = pairs
        self.candidates.sizes = sizes
        self.counted = True
        grown = {}
        for q, pool in self.candidates.read_so_far().items():
            new = self.agree(q, pool)
            if new:
                grown[q] = new
        return grown

    def agree(self, q: int, pool: list[int]) -> list[int]:
        """Make query ``q``'s pool, read from the file at another moment than the counts,
        and the counts agree, so that the screens' ``graded/candidates`` is the list the
        Grade screen shows. Another process may have made candidates in between (a grade
        on a passage outside the pool, a label file): a pool read later holds them, and
        they count from now on; one read earlier lacks them, and gets them at its end.
        Returns the pids new to the counts."""
        pairs_q, pairs_pid = self.read_pairs
        # The pairs come in query order (``pool_pairs``): query q's are one slice.
        lo, hi = np.searchsorted(pairs_q, [q, q + 1]).tolist()
        rows = pairs_pid[lo:hi].tolist()
        # A passage met outside the file keeps its negative pid once the file holds it.
        moved = self.passage_ext.moved_in() if any(pid < 0 for pid in pool) else {}
        counted = {moved.get(row, row) for row in rows}
        counted.update(pid for at, pid in self.added if at == q)
        shown = set(pool)
        missing = [row for row in rows if moved.get(row, row) not in shown]
        # Only what the pool was read with can be new: the rows filled in below are
        # counted already (one met outside the file comes back as its negative pid).
        new = [pid for pid in pool if pid not in counted]
        if missing:
            self.passage_ext.name(missing)
            pool.extend(self.passage_ext.learn(row, self.passage_ext[row]) for row in missing)
        self.added.extend((q, pid) for pid in new)
        self.candidates.sizes[q] = len(pool)
        return new

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

    def passage_pid(self, ext_id: str) -> int | None:
        """The pid of a passage id the file holds or the session met, else None."""
        return self.passage_ext.known(ext_id)

    def pid(self, ext_id: str) -> int:
        """The pid of a passage id (a new negative one for a passage outside the file)."""
        return self.passage_ext.pid(ext_id)

    @property
    def run_names(self) -> list[str]:
        return self.names or [run.name for run in self.runs]

    # -- rankings ----------------------------------------------------------------------

    def ranked_pids(self, q: int) -> list[NDArray[np.int64]]:
        """Query ``q``'s ranking in each run as pids, every entry named: from the runs
        once they are in, else read on their own (the same pids either way)."""
        if self.runs:
            self.resolve(q)
            return [run.ranked(q).astype(np.int64) for run in self.runs]
        found = self.opened.get(q)
        if found is None:
            found = self.opened[q] = self._read_query(q)
        return found

    def resolve(self, q: int) -> bool:
        """Name every entry of query ``q`` in the runs; True if that changed any."""
        return q in self.resolve_all([q])

    def resolve_all(self, queries: Sequence[int]) -> set[int]:
        """Name every entry of these queries in the runs, their rankings read together
        (one read a run, one lookup of the names); the queries whose entries changed."""
        if not self.runs:
            return set()
        todo = [q for q in dict.fromkeys(queries) if q not in self.resolved]
        self.resolved.update(todo)
        # A query whose entries all have their rows has nothing to read.
        todo = [q for q in todo if any((run.ranked(q) == 0).any() for run in self.runs)]
        if not todo:
            return set()
        ranked = self.read_ranked_all([self.queries[q].row_id for q in todo])
        lists = [ids for q in todo for ids in ranked[self.queries[q].row_id]]
        # Every name at once: one lookup in the file, then one slice a ranking.
        every = np.array(self.passage_ext.pids([ext for ids in lists for ext in ids]), np.int64)
        ends = np.cumsum([len(ids) for ids in lists]).tolist()
        changed: set[int] = set()
        for i, q in enumerate(todo):
            for j, run in enumerate(self.runs):
                at = i * len(self.runs) + j
                pids = every[(ends[at - 1] if at else 0) : ends[at]]
                here = run.pids[run.offsets[q] : run.offsets[q + 1]]
                # A ranking of another length is no longer the one the session read
                # (another process replaced or deleted the run): the session keeps its own.
                if here.size == pids.size and not np.array_equal(here, pids):
                    here[:] = pids
                    changed.add(q)
        return changed

    def _read_query(self, q: int) -> list[NDArray[np.int64]]:
        ranked = self.read_ranked(self.queries[q].row_id)
        names = self.passage_ext
        return [np.array(names.pids(ids), dtype=np.int64) for ids in ranked]

    def install(self, runs: list[RunLists]) -> set[int] | None:
        """Put runs read in another thread in place: the queries opened meanwhile keep
        the pids they were shown with, and a passage met outside the file that the file
        holds now keeps its negative pid. Returns the queries whose entries changed, or
        None when they may have changed anywhere."""
        self.runs = runs
        changed: set[int] | None = set()
        moved = self.passage_ext.moved_in()
        if moved and runs:
            rows = np.array(sorted(moved), dtype=np.int64)
            to = np.array([moved[row] for row in rows.tolist()], dtype=np.int32)
            for run in runs:
                hit = np.flatnonzero(np.isin(run.pids, rows))
                if hit.size:
                    run.pids[hit] = to[np.searchsorted(rows, run.pids[hit])]
                    changed = None
        for q, lists in self.opened.items():
            self.resolved.add(q)
            for run, pids in zip(runs, lists, strict=True):
                here = run.pids[run.offsets[q] : run.offsets[q + 1]]
                if here.size == pids.size:  # else the run changed on disk in between
                    here[:] = pids
            if changed is not None:
                changed.add(q)
        self.opened.clear()
        return changed


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
        pool = [names.learn(pid, ext) for pid, ext in query_pool(conn, queries[q].row_id)]
        if catalog.counted:
            new = catalog.agree(q, pool)
            if new:
                catalog.grew(q, new)
        return pool

    sizes = np.zeros(len(queries), np.int64)
    stored = stored_runs(conn)
    catalog = Catalog(
        queries,
        names,
        Pools(sizes, read),
        [],
        [name for _, name in stored],
        [run_id for run_id, _ in stored],
    )
    catalog.read_ranked = lambda row: query_rankings(conn, row, catalog.run_ids)
    catalog.read_ranked_all = lambda rows: queries_rankings(conn, rows, catalog.run_ids)
    if pools:
        pairs = pool_pairs(catalog, project)
        catalog.take_counts(pairs, np.bincount(pairs[0], minlength=len(queries)).astype(np.int64))
        catalog.install(load_runs(project, catalog))
    return catalog


def pool_pairs(catalog: Catalog, project: Project) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Every candidate of the catalog's queries as (query index, pid), in query order
    (:meth:`Catalog.agree` finds a query's as one slice). Reads only
    ``catalog.queries``, so it may run in another thread on its own connection."""
    query_row, passage_row = candidate_rows(project.conn)
    q = catalog.query_indexes(query_row)
    keep = q >= 0
    q, passage_row = q[keep], passage_row[keep]
    if q.size > 1 and bool((q[1:] < q[:-1]).any()):
        # Query index order is row order (``query_indexes``) and the rows come sorted;
        # should either ever change, the slices ``agree`` takes must still be right.
        order = np.argsort(q, kind="stable")
        q, passage_row = q[order], passage_row[order]
    return q, passage_row


def load_runs(project: Project, catalog: Catalog) -> list[RunLists]:
    """Every stored run over the catalog's queries, its entries as stored (see
    :class:`RunLists`). Reads only ``catalog.queries``, so it may run in another thread
    (on its own connection) while the app starts."""
    out = []
    n = len(catalog.queries)
    for run in run_rows(project.conn, list(zip(catalog.run_ids, catalog.names, strict=True))):
        # Queries are numbered in row id order, the order the run's rows come in.
        q = catalog.query_indexes(run.query_rows)
        lengths = np.zeros(n, dtype=np.int64)
        lengths[q[q >= 0]] = run.lengths[q >= 0]
        rows = run.rows
        if (q < 0).any():  # a query the session does not hold (none: all are read)
            keep = np.repeat(q >= 0, run.lengths)
            rows = rows[keep]
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        out.append(RunLists(run.name, offsets, rows, run.upto, run.run_id))
    return out


def name_late_entries(
    project: Project,
    catalog: Catalog,
    runs: list[RunLists],
    queries: NDArray[np.int64],
    pids: NDArray[np.int64],
) -> None:
    """Put passage rows ``pids`` (graded for ``queries``, given after some run was
    stored) in the runs where those queries' rankings list them as unnamed entries.
    Reads by their ids on ``project`` only, so it may run beside the app's thread."""
    ids = passage_ids_by_row(project.conn, sorted(set(pids.tolist())))
    wanted: dict[int, dict[str, int]] = {}
    for q, pid in zip(queries.tolist(), pids.tolist(), strict=True):
        if pid in ids:
            wanted.setdefault(q, {})[ids[pid]] = pid
    for run in runs:
        for q, rows in wanted.items():
            here = run.pids[run.offsets[q] : run.offsets[q + 1]]
            if not (here == 0).any() or not any(pid > run.upto for pid in rows.values()):
                continue
            row = catalog.queries[q].row_id
            for i, ext in enumerate(ranking_ids(project.conn, run.run_id, row)):
                if here[i] == 0 and ext in rows:
                    here[i] = rows[ext]


def load_passages(project: Project, catalog: Catalog, pids: list[int]) -> dict[int, Passage]:
    """Title and text of these passages (a query's candidates), by pid."""
    found: dict[int, Passage] = {}
    catalog.passage_ext.name([pid for pid in pids if pid >= 0])
    by_ext = {catalog.passage_ext[pid]: pid for pid in pids}
    for ext_id, title, text in passage_texts_of(project.conn, list(by_ext)):
        pid = by_ext[ext_id]
        found[pid] = Passage(pid, ext_id, title or "", text or "")
    return found
