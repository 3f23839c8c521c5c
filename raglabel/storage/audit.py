"""The audit sample: queries drawn uniformly at random for people to grade in full, so
that their grades can correct the judge's on every query (issue 29).

A draw takes N queries without replacement from the *population*: the queries at least
one stored run covers (has a ranking for) that no earlier draw took. It is reproducible
from its seed alone (:func:`draw_order`), and recorded in the project with its seed, the
size of the population it drew from, its time and its queries in draw order.

A drawn query is *complete* at depth K when a person graded every passage some stored
run ranks within its top K for it (:func:`waiting_pairs`). A person's grade is any
standing grade of the event log with ``source = 'human'`` that did not accept a judge's
suggestion: one made in the app or served grading, an adjudication, and one read from a
label file (``import --qrels`` or ``--beir`` under ``--annotator``, a samples file's gold
grades), since that is how people's earlier labels (NIST's, a team's own) arrive. A
judge's labels never count: its grade events carry ``source = 'judge'``, and its
suggestions (``raglabel judge``, ``import --judgments``) are a separate table, never
grades. Nor does a grade that accepted a suggestion as it was (the app's accept and
accept-all, ``accepted_suggestion = 1``): there people's grade is the judge's by
construction, and counting it would credit the judge with agreement nobody measured
(``agree`` leaves such grades out too).

A drawn query that no stored run covers any more (its runs deleted or re-imported
without it) is neither complete nor incomplete: it is outside the population the
estimate covers, and counted apart (:attr:`Audit.uncovered`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from raglabel.errors import UsageError
from raglabel.storage.clock import now
from raglabel.storage.items import json_list
from raglabel.storage.project import Project
from raglabel.storage.runs import decode_ids


@dataclass(frozen=True)
class Draw:
    """One recorded draw."""

    seed: int
    population: int  # the queries it drew from: covered by a run, not drawn before
    drawn: tuple[str, ...]  # query ids in draw order
    time: str  # UTC, ISO 8601


@dataclass(frozen=True)
class NewDraw:
    """A draw just recorded, and how many queries were left to draw from had nothing
    changed since the previous draw (None for a first draw): when that differs from
    the population, runs brought or took queries in between, and the draws together
    are no longer one uniform sample of the queries the runs cover now."""

    draw: Draw
    expected_population: int | None


@dataclass(frozen=True)
class Waiting:
    """A passage a drawn query still needs a person's grade on."""

    passage: str
    runs: int  # how many stored runs rank it within the depth
    best_rank: int  # its best 1-based rank among them
    accepted: bool = False  # graded, but only by accepting the judge's suggestion


@dataclass(frozen=True)
class Audit:
    """The sample as it stands: every draw, and which drawn queries a stored run still
    covers are complete at ``depth`` (the lists in draw order)."""

    draws: tuple[Draw, ...]
    depth: int
    complete: tuple[str, ...]
    incomplete: tuple[str, ...]
    #: Drawn queries no stored run covers any more: in neither list, nor in ``drawn``.
    uncovered: tuple[str, ...] = ()
    #: Pairs of the incomplete queries that wait only because every person's grade on
    #: them accepted the judge's suggestion.
    accepted_only: int = 0

    @property
    def drawn(self) -> int:
        """The drawn queries a stored run covers."""
        return len(self.complete) + len(self.incomplete)


def draw_order(population: Sequence[str], seed: int) -> list[str]:
    """Every member of ``population`` in the order a draw with ``seed`` takes them.

    ``population`` comes in query id order (Python's string order, which is Unicode
    code point order). Member i gets the i-th number of
    ``numpy.random.default_rng(seed).random(len(population))``; members are taken
    smallest number first, a tie (never seen in practice) by query id. Independent
    uniform numbers make every order equally likely, so the first N are a uniform
    sample without replacement, and a draw of N is the first N of a draw of more with
    the same seed.
    """
    if seed < 0:
        raise ValueError("a seed is a whole number from 0")
    keys = np.random.default_rng(seed).random(len(population))
    return [population[i] for i in np.argsort(keys, kind="stable").tolist()]


def covered_queries(conn: sqlite3.Connection) -> list[str]:
    """The queries at least one stored run has a ranking for, in query id order."""
    # One pass over the rankings: their key leads with the run, so a lookup by query
    # for each query would scan them all, once a query.
    rows = conn.execute(
        "SELECT ext_id FROM query WHERE id IN (SELECT query_id FROM ranking)"
    ).fetchall()
    return sorted(row[0] for row in rows)


def draws(conn: sqlite3.Connection) -> list[Draw]:
    """Every recorded draw, oldest first."""
    members: dict[int, list[str]] = {}
    for draw_id, qid in conn.execute(
        "SELECT m.draw_id, q.ext_id FROM audit_member m JOIN query q ON q.id = m.query_id"
        " ORDER BY m.draw_id, m.position"
    ):
        members.setdefault(draw_id, []).append(qid)
    return [
        Draw(seed, population, tuple(members.get(draw_id, ())), time)
        for draw_id, seed, population, time in conn.execute(
            "SELECT id, seed, population, drawn_at FROM audit_draw ORDER BY id"
        )
    ]


def drawn_rows(conn: sqlite3.Connection) -> list[tuple[int, str]]:
    """Every drawn query as ``(query row, query id)``, in draw order over all draws."""
    return conn.execute(
        "SELECT m.query_id, q.ext_id FROM audit_member m JOIN query q ON q.id = m.query_id"
        " ORDER BY m.draw_id, m.position"
    ).fetchall()


def draw(project: Project, size: int, seed: int) -> NewDraw:
    """Draw ``size`` queries with ``seed`` from those not drawn yet, and record the
    draw; all or nothing. Asking for more than are left is an error saying how many are."""
    if size < 1:
        raise UsageError(f"--sample {size}: draw at least 1 query")
    if seed < 0:
        raise UsageError(f"--seed {seed}: a seed is a whole number from 0")
    conn = project.conn
    # Under the write lock: two draws at once must not both take a query, nor miss one.
    with project.write():
        covered = covered_queries(conn)
        earlier = draws(conn)
        taken = {qid for d in earlier for qid in d.drawn}
        population = [qid for qid in covered if qid not in taken]
        if not covered:
            raise UsageError(
                "no stored run covers any query: import runs first (raglabel import DB --run ...)"
            )
        if size > len(population):
            already = len(covered) - len(population)
            drawn_note = f", {already} of them drawn already" if already else ""
            raise UsageError(
                f"--sample {size}: only {len(population)} queries are left to draw"
                f" ({len(covered)} covered by the stored runs{drawn_note})"
            )
        members = draw_order(population, seed)[:size]
        time = now()
        draw_id = conn.execute(
            "INSERT INTO audit_draw (seed, population, drawn_at) VALUES (?, ?, ?)",
            (seed, len(population), time),
        ).lastrowid
        rows = dict(
            conn.execute(
                "SELECT ext_id, id FROM query WHERE ext_id IN (SELECT value FROM json_each(?))",
                (json_list(members),),
            ).fetchall()
        )
        conn.executemany(
            "INSERT INTO audit_member (draw_id, position, query_id) VALUES (?, ?, ?)",
            [(draw_id, position, rows[qid]) for position, qid in enumerate(members)],
        )
    expected = None
    if earlier:
        last = earlier[-1]
        expected = last.population - len(last.drawn)
    return NewDraw(Draw(seed, len(population), tuple(members), time), expected)


def pooled(
    conn: sqlite3.Connection, query_rows: Sequence[int], depth: int
) -> dict[int, dict[str, list[int]]]:
    """For each of these query rows, every passage some stored run ranks within its top
    ``depth``, with its 1-based rank in each such run (one rank per run)."""
    if depth < 1:
        raise ValueError("depth must be at least 1")
    ranks: dict[int, dict[str, list[int]]] = {row: {} for row in query_rows}
    # Looked up by (run, query), the rankings' key, in that order: a filter on the
    # query alone would scan every ranking of every run (the app asks after each grade).
    for row, blob in conn.execute(
        "SELECT r.query_id, r.passage_ids FROM run CROSS JOIN json_each(?) j"
        " CROSS JOIN ranking r ON r.run_id = run.id AND r.query_id = j.value",
        (json_list(list(query_rows)),),
    ):
        for rank, pid in enumerate(decode_ids(blob)[:depth], 1):
            ranks[row].setdefault(pid, []).append(rank)
    return ranks


def person_grades(
    conn: sqlite3.Connection, query_rows: Sequence[int], *, annotator: str | None = None
) -> tuple[set[tuple[int, str]], set[tuple[int, str]]]:
    """The ``(query row, passage id)`` pairs of these query rows that hold a person's
    standing grade of their own reading, and those whose people's grades all accepted
    the judge's suggestion; with ``annotator``, that person's grades alone."""
    # Whatever its origin (app, served grading, adjudication, a label file): a judge's
    # grade events are the only ones of the log that are not a person's. A person's
    # grade that accepted a suggestion is the judge's grade again, so it completes nothing.
    graded: set[tuple[int, str]] = set()
    accepted: set[tuple[int, str]] = set()
    for row, pid, took in conn.execute(
        "SELECT c.query_id, p.ext_id, coalesce(e.accepted_suggestion, 0) FROM current_grade c"
        " JOIN event e ON e.id = c.event_id JOIN passage p ON p.id = c.passage_id"
        " WHERE c.query_id IN (SELECT value FROM json_each(?1)) AND e.source = 'human'"
        " AND (?2 IS NULL OR c.annotator_id = (SELECT id FROM annotator WHERE name = ?2))",
        (json_list(list(query_rows)), annotator),
    ):
        (accepted if took else graded).add((row, pid))
    return graded, accepted - graded


def waiting_pairs(
    conn: sqlite3.Connection,
    query_rows: Sequence[int],
    depth: int,
    *,
    annotator: str | None = None,
) -> dict[int, list[Waiting]]:
    """For each of these query rows, the passages some stored run ranks within its top
    ``depth`` that no person graded, most-retrieved first, then by best rank, then by
    passage id (the grading app's queue order); an empty list for a complete query.
    With ``annotator``, only that person's grades count (an assignment's progress)."""
    ranks = pooled(conn, query_rows, depth)
    graded, accepted = person_grades(conn, query_rows, annotator=annotator)
    found: dict[int, list[Waiting]] = {}
    for row, seen in ranks.items():
        left = [
            Waiting(pid, len(at), min(at), (row, pid) in accepted)
            for pid, at in seen.items()
            if (row, pid) not in graded
        ]
        found[row] = sorted(left, key=lambda w: (-w.runs, w.best_rank, w.passage))
    return found


def audit(conn: sqlite3.Connection, depth: int) -> Audit:
    """The draws, and which drawn queries a stored run covers are complete at ``depth``
    (a query no run ranks anything for has nothing waiting, yet nothing to complete)."""
    rows = drawn_rows(conn)
    covered = set(covered_queries(conn))
    kept = [(row, qid) for row, qid in rows if qid in covered]
    waiting = waiting_pairs(conn, [row for row, _ in kept], depth)
    return Audit(
        tuple(draws(conn)),
        depth,
        tuple(qid for row, qid in kept if not waiting[row]),
        tuple(qid for row, qid in kept if waiting[row]),
        tuple(qid for _, qid in rows if qid not in covered),
        sum(w.accepted for left in waiting.values() for w in left),
    )
