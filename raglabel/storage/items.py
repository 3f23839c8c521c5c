"""Queries, passages and annotators by their external ids: created when first named, read back."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray


def json_list(values: Iterable[object]) -> str:
    """``values`` as one JSON array, for ``json_each``: SQLite walks a bound array in C,
    where binding a parameter a row (or chunks of IN lists) from Python costs more than
    the writes it feeds. Strings go as UTF-8, not ``\\u`` escapes."""
    return json.dumps(list(values), ensure_ascii=False, separators=(",", ":"))


#: Values per bound JSON array: its text stays far below SQLite's length limit.
JSON_CHUNK = 1_000_000
#: Up to this many rows per name looked up, a table is read whole rather than probed.
_SCAN_FACTOR = 2


def plan_ids(
    conn: sqlite3.Connection,
    table: str,
    ext_ids: Iterable[str],
    *,
    whole: dict[str, int] | None = None,
) -> tuple[dict[str, int], Callable[[], None]]:
    """The row id of every name in ``ext_ids`` (query or passage ids): known ones read
    from ``table``, the others given the next ids in order of first mention; and the
    call that inserts those others. Until it runs they are not in the table; the caller
    may do other work first (SQLite releases the GIL while it inserts), but no other
    statement on the connection. Inside the caller's write transaction, where nobody
    else inserts. ``whole``: the table's every name and id, which the caller has read
    already (:func:`passage_row_map`), looked up instead of the table."""
    wanted = list(dict.fromkeys(ext_ids))
    # max(id) stands in for the row count (ids are dense), found without a scan.
    top = conn.execute(f"SELECT coalesce(max(id), 0) FROM {table}").fetchone()[0]
    if whole is None:
        known = _known_ids(conn, table, wanted, top)
    else:
        known = {ext: whole[ext] for ext in wanted if ext in whole}
    missing = [ext for ext in wanted if ext not in known] if known else wanted
    known.update(zip(missing, range(top + 1, top + 1 + len(missing)), strict=True))
    # The arrays are made here, so that the insert itself runs in SQLite alone.
    chunks = [
        (top + 1 + start, json_list(missing[start : start + JSON_CHUNK]))
        for start in range(0, len(missing), JSON_CHUNK)
    ]
    return known, _inserter(conn, table, chunks)


def plan_name_ids(
    conn: sqlite3.Connection, table: str, names: NDArray[np.bytes_], *, by_name: bool = False
) -> tuple[NDArray[np.int64], Callable[[], None]]:
    """:func:`plan_ids` for names given as fixed-width UTF-8 bytes, zero-padded, none
    holding a byte below the space (a canonical file's column): the row id of each entry
    of ``names``, in their order, and the call that inserts the new names, which take
    the next ids in order of first mention, exactly as :func:`plan_ids` gives them, or
    with ``by_name`` in the order of the names themselves (UTF-8 byte order, which is
    Python's order of the strings).

    One sort of the names in numpy finds the distinct ones and where each is first
    mentioned: a dictionary over 400,000 Python strings, and making those strings, cost
    several times more.
    """
    unique, first, inverse = np.unique(names, return_index=True, return_inverse=True)
    # The distinct names' indexes in the order their new ids go: unique is sorted.
    mentioned = np.arange(len(unique)) if by_name else np.argsort(first)
    top = conn.execute(f"SELECT coalesce(max(id), 0) FROM {table}").fetchone()[0]
    ids = np.zeros(len(unique), dtype=np.int64)  # 0: not in the table yet
    for start in range(0, len(unique) if top else 0, JSON_CHUNK):
        # Each name probes the index once, and only the names found come back, as their
        # place in the array: no Python string per name, where reading the table into a
        # dictionary cost three times as much next to a 10M-line run's 200,000 passages.
        found = conn.execute(
            f"SELECT j.key, t.id FROM json_each(?) j CROSS JOIN {table} t ON t.ext_id = j.value",
            (_json_names(unique[start : start + JSON_CHUNK]),),
        ).fetchall()
        if found:
            places, known = np.array(found, dtype=np.int64).reshape(-1, 2).T
            ids[start + places] = known
    missing = mentioned[ids[mentioned] == 0]
    ids[missing] = np.arange(top + 1, top + 1 + len(missing), dtype=np.int64)
    chunks = [
        (top + 1 + start, _json_names(unique[missing[start : start + JSON_CHUNK]]))
        for start in range(0, len(missing), JSON_CHUNK)
    ]
    return ids[inverse.reshape(-1)], _inserter(conn, table, chunks)


def _known_ids(conn: sqlite3.Connection, table: str, wanted: list[str], top: int) -> dict[str, int]:
    """The row ids of the names in ``wanted`` (distinct) that ``table`` holds; ``top``
    is its largest id."""
    if not wanted or not top:
        return {}
    if _scan_beats_probes(top, len(wanted)):
        everything = dict(conn.execute(f"SELECT ext_id, id FROM {table}"))
        return {ext: everything[ext] for ext in wanted if ext in everything}
    return _rows_by_name(conn, table, wanted)


def _scan_beats_probes(top: int, lookups: int) -> bool:
    """Whether reading a table whose largest id is ``top`` whole beats probing its ext_id
    index ``lookups`` times: reading every row in order is cheaper than probing the index
    at random for each name once the table is not much larger than the list."""
    return top <= _SCAN_FACTOR * lookups


def _rows_by_name(conn: sqlite3.Connection, table: str, names: Sequence[str]) -> dict[str, int]:
    """The row id of each of ``names`` that ``table`` holds, probing its ext_id index."""
    sql = f"SELECT j.value, t.id FROM json_each(?) j JOIN {table} t ON t.ext_id = j.value"
    return _pairs_of(conn, sql, names)


def _inserter(
    conn: sqlite3.Connection, table: str, chunks: list[tuple[int, str]]
) -> Callable[[], None]:
    """The call that inserts each chunk's names (a JSON array) from the chunk's first id."""

    def insert() -> None:
        for chunk in chunks:
            conn.execute(
                f"INSERT INTO {table} (id, ext_id) SELECT ? + key, value FROM json_each(?)", chunk
            )

    return insert


# Bytes a JSON string cannot hold as they are: the quote, the backslash, control bytes.
_QUOTE, _BACKSLASH, _SPACE = (ord(c) for c in '"\\ ')


def _json_names(names: NDArray[np.bytes_]) -> str:
    """``names`` as the JSON array :func:`json_list` makes of them as strings, joined
    as bytes when no name needs an escape."""
    values: list[bytes] = names.tolist()  # the zero padding is dropped
    raw = names.view(np.uint8)
    escaped = (raw == _QUOTE) | (raw == _BACKSLASH) | ((raw < _SPACE) & (raw != 0))
    if not values or bool(escaped.any()):
        return json_list(value.decode("utf-8") for value in values)
    return (b'["' + b'","'.join(values) + b'"]').decode("utf-8")


def _ensure(conn: sqlite3.Connection, table: str, ext_ids: Iterable[str]) -> dict[str, int]:
    ids, insert = plan_ids(conn, table, ext_ids)
    insert()
    return ids


def ensure_queries(conn: sqlite3.Connection, ext_ids: Iterable[str]) -> dict[str, int]:
    return _ensure(conn, "query", ext_ids)


def ensure_passages(conn: sqlite3.Connection, ext_ids: Iterable[str]) -> dict[str, int]:
    return _ensure(conn, "passage", ext_ids)


def annotator_id(conn: sqlite3.Connection, name: str) -> int:
    row = conn.execute("SELECT id FROM annotator WHERE name = ?", (name,)).fetchone()
    if row is not None:
        return int(row[0])
    return int(conn.execute("INSERT INTO annotator (name) VALUES (?)", (name,)).lastrowid or 0)


def lookup(conn: sqlite3.Connection, table: str, ext_id: str) -> int | None:
    row = conn.execute(f"SELECT id FROM {table} WHERE ext_id = ?", (ext_id,)).fetchone()
    return None if row is None else int(row[0])


def expected_answers(conn: sqlite3.Connection) -> dict[str, str]:
    """Each query's expected answer, where the samples it came from had one."""
    return dict(
        conn.execute("SELECT ext_id, expected_answer FROM query WHERE expected_answer IS NOT NULL")
    )


def query_cutoffs(conn: sqlite3.Connection) -> dict[str, int]:
    """Each query's own cutoff, where its sample set one."""
    return dict(conn.execute("SELECT ext_id, k FROM query WHERE k IS NOT NULL"))


def passage_texts(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT ext_id, text FROM passage WHERE text IS NOT NULL"))


def query_ids(conn: sqlite3.Connection) -> list[str]:
    """Every query's id, texts left unread (a project may hold many long queries)."""
    return [ext_id for (ext_id,) in conn.execute("SELECT ext_id FROM query")]


def query_rows(conn: sqlite3.Connection) -> list[tuple[int, str, str | None]]:
    """Every query as ``(row id, query id, text)``, in row id order."""
    return conn.execute("SELECT id, ext_id, text FROM query ORDER BY id").fetchall()


def passage_texts_of(
    conn: sqlite3.Connection, ext_ids: Sequence[str]
) -> list[tuple[str, str | None, str | None]]:
    """``(passage id, title, text)`` of the named passages that exist, in no set order."""
    found: list[tuple[str, str | None, str | None]] = []
    # SQLite caps the number of bound parameters; a query's pool is far below it.
    for start in range(0, len(ext_ids), 500):
        chunk = ext_ids[start : start + 500]
        marks = ",".join("?" * len(chunk))
        found += conn.execute(
            f"SELECT ext_id, title, text FROM passage WHERE ext_id IN ({marks})", chunk
        )
    return found


def passage_rows(conn: sqlite3.Connection) -> list[tuple[str, str | None, str | None]]:
    """Every passage as ``(passage id, title, text)``, in row id order."""
    return conn.execute("SELECT ext_id, title, text FROM passage ORDER BY id").fetchall()


def passage_ids_by_row(conn: sqlite3.Connection, rows: Sequence[int]) -> dict[int, str]:
    """The passage id of each of these passage rows that exists."""
    return _names_by_row(conn, "passage", rows)


def _names_by_row(conn: sqlite3.Connection, table: str, rows: Sequence[int]) -> dict[int, str]:
    """The ``ext_id`` of each of ``rows`` that ``table`` holds, probed in the list's order."""
    return _pairs_of(
        conn, f"SELECT t.id, t.ext_id FROM json_each(?) j JOIN {table} t ON t.id = j.value", rows
    )


def names_of_rows(conn: sqlite3.Connection, table: str, rows: NDArray[np.int64]) -> dict[int, str]:
    """The ``ext_id`` of each row id in ``rows`` (repeats allowed) that ``table`` holds,
    and perhaps of others: the table read whole when it is not much larger than the
    distinct rows, else those probed in ascending order, so that neighbouring rows are
    read from the same pages."""
    if not rows.size:
        return {}
    distinct = np.unique(rows)
    top = int(conn.execute(f"SELECT coalesce(max(id), 0) FROM {table}").fetchone()[0])
    if _scan_beats_probes(top, distinct.size):
        everything: dict[int, str] = dict(conn.execute(f"SELECT id, ext_id FROM {table}"))
        return everything
    return _names_by_row(conn, table, distinct.tolist())


def passage_rows_by_id(conn: sqlite3.Connection, ext_ids: Sequence[str]) -> dict[str, int]:
    """The row of each of these passage ids that exists."""
    return _rows_by_name(conn, "passage", ext_ids)


def _pairs_of(conn: sqlite3.Connection, sql: str, values: Sequence[Any]) -> dict[Any, Any]:
    """The (key, value) rows ``sql`` gives for ``values`` bound as JSON arrays (``?``),
    a chunk of them at a time."""
    found: dict[Any, Any] = {}
    for start in range(0, len(values), JSON_CHUNK):
        found.update(conn.execute(sql, (json_list(values[start : start + JSON_CHUNK]),)))
    return found


def known_passage_rows(conn: sqlite3.Connection, ext_ids: Sequence[str]) -> dict[str, int]:
    """The row of each of these passage ids the file holds, for many ids at once (a
    run's every entry); it may name other passages too. Once the table is not much
    larger than the list, it is read whole: cheaper than probing, or than making the
    list distinct first."""
    if worth_reading_whole(conn, len(ext_ids)):
        return passage_row_map(conn)
    # Not worth it for the whole list, so not for its distinct ids either: probe.
    return _rows_by_name(conn, "passage", list(dict.fromkeys(ext_ids)))


def worth_reading_whole(conn: sqlite3.Connection, lookups: int) -> bool:
    """Whether reading the whole passage table beats probing its index ``lookups`` times."""
    return _scan_beats_probes(last_passage_row(conn), lookups)


def passage_row_map(conn: sqlite3.Connection) -> dict[str, int]:
    """Every passage id the file holds, with its row."""
    return dict(conn.execute("SELECT ext_id, id FROM passage"))


def last_passage_row(conn: sqlite3.Connection) -> int:
    """The largest passage row (rows only grow: a passage is never deleted)."""
    return int(conn.execute("SELECT coalesce(max(id), 0) FROM passage").fetchone()[0])
