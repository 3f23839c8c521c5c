"""Which candidate pairs a passage judge run asks about: by query, depth, the labeling
queue's order and a limit, with or without the pairs people graded, and which of them
have no text to show the judge."""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from raglabel.errors import UsageError
from raglabel.judge.work import Pair
from raglabel.storage.runs import decode_ids


@dataclass(frozen=True)
class Selection:
    """Which pairs a judge run asks about."""

    queries: tuple[str, ...] = ()  # external query ids; empty means all
    depth: int | None = None  # only candidates some run ranked this high
    queue: bool = False  # in the labeling queue's order
    limit: int | None = None
    include_graded: bool = False  # also pairs people graded, to measure agreement
    # Leave out pairs whose query or passage has no text (before the limit counts).
    skip_missing_text: bool = False


@dataclass(frozen=True)
class Picked:
    """The pairs a selection chose, and those of them with no text to show the judge:
    left out of ``pairs`` under ``skip_missing_text``, else among them."""

    pairs: list[Pair]
    without_text: list[Pair]


def pick_pairs(conn: sqlite3.Connection, selection: Selection) -> Picked:
    clauses: list[str] = []
    args: list[object] = []
    if selection.queries:
        known = {
            ext: row
            for row, ext in conn.execute(
                f"SELECT id, ext_id FROM query WHERE ext_id IN ({_marks(selection.queries)})",
                selection.queries,
            )
        }
        unknown = [q for q in selection.queries if q not in known]
        if unknown:
            raise UsageError(f"--query {unknown[0]!r}: no such query in the project")
        clauses.append(f"c.query_id IN ({_marks(known)})")
        args.extend(known.values())
    if selection.depth is not None:
        clauses.append("c.best_rank <= ?")
        args.append(selection.depth)
    if not selection.include_graded:
        clauses.append(
            "NOT EXISTS (SELECT 1 FROM current_grade g"
            " WHERE g.query_id = c.query_id AND g.passage_id = c.passage_id)"
        )
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    rows = conn.execute(
        "SELECT c.query_id, c.passage_id, q.ext_id, p.ext_id, coalesce(q.text, ''),"
        " coalesce(p.text, ''), coalesce(p.title, ''), c.best_rank"
        " FROM candidate c JOIN query q ON q.id = c.query_id"
        f" JOIN passage p ON p.id = c.passage_id {where}"
        " ORDER BY q.ext_id, coalesce(c.best_rank, 1e18), p.ext_id",
        args,
    ).fetchall()
    pairs = [Pair(*row[:7]) for row in rows]
    if selection.queue:
        pairs = _queue_order(conn, pairs, {(r[0], r[1]): r[7] for r in rows}, selection.depth)
    if selection.skip_missing_text:
        without_text = [p for p in pairs if not p.has_text]
        pairs = [p for p in pairs if p.has_text]
    if selection.limit is not None:
        pairs = pairs[: selection.limit]
    if not selection.skip_missing_text:
        without_text = [p for p in pairs if not p.has_text]
    return Picked(pairs, without_text)


def _queue_order(
    conn: sqlite3.Connection,
    pairs: list[Pair],
    best: dict[tuple[int, int], int | None],
    depth: int | None,
) -> list[Pair]:
    """The grading app's queue: queries with the most such pairs first, and in each the
    pairs most runs retrieved, then the best-ranked."""
    wanted = {(p.query_row, p.pid) for p in pairs}
    runs: Counter[tuple[int, str]] = Counter()
    for query_row, blob in conn.execute("SELECT query_id, passage_ids FROM ranking"):
        ids = decode_ids(blob)
        for pid in ids[:depth] if depth else ids:
            if (query_row, pid) in wanted:
                runs[query_row, pid] += 1
    per_query = Counter(p.query_row for p in pairs)

    def order(p: Pair) -> tuple[int, str, int, float, str]:
        rank = best[p.query_row, p.passage_row]
        return (-per_query[p.query_row], p.qid, -runs[p.query_row, p.pid], rank or 1e18, p.pid)

    return sorted(pairs, key=order)


def _marks(items: Sequence[object] | dict[str, int]) -> str:
    return ", ".join("?" * len(items))
