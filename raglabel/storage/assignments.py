"""Assignments: which annotators grade which queries, as ``raglabel assign`` recorded them
(issue 30).

An annotator's *share* is their queries in the order their queue serves them. The
stored assignment is the whole of every share as the last assign left it; each assign
also records its overlap (how many annotators it meant each query for), its seed and
whether it drew on the audit sample. A query nobody is assigned stays open to anyone.

A query is *done* for an annotator at depth K when they graded every passage some stored
run ranks within its top K (the audit sample's pool, :func:`raglabel.storage.audit.pooled`),
counting their grades as the audit does: their own standing human grades that did not
accept a judge's suggestion. A query no stored run covers any more has nothing pooled:
it is not done, since nothing of it was graded to finish.

Everything that reads assignments (the queue, the Queries filter, a tab's status line,
the lead's progress) reads them here; this module alone holds their SQL.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from raglabel.errors import UsageError
from raglabel.storage.annotators import person_id, refuse_names
from raglabel.storage.audit import person_grades, pooled
from raglabel.storage.clock import now
from raglabel.storage.items import json_list
from raglabel.storage.project import Project
from raglabel.storage.runs import ROW_DTYPE


def record(
    project: Project,
    shares: Mapping[str, Sequence[str]],
    *,
    overlap: int,
    seed: int | None,
    audit: bool,
    annotators: Collection[str] = (),
    queries: Collection[str] = (),
) -> None:
    """Store ``shares`` (annotator -> query ids in serving order) as the whole assignment,
    replacing the one stored, and record the assign that made it; all or nothing.

    An annotator named here for the first time is created (names :func:`refuse_names`
    refuses stop the whole assign). An annotator stored before and left out of
    ``shares`` keeps no assignment. A row that stays keeps the assign that first gave it.
    A share its annotator has started (:func:`started`) must be among ``shares``: an
    assign that would drop one is refused. So must every query of ``queries`` that one
    of ``annotators`` graded with no share of it (:func:`graded_by`): an assign's plan
    makes such work its grader's share (raglabel.analysis.assignment), so one missing
    was graded after the plan read the project.
    """
    if overlap < 1:
        raise UsageError(f"--overlap {overlap}: give each query to at least 1 annotator")
    if seed is not None and seed < 0:
        raise UsageError(f"--seed {seed}: a seed is a whole number from 0")
    for name, qids in shares.items():
        repeated = _first_repeat(qids)
        if repeated is not None:
            raise UsageError(f"query {repeated!r} is twice in the share of {name!r}")
    conn = project.conn
    with project.write():
        refuse_names(conn, list(shares))
        # Checked under the write lock: a grade made since the caller planned (people
        # grade while a lead assigns) must not lose its share.
        wanted_queries = set(queries)
        begun = started(conn) | {
            (name, qid) for name, qid in graded_by(conn, annotators) if qid in wanted_queries
        }
        for name, qid in sorted(begun):
            if qid not in shares.get(name, ()):
                raise UsageError(
                    f"{name!r} has started query {qid!r}, and an assign never takes begun"
                    " work away; assign again (the plan reads the grades as they are now)"
                )
        wanted = sorted({qid for qids in shares.values() for qid in qids})
        rows = dict(
            conn.execute(
                "SELECT ext_id, id FROM query WHERE ext_id IN (SELECT value FROM json_each(?))",
                (json_list(wanted),),
            ).fetchall()
        )
        unknown = [qid for qid in wanted if qid not in rows]
        if unknown:
            raise UsageError(f"query {unknown[0]!r}: no such query in the project")
        assign_id = conn.execute(
            "INSERT INTO assign_run (overlap, seed, audit, assigned_at) VALUES (?, ?, ?, ?)",
            (overlap, seed, int(audit), now()),
        ).lastrowid
        given = {
            (annotator, query): first
            for annotator, query, first in conn.execute(
                "SELECT annotator_id, query_id, assign_id FROM assignment"
            )
        }
        conn.execute("DELETE FROM assignment")
        written: list[tuple[int, int, int, int]] = []
        for name, qids in shares.items():
            ident = person_id(conn, name)
            for position, qid in enumerate(qids):
                row = rows[qid]
                written.append((ident, position, row, given.get((ident, row), assign_id or 0)))
        conn.executemany(
            "INSERT INTO assignment (annotator_id, position, query_id, assign_id)"
            " VALUES (?, ?, ?, ?)",
            written,
        )


def pool_sizes(conn: sqlite3.Connection, qids: Iterable[str], depth: int) -> dict[str, int]:
    """How many pairs each of these queries pools to ``depth``: the passages some stored
    run ranks within its top ``depth`` (0 for a query no run covers, or none stored)."""
    wanted = sorted(set(qids))
    rows = dict(
        conn.execute(
            "SELECT id, ext_id FROM query WHERE ext_id IN (SELECT value FROM json_each(?))",
            (json_list(wanted),),
        ).fetchall()
    )
    pool = pooled(conn, list(rows), depth)
    sizes = dict.fromkeys(wanted, 0)
    sizes.update({str(rows[row]): len(passages) for row, passages in pool.items()})
    return sizes


def assigned(conn: sqlite3.Connection) -> dict[str, list[str]]:
    """Every annotator with an assignment -> their query ids in serving order, by name."""
    shares: dict[str, list[str]] = {}
    for name, qid in conn.execute(
        "SELECT a.name, q.ext_id FROM assignment s JOIN annotator a ON a.id = s.annotator_id"
        " JOIN query q ON q.id = s.query_id ORDER BY a.name, s.position"
    ):
        shares.setdefault(str(name), []).append(str(qid))
    return shares


def assigned_to(conn: sqlite3.Connection, annotator: str) -> list[str]:
    """``annotator``'s query ids in serving order; [] when they have none (or no such
    annotator exists)."""
    return [qid for _, qid in _share_rows(conn, annotator)]


def done_queries(
    conn: sqlite3.Connection,
    annotator: str,
    depth: int,
    *,
    among: Iterable[str] | None = None,
) -> set[str]:
    """Of the queries assigned to ``annotator``, those they graded every pooled pair of
    to ``depth`` (see the module's docstring); with ``among``, only those of these query
    ids (after one grade, the app asks about one query, not the whole share)."""
    return done_by_annotator(conn, depth, [annotator], among=among).get(annotator, set())


def done_by_annotator(
    conn: sqlite3.Connection,
    depth: int,
    annotators: Iterable[str] | None = None,
    *,
    among: Iterable[str] | None = None,
) -> dict[str, set[str]]:
    """:func:`done_queries` for each of ``annotators`` with an assignment (default: all
    of them), reading the pools once for everyone: the lead's views ask for all."""
    names = assigned(conn) if annotators is None else dict.fromkeys(annotators)
    wanted = None if among is None else set(among)
    shares = {
        name: [
            (row, qid) for row, qid in _share_rows(conn, name) if wanted is None or qid in wanted
        ]
        for name in names
    }
    shares = {name: rows for name, rows in shares.items() if rows}
    every = sorted({row for rows in shares.values() for row, _ in rows})
    pool = _pool_keys(conn, every, depth)
    # A query some top ``depth`` entry of which has no passage row stored (an entry
    # below the import's pool depth) is read by passage id, as the rule is stated.
    unresolved = sorted(set(every) - set(pool.complete.tolist()))
    by_id = pooled(conn, unresolved, depth) if unresolved else {}
    found: dict[str, set[str]] = {}
    for name, rows in shares.items():
        graded = _graded_keys(conn, name, [row for row, _ in rows])
        # The pooled pairs of this share this annotator has not graded, as query rows.
        share = np.isin(pool.keys >> 32, [row for row, _ in rows])
        open_rows = set((pool.keys[share & ~np.isin(pool.keys, graded)] >> 32).tolist())
        done_rows = set(pool.complete.tolist()) - open_rows
        if by_id:
            own, _ = person_grades(conn, unresolved, annotator=name)
            done_rows |= {
                row
                for row, passages in by_id.items()
                if passages and all((row, pid) in own for pid in passages)
            }
        found[name] = {qid for row, qid in rows if row in done_rows}
    return found


#: The rule of a started share ``s`` (a row of ``assignment``): its annotator holds a
#: standing grade of their own, a person's, on some passage of its query.
_STARTED = (
    "EXISTS (SELECT 1 FROM current_grade c JOIN event e ON e.id = c.event_id"
    " WHERE c.query_id = s.query_id AND c.annotator_id = s.annotator_id"
    " AND e.source = 'human')"
)


def started(conn: sqlite3.Connection) -> set[tuple[str, str]]:
    """Every (annotator, query id) of the stored assignment where that annotator holds a
    standing grade of their own on some passage of the query: work an assign keeps."""
    return {
        (str(name), str(qid))
        for name, qid in conn.execute(
            "SELECT a.name, q.ext_id FROM assignment s"
            " JOIN annotator a ON a.id = s.annotator_id JOIN query q ON q.id = s.query_id"
            f" WHERE {_STARTED}"
        )
    }


def has_started(conn: sqlite3.Connection, annotator: str, query_row: int) -> bool:
    """Whether the query of row ``query_row`` is assigned to ``annotator`` and started
    by them (:func:`started`'s rule, for one share: one indexed read)."""
    row = conn.execute(
        "SELECT 1 FROM assignment s WHERE s.query_id = ?"
        " AND s.annotator_id = (SELECT id FROM annotator WHERE name = ?)"
        f" AND {_STARTED}",
        (query_row, annotator),
    ).fetchone()
    return row is not None


def latest_assign(conn: sqlite3.Connection) -> int | None:
    """The id of the last assign recorded (None before any): it changes with each
    assign, so a reader that kept it knows whether its shares are still the stored ones."""
    row = conn.execute("SELECT max(id) FROM assign_run").fetchone()
    return None if row is None or row[0] is None else int(row[0])


def graded_by(conn: sqlite3.Connection, annotators: Iterable[str]) -> set[tuple[str, str]]:
    """Every (annotator, query id) where one of ``annotators`` holds a standing grade of
    their own on some passage of the query, assigned to them or not: the rule of
    :func:`started` without the assignment (a first assign keeps what people graded
    before anyone assigned anything)."""
    return {
        (str(name), str(qid))
        for name, qid in conn.execute(
            "SELECT DISTINCT a.name, q.ext_id FROM current_grade c"
            " JOIN annotator a ON a.id = c.annotator_id JOIN query q ON q.id = c.query_id"
            " JOIN event e ON e.id = c.event_id"
            " WHERE a.name IN (SELECT value FROM json_each(?)) AND e.source = 'human'",
            (json_list(sorted(set(annotators))),),
        )
    }


def overlap(conn: sqlite3.Connection) -> int | None:
    """The overlap the last assign asked for; None when nothing was ever assigned."""
    row = conn.execute("SELECT overlap FROM assign_run ORDER BY id DESC LIMIT 1").fetchone()
    return None if row is None else int(row[0])


@dataclass(frozen=True)
class _PoolKeys:
    """The pooled pairs of some queries as integers, ``query row << 32 | passage row``
    (rows are far below 2**31), a pair several runs rank once for each; and the queries
    they are the whole pool of: those with something pooled and a stored passage row
    for every pooled entry."""

    keys: NDArray[np.int64]
    complete: NDArray[np.int64]


def _pool_keys(conn: sqlite3.Connection, query_rows: Sequence[int], depth: int) -> _PoolKeys:
    """The pools of :func:`raglabel.storage.audit.pooled`, read from the rankings' passage
    rows: integer arrays, no string or object per pair (the app's first read of a share
    of hundreds of queries was a second of Python objects on its UI thread)."""
    if depth < 1:
        raise ValueError("depth must be at least 1")
    queries: list[int] = []
    tops: list[bytes] = []
    width = depth * ROW_DTYPE.itemsize
    # Looked up by (run, query), the key of the rows, as ``pooled`` does and for its reason.
    for row, blob in conn.execute(
        "SELECT r.query_id, r.passage_rows FROM run CROSS JOIN json_each(?) j"
        " CROSS JOIN ranking_rows r ON r.run_id = run.id AND r.query_id = j.value",
        (json_list(list(query_rows)),),
    ):
        queries.append(row)
        tops.append(blob[:width])
    if not tops:
        empty = np.zeros(0, dtype=np.int64)
        return _PoolKeys(empty, empty)
    # One buffer and one array for every ranking: no step in Python per entry.
    passages = np.frombuffer(b"".join(tops), dtype=ROW_DTYPE).astype(np.int64)
    lengths = np.array([len(top) for top in tops], dtype=np.int64) // ROW_DTYPE.itemsize
    keys = (np.repeat(np.array(queries, dtype=np.int64), lengths) << 32) | passages
    # A 0 is an entry with no passage row when the run was stored: only its id tells.
    lacking = np.unique(keys[(keys & 0xFFFFFFFF) == 0] >> 32)
    rows = np.unique(np.array(queries, dtype=np.int64))
    return _PoolKeys(keys, rows[~np.isin(rows, lacking)])


def _graded_keys(
    conn: sqlite3.Connection, annotator: str, query_rows: Sequence[int]
) -> NDArray[np.int64]:
    """The pairs of these queries that hold ``annotator``'s own standing human grade, one
    that did not accept a judge's suggestion (the grades
    :func:`raglabel.storage.audit.person_grades` counts), as ``_PoolKeys`` keys."""
    cursor = conn.execute(
        "SELECT c.query_id << 32 | c.passage_id FROM current_grade c JOIN event e"
        " ON e.id = c.event_id WHERE c.query_id IN (SELECT value FROM json_each(?1))"
        " AND c.annotator_id = (SELECT id FROM annotator WHERE name = ?2)"
        " AND e.source = 'human' AND coalesce(e.accepted_suggestion, 0) = 0",
        (json_list(list(query_rows)), annotator),
    )
    return np.fromiter(itertools.chain.from_iterable(cursor), dtype=np.int64)


def _share_rows(conn: sqlite3.Connection, annotator: str) -> list[tuple[int, str]]:
    """``annotator``'s share as ``(query row, query id)`` in serving order."""
    return [
        (int(row), str(qid))
        for row, qid in conn.execute(
            "SELECT s.query_id, q.ext_id FROM assignment s JOIN query q ON q.id = s.query_id"
            " WHERE s.annotator_id = (SELECT id FROM annotator WHERE name = ?)"
            " ORDER BY s.position",
            (annotator,),
        )
    ]


def _first_repeat(values: Sequence[str]) -> str | None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            return value
        seen.add(value)
    return None
