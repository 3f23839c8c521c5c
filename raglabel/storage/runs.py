"""System runs in the database: each query's ranking stored once, in final rank order.

A ranking is one row per (run, query) holding the passage ids joined by newlines and
the scores as little-endian float64, both already in rank order (ties and repeats
resolved at import, as trec_eval orders a run). That keeps a 10M-line run well under
its file size and lets ``eval`` read it back without sorting again.

Beside the ids, ``ranking_rows`` holds each ranking's passage row of every entry as
little-endian int32 (0 where the file held no such passage when it was written): the grading
app reads a big project's runs as integers, where mapping tens of millions of ids back
to rows costs a minute. An entry below the pool depth has no row until somebody grades
it; ``run.passage_rows_upto`` is the largest passage row when the rows were written, so
a reader knows which later rows (``> upto``) a 0 may stand for.
"""

from __future__ import annotations

import contextlib
import itertools
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from raglabel.errors import InputError
from raglabel.storage.background import in_background
from raglabel.storage.clock import now
from raglabel.storage.items import (
    ensure_queries,
    json_list,
    known_passage_rows,
    last_passage_row,
    passage_row_map,
    plan_ids,
    worth_reading_whole,
)

if TYPE_CHECKING:
    import polars as pl

    from raglabel.formats.trec.ranked import GroupedRun

SCORE_DTYPE = np.dtype("<f8")
#: A ranking's passage rows as stored.
ROW_DTYPE = np.dtype("<i4")


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


def rank_trec_file(name: str, path: Path) -> RunColumns:
    """Read a TREC run and encode every query's list in trec_eval order.

    The order is :mod:`raglabel.formats.trec.ranked`'s (score descending, then passage
    id descending as bytes; a repeated passage keeps its best-ranked occurrence); this
    only encodes it as stored.
    """
    import polars as pl

    from raglabel.formats.trec.ranked import GroupedRun, read_ranked, sorted_run

    run = read_ranked(path)
    if isinstance(run, GroupedRun):
        columns = _grouped_columns(name, path, run)
        if columns is not None:
            return columns
        run = sorted_run(run.frame)
    ranked = run.frame
    qids = ranked["qid"]
    starts = np.flatnonzero((qids != qids.shift(1)).fill_null(value=True).to_numpy())
    bounds = [*starts.tolist(), ranked.height]
    scores = ranked["score"].to_numpy().astype(SCORE_DTYPE, copy=False)
    joined = ranked.group_by("qid", maintain_order=True).agg(pl.col("docid").str.join("\n"))
    query_names = joined["qid"].cast(pl.String).to_list()
    # As UTF-8 bytes straight from polars: no Python string of every ranking to encode.
    id_blobs: list[bytes] = joined["docid"].cast(pl.Binary).to_list()
    return RunColumns(
        name,
        str(path),
        query_names,
        id_blobs,
        ranked["docid"],
        np.diff(np.array(bounds, dtype=np.int64)).astype(np.int64),
        [scores[bounds[i] : bounds[i + 1]].tobytes() for i in range(len(query_names))],
        run.repeats,
    )


def _grouped_columns(name: str, path: Path, run: GroupedRun) -> RunColumns | None:
    """The columns of a grouped run, encoded in file order; None when its ids are too
    many bytes to join (:data:`_JOINED_LIMIT`), and the run is sorted instead.

    The frame is never gathered in rank order (a copy of ten million strings), nor
    grouped again by query: the ids are joined once in file order, the ties' bytes
    rewritten in place, and each query's ids are a slice of that buffer. ``docids``
    stay in file order, with the file row of every stored entry beside them
    (``RunColumns.order``).
    """
    import polars as pl

    docids = run.frame["docid"]
    scores = run.frame["score"].to_numpy()
    starts, ends, by_name = run.starts, run.ends, run.by_name
    # Every entry's passage id and its newline, back to back in file order.
    sizes = docids.str.len_bytes().to_numpy().astype(np.int64) + 1
    after = np.cumsum(sizes)
    if int(after[-1]) >= _JOINED_LIMIT:
        return None  # joined into one polars string, which holds at most 4 GiB
    joined: bytes = docids.str.join("\n").cast(pl.Binary).item() + b"\n"
    ids = memoryview(joined)
    ranked_scores = scores.astype(SCORE_DTYPE, copy=True)
    if run.tied is not None and run.tie_source is not None:
        source = run.tie_source
        ranked_scores[run.tied] = scores[source]
        # The tied rows' bytes (each id with its newline) rewritten in their new order: a
        # group's rows keep the bytes they span between them, so the tied rows' bytes in
        # file order take the new order's ids back to back. A mask of one byte per byte
        # of ids: positions as integers took eight per tied byte, several times over.
        patched = bytearray(joined)
        buffer = np.frombuffer(patched, dtype=np.uint8)  # writable: the bytearray's own
        moved: bytes = docids.gather(source).str.join("\n").cast(pl.Binary).item() + b"\n"
        buffer[np.repeat(run.tied, sizes)] = np.frombuffer(moved, dtype=np.uint8)
        ids = memoryview(patched)
    first = after[starts] - sizes[starts]
    blocks = by_name.tolist()
    return RunColumns(
        name,
        str(path),
        [run.queries[b] for b in blocks],
        # The last newline of each query's slice left out: ids joined by newlines.
        [ids[first[b] : after[ends[b] - 1] - 1].tobytes() for b in blocks],
        docids,
        (ends - starts)[by_name],
        [ranked_scores[starts[b] : ends[b]].tobytes() for b in blocks],
        order=run.order,
    )


@dataclass
class RunColumns:
    """A run as :func:`store` writes it, whatever it was read from: the queries (in query
    id order from a file, in their own order from samples and answers), each one's
    passage ids and scores as stored (:func:`encode_ids`, float64); every entry's passage
    id back to back (``lengths`` of them per query) in one column, which keeps a 10M-line
    run out of Python strings, or in a list for a run built in Python (samples, answers:
    small, and their import need not load polars). With ``order``, the column holds the
    ids in another order (the file's), and ``order`` gives the row of each entry in it."""

    name: str
    source: str
    queries: list[str]
    id_blobs: list[bytes]
    docids: pl.Series | list[str]
    lengths: NDArray[np.int64]
    scores: list[bytes | None]
    repeats: list[str] = field(default_factory=list)
    order: NDArray[np.int64] | None = None

    @classmethod
    def of(cls, run: Run) -> RunColumns:
        return cls(
            run.name,
            run.source,
            [r.query for r in run.rankings],
            [encode_ids(r.passages) for r in run.rankings],
            [p for r in run.rankings for p in r.passages],
            np.array([len(r.passages) for r in run.rankings], dtype=np.int64),
            [
                None if r.scores is None else r.scores.astype(SCORE_DTYPE).tobytes()
                for r in run.rankings
            ],
            run.repeats,
        )

    @property
    def entries(self) -> int:
        return int(self.lengths.sum())


def store(
    conn: sqlite3.Connection, run: Run | RunColumns, *, depth: int, replace: bool = False
) -> dict[str, int]:
    """Write a run and make its top ``depth`` entries per query candidates for grading."""
    columns = run if isinstance(run, RunColumns) else RunColumns.of(run)
    existing = conn.execute("SELECT id FROM run WHERE name = ?", (columns.name,)).fetchone()
    if existing is not None:
        if not replace:
            raise InputError(
                columns.source,
                f"a run named {columns.name!r} is already in the project "
                "(name it differently, or give --replace to overwrite it)",
            )
        conn.execute("DELETE FROM ranking WHERE run_id = ?", existing)
        conn.execute("DELETE FROM ranking_rows WHERE run_id = ?", existing)
        conn.execute("DELETE FROM run WHERE id = ?", existing)
    query_ids = ensure_queries(conn, columns.queries)
    lengths = columns.lengths
    ends = np.cumsum(lengths)
    # Each entry's rank in its query (1-based), and the pool: the top ``depth`` of each.
    ranks = np.arange(1, int(ends[-1]) + 1 if len(ends) else 1) - np.repeat(ends - lengths, lengths)
    pool = np.flatnonzero(ranks <= depth)
    docids = columns.docids
    pool_rows = pool if columns.order is None else columns.order[pool]
    pooled_ids = (
        list(map(docids.__getitem__, pool_rows.tolist()))
        if isinstance(docids, list)
        else docids.gather(pool_rows).to_list()
    )
    pooled_queries = np.repeat(np.arange(len(lengths)), np.minimum(lengths, depth)).tolist()
    # Every entry's passage row: the pool's are all known once it is stored, and an entry
    # below the depth has the row the file holds already (another run's pool, a label
    # file). The passage table, when worth reading whole, is read once, before the pool
    # is added: it serves for the pool's known ids too.
    whole = passage_row_map(conn) if worth_reading_whole(conn, columns.entries) else None
    passage_ids, insert_passages = plan_ids(conn, "passage", pooled_ids, whole=whole)
    query_rows = [query_ids[q] for q in columns.queries]
    run_ids: list[int] = []

    def write_rankings() -> None:
        """The pool's new passages, the run and its rankings: SQL only, no entry rows."""
        insert_passages()
        run_ids.append(
            conn.execute(
                "INSERT INTO run (name, source, imported_at, queries, entries,"
                " passage_rows_upto) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    columns.name,
                    columns.source,
                    now(),
                    len(columns.queries),
                    columns.entries,
                    last_passage_row(conn),
                ),
            ).lastrowid
            or 0
        )
        conn.executemany(
            "INSERT INTO ranking (run_id, query_id, passage_ids, scores) VALUES (?, ?, ?, ?)",
            (
                (run_ids[0], query_row, blob, scores)
                for query_row, blob, scores in zip(
                    query_rows, columns.id_blobs, columns.scores, strict=True
                )
            ),
        )

    if whole is not None:
        # The map is whole once the planned ids are in: SQLite writes the rankings (and
        # lets go of the GIL meanwhile) while the entries' rows are found beside it.
        known = whole
        known.update(passage_ids)
        written = in_background(write_rankings)
        try:
            rows = _entry_rows(docids, known)
        except BaseException:
            # The thread is waited out before the caller rolls back; what stopped this
            # thread (an interrupt, say) is what the caller hears, not the writer's error.
            with contextlib.suppress(Exception):
                written()
            raise
        written()
    else:
        write_rankings()
        distinct = (
            list(dict.fromkeys(docids)) if isinstance(docids, list) else docids.unique().to_list()
        )
        rows = _entry_rows(docids, known_passage_rows(conn, distinct))
    if columns.order is not None:
        rows = rows[columns.order]
    run_id = run_ids[0]
    stored = rows.astype(ROW_DTYPE, copy=False)
    conn.executemany(
        "INSERT INTO ranking_rows (run_id, query_id, passage_rows) VALUES (?, ?, ?)",
        (
            (run_id, query_row, stored[end - n : end].tobytes())
            for query_row, end, n in zip(query_rows, ends.tolist(), lengths.tolist(), strict=True)
        ),
    )
    conn.executemany(
        "INSERT INTO candidate (query_id, passage_id, best_rank) VALUES (?, ?, ?)"
        " ON CONFLICT (query_id, passage_id) DO UPDATE SET best_rank ="
        " min(coalesce(best_rank, excluded.best_rank), excluded.best_rank)",
        zip(
            [query_rows[i] for i in pooled_queries],
            [passage_ids[p] for p in pooled_ids],
            ranks[pool].tolist(),
            strict=True,
        ),
    )
    return {"queries": len(columns.queries), "entries": columns.entries, "pooled": len(pool)}


def _entry_rows(docids: pl.Series | list[str], known: dict[str, int]) -> NDArray[np.int32]:
    """The row ``known`` gives each of ``docids`` (0: none), in their order."""
    if isinstance(docids, list):
        return np.fromiter(map(known.get, docids, itertools.repeat(0)), ROW_DTYPE, len(docids))
    import polars as pl

    names = pl.Series("docid", list(known), dtype=pl.String)
    values = np.fromiter(known.values(), np.int32, len(known))
    rows = np.zeros(len(docids), dtype=np.int32)
    if not len(names) or not len(docids):
        return rows
    # Ten million ids probed in a hash table of strings cost a second and more. Their
    # 64-bit hashes are looked up instead: a flag for each hash prefix rules out nearly
    # every entry at once, a binary search finds the rest among the sorted hashes of the
    # known ids, and only those entries' ids are compared as strings. Equal hashes
    # are equal strings unless that comparison says not (then it is no known id, as
    # the known ids' hashes are distinct); two known ids of one hash take the join.
    hashes = names.hash(_ID_SEED).to_numpy()
    by_hash = np.argsort(hashes)
    ordered = hashes[by_hash]
    if bool((ordered[1:] == ordered[:-1]).any()):
        return _joined_rows(docids, names, values)
    entry_hashes = docids.hash(_ID_SEED).to_numpy()
    seen = np.zeros(1 << _PREFIX_BITS, dtype=np.bool_)
    seen[ordered >> np.uint64(64 - _PREFIX_BITS)] = True
    maybe = np.flatnonzero(seen[entry_hashes >> np.uint64(64 - _PREFIX_BITS)])
    place = np.searchsorted(ordered, entry_hashes[maybe]).clip(max=len(ordered) - 1)
    hit = ordered[place] == entry_hashes[maybe]
    entries, known_at = maybe[hit], by_hash[place[hit]]
    same = (docids.gather(entries) == names.gather(known_at)).to_numpy()
    rows[entries[same]] = values[known_at[same]]
    return rows


#: The most bytes the grouped path joins a run's ids into (polars' largest string is
#: 4 GiB; well below, a run of some hundred million lines takes the sort instead).
_JOINED_LIMIT = 1 << 31

#: The seed of the ids' hashes, and the bits of a hash that index the prefilter: 16 MiB
#: of flags, 4% of them set by a big project's 600,000 passages.
_ID_SEED = 0x1D5
_PREFIX_BITS = 24


def _joined_rows(
    docids: pl.Series, names: pl.Series, values: NDArray[np.int32]
) -> NDArray[np.int32]:
    """What :func:`_entry_rows` gives, by a join on the id column (``names`` distinct)."""
    import polars as pl

    mapping = pl.DataFrame({"docid": names, "row": pl.Series(values, dtype=pl.Int32)})
    rows: NDArray[np.int32] = (
        docids.alias("docid")
        .to_frame()
        .join(mapping, on="docid", how="left", maintain_order="left")["row"]
        .fill_null(0)
        .to_numpy()
    )
    return rows


def encode_rankings(rows: dict[str, int], rankings: list[list[str]]) -> list[bytes]:
    """Each ranking's passage rows as stored (0: no row in ``rows``). One lookup pass in
    C over every entry (``map`` of ``dict.get``) and one array: a Python step per entry
    cost a run of 10M entries seconds more."""
    lengths = np.array([len(ids) for ids in rankings], dtype=np.int64)
    flat = np.fromiter(
        map(rows.get, itertools.chain.from_iterable(rankings), itertools.repeat(0)),
        dtype=ROW_DTYPE,
        count=int(lengths.sum()),
    )
    ends = np.cumsum(lengths)
    return [
        flat[end - n : end].tobytes()
        for end, n in zip(ends.tolist(), lengths.tolist(), strict=True)
    ]


def fill_passage_rows(conn: sqlite3.Connection) -> None:
    """Write the passage rows of every stored ranking from its ids (the upgrade of a file
    whose rankings hold ids only), run by run to bound the memory."""
    upto = last_passage_row(conn)
    # One read of the passage table for every run when it is worth it, not one a run.
    shared = passage_row_map(conn) if worth_reading_whole(conn, stored_entries(conn)) else None
    for (run_id,) in conn.execute("SELECT id FROM run ORDER BY id").fetchall():
        rankings = [
            (query_row, decode_ids(blob))
            for query_row, blob in conn.execute(
                "SELECT query_id, passage_ids FROM ranking WHERE run_id = ?", (run_id,)
            ).fetchall()
        ]
        rows = (
            shared
            if shared is not None
            else known_passage_rows(conn, [p for _, ids in rankings for p in ids])
        )
        encoded = encode_rankings(rows, [ids for _, ids in rankings])
        conn.executemany(
            "INSERT INTO ranking_rows (run_id, query_id, passage_rows) VALUES (?, ?, ?)",
            (
                (run_id, query_row, blob)
                for (query_row, _), blob in zip(rankings, encoded, strict=True)
            ),
        )
        conn.execute("UPDATE run SET passage_rows_upto = ? WHERE id = ?", (upto, run_id))


def run_names(conn: sqlite3.Connection) -> list[str]:
    return [name for (name,) in conn.execute("SELECT name FROM run ORDER BY id")]


def stored_runs(conn: sqlite3.Connection) -> list[tuple[int, str]]:
    """Every stored run as ``(id, name)``, in the order the runs were stored."""
    return conn.execute("SELECT id, name FROM run ORDER BY id").fetchall()


@dataclass(frozen=True)
class RunRows:
    """A stored run's passage rows back to back, query after query in query row order:
    the first ``lengths[0]`` are query ``query_rows[0]``'s ranking, and so on. ``upto``
    is the largest passage row when they were written (see the module's notes)."""

    run_id: int
    name: str
    upto: int
    query_rows: NDArray[np.int64]
    lengths: NDArray[np.int64]
    rows: NDArray[np.int32]


def run_rows(conn: sqlite3.Connection, runs: Sequence[tuple[int, str]]) -> list[RunRows]:
    """These runs' passage rows (``(id, name)`` as :func:`stored_runs` gave them), in
    that order. A run no longer stored (replaced or deleted since) reads as empty."""
    out = []
    for run_id, name in runs:
        found = conn.execute("SELECT passage_rows_upto FROM run WHERE id = ?", (run_id,)).fetchone()
        if found is None:
            empty = np.zeros(0, np.int64)
            out.append(RunRows(run_id, name, 0, empty, empty, np.zeros(0, np.int32)))
        else:
            out.append(_rows_of_run(conn, run_id, name, found[0]))
    return out


def _rows_of_run(conn: sqlite3.Connection, run_id: int, name: str, upto: int) -> RunRows:
    found = conn.execute(
        "SELECT query_id, passage_rows FROM ranking_rows WHERE run_id = ? ORDER BY query_id",
        (run_id,),
    ).fetchall()
    blobs = [bytes(blob) for _, blob in found]
    # One buffer for the whole run: a copy in C instead of a Python step per entry.
    rows = np.frombuffer(b"".join(blobs), dtype=ROW_DTYPE).astype(np.int32)
    return RunRows(
        run_id,
        name,
        int(upto),
        np.array([query_row for query_row, _ in found], dtype=np.int64),
        np.array([len(blob) // ROW_DTYPE.itemsize for blob in blobs], dtype=np.int64),
        rows,
    )


def query_rankings(
    conn: sqlite3.Connection, query_row: int, runs: Sequence[int]
) -> list[list[str]]:
    """One query's passage ids in each of these runs (by id, in that order; empty where
    a run lacks the query or is no longer stored): one indexed read a run."""
    return [ranking_ids(conn, run_id, query_row) for run_id in runs]


def queries_rankings(
    conn: sqlite3.Connection, query_rows: Sequence[int], runs: Sequence[int]
) -> dict[int, list[list[str]]]:
    """What :func:`query_rankings` gives for each of these queries, by query row: one
    read a run for all of them."""
    out: dict[int, list[list[str]]] = {row: [[] for _ in runs] for row in query_rows}
    wanted = json_list(query_rows)
    for i, run_id in enumerate(runs):
        for row, blob in conn.execute(
            "SELECT query_id, passage_ids FROM ranking WHERE run_id = ?"
            " AND query_id IN (SELECT value FROM json_each(?))",
            (run_id, wanted),
        ):
            out[row][i] = decode_ids(blob)
    return out


def ranking_ids(conn: sqlite3.Connection, run_id: int, query_row: int) -> list[str]:
    """One run's passage ids for one query, best first (empty if it lacks the query)."""
    row = conn.execute(
        "SELECT passage_ids FROM ranking WHERE run_id = ? AND query_id = ?", (run_id, query_row)
    ).fetchone()
    return [] if row is None else decode_ids(row[0])


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
