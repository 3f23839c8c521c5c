"""System runs in the database: each query's ranking stored once, in final rank order.

A ranking is one row per (run, query) holding the passage ids joined by newlines and
the scores as little-endian float64, both already in rank order (ties and repeats
resolved at import, as trec_eval orders a run). That keeps a 10M-line run well under
its file size and lets ``eval`` read it back without sorting again.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from raglabel.errors import InputError
from raglabel.storage.items import ensure_passages, ensure_queries
from raglabel.storage.project import now

if TYPE_CHECKING:
    import polars as pl

SCORE_DTYPE = np.dtype("<f8")


@dataclass
class Ranking:
    """One query's ranked passage ids (best first) and their scores, if the input had any."""

    query: str
    passages: list[str]
    scores: NDArray[np.float64] | None


@dataclass
class Run:
    """A run ready to store: its rankings in rank order and the repeats dropped on the way."""

    name: str
    source: str
    rankings: list[Ranking]
    repeats: list[str] = field(default_factory=list)  # "docid in qid" kept once

    @property
    def entries(self) -> int:
        return sum(len(r.passages) for r in self.rankings)


def rank_trec_file(name: str, path: Path) -> Run:
    """Read a TREC run and put every query's list in trec_eval order.

    Score descending, then passage id descending as bytes; a repeated passage keeps
    its best-ranked occurrence.
    """
    import polars as pl

    from raglabel.formats.trec import read_run

    frame = read_run(path)
    ranked = frame.sort(["qid", "score", "docid"], descending=[False, True, True])
    before = ranked.height
    ranked = ranked.unique(subset=["qid", "docid"], keep="first", maintain_order=True)
    repeats: list[str] = []
    if ranked.height != before:
        doubled = frame.filter(pl.struct("qid", "docid").is_duplicated()).unique(
            subset=["qid", "docid"], maintain_order=True
        )
        repeats = [f"{d} in {q}" for q, d in doubled.select("qid", "docid").iter_rows()]
    qids = ranked["qid"]
    starts = np.flatnonzero((qids != qids.shift(1)).fill_null(value=True).to_numpy())
    bounds = [*starts.tolist(), ranked.height]
    scores = ranked["score"].to_numpy().astype(SCORE_DTYPE, copy=False)
    joined = ranked.group_by("qid", maintain_order=True).agg(pl.col("docid").str.join("\n"))
    rankings = [
        Ranking(qid, ids.split("\n"), scores[bounds[i] : bounds[i + 1]])
        for i, (qid, ids) in enumerate(joined.iter_rows())
    ]
    return Run(name, str(path), rankings, repeats)


def store(
    conn: sqlite3.Connection, run: Run, *, depth: int, replace: bool = False
) -> dict[str, int]:
    """Write a run and make its top ``depth`` entries per query candidates for grading."""
    existing = conn.execute("SELECT id FROM run WHERE name = ?", (run.name,)).fetchone()
    if existing is not None:
        if not replace:
            raise InputError(
                run.source,
                f"a run named {run.name!r} is already in the project "
                "(name it differently, or give --replace to overwrite it)",
            )
        conn.execute("DELETE FROM ranking WHERE run_id = ?", existing)
        conn.execute("DELETE FROM run WHERE id = ?", existing)
    query_ids = ensure_queries(conn, (r.query for r in run.rankings))
    run_id = conn.execute(
        "INSERT INTO run (name, source, imported_at, queries, entries) VALUES (?, ?, ?, ?, ?)",
        (run.name, run.source, now(), len(run.rankings), run.entries),
    ).lastrowid
    conn.executemany(
        "INSERT INTO ranking (run_id, query_id, passage_ids, scores) VALUES (?, ?, ?, ?)",
        (
            (
                run_id,
                query_ids[r.query],
                encode_ids(r.passages),
                None if r.scores is None else r.scores.astype(SCORE_DTYPE).tobytes(),
            )
            for r in run.rankings
        ),
    )
    pooled = [
        (r.query, pid, rank) for r in run.rankings for rank, pid in enumerate(r.passages[:depth], 1)
    ]
    passage_ids = ensure_passages(conn, (pid for _, pid, _ in pooled))
    conn.executemany(
        "INSERT INTO candidate (query_id, passage_id, best_rank) VALUES (?, ?, ?)"
        " ON CONFLICT (query_id, passage_id) DO UPDATE SET best_rank ="
        " min(coalesce(best_rank, excluded.best_rank), excluded.best_rank)",
        ((query_ids[q], passage_ids[p], rank) for q, p, rank in pooled),
    )
    return {"queries": len(run.rankings), "entries": run.entries, "pooled": len(pooled)}


def run_names(conn: sqlite3.Connection) -> list[str]:
    return [name for (name,) in conn.execute("SELECT name FROM run ORDER BY id")]


@dataclass(frozen=True)
class JoinedRun:
    """A stored run's passage ids back to back, query after query in query row id order:
    the first ``lengths[0]`` ids are query ``query_rows[0]``'s ranking, and so on."""

    name: str
    query_rows: list[int]
    lengths: list[int]
    ids: list[str]


def joined_runs(conn: sqlite3.Connection) -> list[JoinedRun]:
    """Every stored run, in the order the runs were stored, for readers that slice the
    ids of a run instead of holding a list per query."""
    return [
        _joined(conn, run_id, name)
        for run_id, name in conn.execute("SELECT id, name FROM run ORDER BY id").fetchall()
    ]


def _joined(conn: sqlite3.Connection, run_id: int, name: str) -> JoinedRun:
    rows = sorted(
        conn.execute("SELECT query_id, passage_ids FROM ranking WHERE run_id = ?", (run_id,))
    )
    texts = [bytes(blob).decode("utf-8") for _, blob in rows]
    # One split over the whole run instead of a Python step per entry.
    ids = "\n".join(texts).split("\n") if texts else []
    lengths = [text.count("\n") + 1 for text in texts]
    return JoinedRun(name, [query_row for query_row, _ in rows], lengths, ids)


def encode_ids(passages: list[str]) -> bytes:
    """A ranking's passage ids as stored: joined by newlines (ids never hold one)."""
    return "\n".join(passages).encode("utf-8")


def decode_ids(blob: bytes) -> list[str]:
    return bytes(blob).decode("utf-8").split("\n")


def stored_entries(conn: sqlite3.Connection) -> int:
    """Entries over every stored run: how big reading them back will be."""
    return int(conn.execute("SELECT coalesce(sum(entries), 0) FROM run").fetchone()[0])


def ranked_ids(conn: sqlite3.Connection, run: str) -> list[tuple[str, list[str]]]:
    """A stored run's passage ids per query, best first, as ``(query id, ids)``."""
    return [(qid, decode_ids(blob)) for qid, blob in _ranking_blobs(conn, run)]


def ranked_frame(conn: sqlite3.Connection, run: str) -> pl.DataFrame:
    """A stored run as a ``qid``/``docid`` frame in rank order, for the columnar aligner."""
    import polars as pl

    rows = _ranking_blobs(conn, run)
    # One string split in polars instead of ten million Python strings.
    lists = pl.Series("docid", [bytes(blob).decode("utf-8") for _, blob in rows]).str.split("\n")
    lengths = lists.list.len().to_numpy()
    qids = pl.Series([qid for qid, _ in rows]).gather(np.repeat(np.arange(len(rows)), lengths))
    return pl.DataFrame({"qid": qids, "docid": lists.explode()})


def _ranking_blobs(conn: sqlite3.Connection, run: str) -> list[tuple[str, bytes]]:
    return conn.execute(
        "SELECT q.ext_id, r.passage_ids FROM ranking r"
        " JOIN query q ON q.id = r.query_id JOIN run ON run.id = r.run_id"
        " WHERE run.name = ?",
        (run,),
    ).fetchall()


def rankings_by_run(
    conn: sqlite3.Connection, queries: set[str]
) -> dict[str, tuple[list[str], list[str]]]:
    """Every stored run restricted to ``queries``, as parallel ``(qids, docids)`` lists in
    query id order, by run name in the order the runs were stored."""
    out: dict[str, tuple[list[str], list[str]]] = {}
    for name, qid, blob in conn.execute(
        "SELECT run.name, q.ext_id, r.passage_ids FROM ranking r JOIN run ON run.id = r.run_id"
        " JOIN query q ON q.id = r.query_id ORDER BY run.id, q.ext_id"
    ):
        if qid in queries:
            qids, docids = out.setdefault(name, ([], []))
            ids = decode_ids(blob)
            qids += [qid] * len(ids)
            docids += ids
    return out
