"""Answer samples read back whole, for the judge, the statistics and the grading app."""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from collections.abc import Sequence

from raglabel.errors import UsageError
from raglabel.judge.work import AnswerItem, Chunk
from raglabel.storage.labels import resolved_grades


def system_names(conn: sqlite3.Connection) -> list[str]:
    return [name for (name,) in conn.execute("SELECT name FROM answer_system ORDER BY name")]


def require_systems(conn: sqlite3.Connection) -> list[str]:
    """The answer systems' names; none is a usage error (for ``--answers`` commands)."""
    names = system_names(conn)
    if not names:
        raise UsageError(
            "--answers: the project has no answer systems; import one with"
            " raglabel import DB --answers NAME=FILE"
        )
    return names


def answer_items(
    conn: sqlite3.Connection,
    systems: Sequence[str] = (),
    *,
    queries: Sequence[str] = (),
    relevance_threshold: int = 4,
) -> list[AnswerItem]:
    """Every sample of ``systems`` (all when empty), by system name then file order;
    only those of ``queries`` (external ids) when given. An unknown name is an error.

    ``gold`` holds the texts of the query's passages whose resolved human grade reaches
    ``relevance_threshold``: context_recall's stand-in for a missing reference.
    """
    known = set(system_names(conn))
    unknown = [name for name in systems if name not in known]
    if unknown:
        have = ", ".join(sorted(known)) or "none; import one with --answers NAME=FILE"
        raise UsageError(f"--system {unknown[0]!r}: no such answer system (systems: {have})")
    wanted = set(systems) or known
    rows = conn.execute(
        "SELECT s.id, y.id, y.name, s.sample_id, s.query_id, q.ext_id,"
        " coalesce(nullif(s.question, ''), q.text, ''), coalesce(s.answer, ''), s.reference"
        " FROM answer_sample s JOIN answer_system y ON y.id = s.system_id"
        " JOIN query q ON q.id = s.query_id ORDER BY y.name, s.id"
    ).fetchall()
    if queries:
        keep = set(queries)
        marks = ", ".join("?" * len(keep))
        sql = f"SELECT ext_id FROM query WHERE ext_id IN ({marks})"
        found = {ext for (ext,) in conn.execute(sql, list(keep))}
        unknown = [q for q in queries if q not in found]
        if unknown:
            raise UsageError(f"--query {unknown[0]!r}: no such query in the project")
        rows = [row for row in rows if row[5] in keep]
    rows = [row for row in rows if row[2] in wanted]
    chunks: dict[int, list[Chunk]] = defaultdict(list)
    everything = len(rows) == conn.execute("SELECT count(*) FROM answer_sample").fetchone()[0]
    # One query's samples (the app) read only their own contexts; the whole set (eval,
    # the judge) reads the table in one pass.
    parts = [None] if everything else [rows[i : i + 900] for i in range(0, len(rows), 900)]
    for part in parts:
        where = "" if part is None else f" WHERE c.sample_id IN ({', '.join('?' * len(part))})"
        for sample, position, pid, text, rank in conn.execute(
            "SELECT c.sample_id, c.position, p.ext_id, coalesce(c.text, p.text, ''), c.rank"
            f" FROM answer_context c JOIN passage p ON p.id = c.passage_id{where}"
            " ORDER BY c.sample_id, c.position",
            [] if part is None else [row[0] for row in part],
        ):
            chunks[sample].append(Chunk(position, pid, text, rank))
    gold = _gold(conn, {row[4] for row in rows}, relevance_threshold)
    items = []
    for row_id, system_row, system, sample_id, query_row, qid, question, answer, ref in rows:
        items.append(
            AnswerItem(
                system_row,
                system,
                sample_id,
                query_row,
                qid,
                question,
                answer,
                _reference(ref),
                tuple(chunks.get(row_id, ())),
                gold.get(query_row, ()),
            )
        )
    return items


def _reference(text: str | None) -> str | tuple[str, ...] | None:
    if text is None:
        return None
    value = json.loads(text)
    if isinstance(value, list):
        facts = tuple(str(fact) for fact in value if str(fact).strip())
        return facts or None
    return str(value) if str(value).strip() else None


def _gold(
    conn: sqlite3.Connection, query_rows: set[int], threshold: int
) -> dict[int, tuple[str, ...]]:
    if not query_rows:
        return {}
    relevant: dict[int, list[str]] = defaultdict(list)
    only = next(iter(query_rows)) if len(query_rows) == 1 else None
    for query_row, pid, grade in resolved_grades(conn, query_row=only):
        if query_row in query_rows and grade >= threshold:
            relevant[query_row].append(pid)
    if not relevant:
        return {}
    wanted = sorted({pid for pids in relevant.values() for pid in pids})
    texts: dict[str, str] = {}
    # Chunks of at most 900 ids: under SQLite's default limit of host parameters.
    for start in range(0, len(wanted), 900):
        part = wanted[start : start + 900]
        marks = ", ".join("?" * len(part))
        texts.update(
            conn.execute(
                f"SELECT ext_id, text FROM passage WHERE ext_id IN ({marks})"
                " AND text IS NOT NULL AND text != ''",
                part,
            ).fetchall()
        )
    return {
        query_row: tuple(texts[pid] for pid in sorted(pids) if pid in texts)
        for query_row, pids in relevant.items()
        if any(pid in texts for pid in pids)
    }
