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

import sqlite3
from collections.abc import Iterable, Mapping, Sequence

from raglabel.errors import UsageError
from raglabel.storage.audit import person_grades, pooled
from raglabel.storage.clock import now
from raglabel.storage.items import annotator_id, json_list
from raglabel.storage.project import Project


def record(
    project: Project,
    shares: Mapping[str, Sequence[str]],
    *,
    overlap: int,
    seed: int | None,
    audit: bool,
) -> None:
    """Store ``shares`` (annotator -> query ids in serving order) as the whole assignment,
    replacing the one stored, and record the assign that made it; all or nothing.

    An annotator named here for the first time is created (names :func:`refuse_names`
    refuses stop the whole assign). An annotator stored before and left out of
    ``shares`` keeps no assignment. A row that stays keeps the assign that first gave it.
    A share its annotator has started (:func:`started`) must be among ``shares``: an
    assign that would drop one is refused.
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
        for name, qid in sorted(started(conn)):
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
            ident = annotator_id(conn, name)
            for position, qid in enumerate(qids):
                row = rows[qid]
                written.append((ident, position, row, given.get((ident, row), assign_id or 0)))
        conn.executemany(
            "INSERT INTO assignment (annotator_id, position, query_id, assign_id)"
            " VALUES (?, ?, ?, ?)",
            written,
        )


def refuse_names(conn: sqlite3.Connection, names: Iterable[str]) -> None:
    """Stop an assign that would create an annotator whose name misleads: empty, one
    ``agree`` gives its own raters (``humans``, ``judge``, ``judge (...)``), a judge
    model's in any case (their grades would read as the model's), or an annotator's
    in another case (two names for one person). Annotators already stored pass."""
    # Imported here: the judgment import brings pydantic and its file readers, which the
    # grading app (it reads shares through this module) must not pay for at its start.
    from raglabel.storage.judgment_import import asked_models, imported_models, reserved_name

    people = annotator_names(conn)
    models = [*asked_models(conn), *sorted(imported_models(conn))]
    for name in names:
        if name in people:
            continue
        if not name.strip() or name != name.strip():
            raise UsageError(f"annotator {name!r}: a name has no space at either end")
        if reserved_name(name) is not None:
            raise UsageError(
                f"annotator {name!r}: raglabel agree gives that name its own raters (humans:"
                " people's resolved grades; judge (...): the models together); choose another"
            )
        folded = name.casefold()
        model = next((m for m in models if m.casefold() == folded), None)
        if model is not None:
            raise UsageError(
                f"annotator {name!r}: the judge model {model!r} of this project has that name;"
                " a person's grades under it would read as the model's. Choose another"
            )
        person = next((p for p in people if p.casefold() == folded), None)
        if person is not None:
            raise UsageError(
                f"annotator {name!r}: the project has annotator {person!r}, the same name in"
                " another case; use that spelling, or a name of its own"
            )


def annotator_names(conn: sqlite3.Connection) -> list[str]:
    """Every annotator the project knows, by name."""
    return sorted(str(name) for (name,) in conn.execute("SELECT name FROM annotator"))


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
    pool = pooled(conn, every, depth)
    found: dict[str, set[str]] = {}
    for name, rows in shares.items():
        graded, _ = person_grades(conn, [row for row, _ in rows], annotator=name)
        found[name] = {
            qid for row, qid in rows if pool[row] and all((row, pid) in graded for pid in pool[row])
        }
    return found


def started(conn: sqlite3.Connection) -> set[tuple[str, str]]:
    """Every (annotator, query id) of the stored assignment where that annotator holds a
    standing grade of their own on some passage of the query: work an assign keeps."""
    return {
        (str(name), str(qid))
        for name, qid in conn.execute(
            "SELECT a.name, q.ext_id FROM assignment s"
            " JOIN annotator a ON a.id = s.annotator_id JOIN query q ON q.id = s.query_id"
            " WHERE EXISTS (SELECT 1 FROM current_grade c JOIN event e ON e.id = c.event_id"
            " WHERE c.query_id = s.query_id AND c.annotator_id = s.annotator_id"
            " AND e.source = 'human')"
        )
    }


def overlap(conn: sqlite3.Connection) -> int | None:
    """The overlap the last assign asked for; None when nothing was ever assigned."""
    row = conn.execute("SELECT overlap FROM assign_run ORDER BY id DESC LIMIT 1").fetchone()
    return None if row is None else int(row[0])


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
