"""TREC run and qrels files, read as polars frames.

Runs: ``qid Q0 docid rank score tag`` (fields past the sixth ignored); qrels:
``qid iteration docid relevance``. Blank lines and ``#`` comment lines are skipped.
"""

from __future__ import annotations

from collections.abc import Generator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from raglabel.errors import InputError
from raglabel.formats.limits import MAX_ID_CHARS
from raglabel.formats.lines import check_readable, line_of_row
from raglabel.formats.maps import GradeMap
from raglabel.formats.trec.align import as_numpy
from raglabel.formats.trec.blocks import query_blocks
from raglabel.formats.trec.canonical import is_canonical
from raglabel.formats.trec.rows import read_qrels_exactly, read_run_exactly
from raglabel.formats.trec.shape import refuse_run_as_qrels

_QRELS_FIELDS = ("qid", "iteration", "docid", "relevance")
_PAIR_SEED = 0x5EED
# An odd 64-bit constant (the golden ratio's), so that (a, b) and (b, a) hash apart.
_MIX = np.uint64(0x9E3779B97F4A7C15)
_SPACE, _NEWLINE = ord(" "), ord("\n")


def _fast_frame(
    source: Path | bytes,
    schema: dict[str, pl.DataType],
    keep: list[str],
    *,
    comments: bool = True,
) -> pl.DataFrame | None:
    """Parse a canonical single-space file (or a block of one) with polars; None when it
    is not canonical.

    A missing or empty field shows as null, a bad number as a parse error: either way
    the exact reader is asked to find and name the line. Without ``comments`` a comment
    line is read as data (its first field starts with ``#``); the caller checks.
    """
    if not comments and isinstance(source, bytes):
        frame = _lean_frame(source, schema, keep)
        if frame is not None:
            return frame
    complete = pl.all_horizontal([pl.col(name).is_not_null() for name in schema])
    # The byte scan runs beside polars' parse, which does not hold the GIL.
    with ThreadPoolExecutor(max_workers=1) as pool:
        canonical = pool.submit(is_canonical, source)
        try:
            frame = (
                _scan(source, schema, comments=comments)
                .select([*keep, complete.alias("_complete")])
                # The streaming engine parses in batches, so the columns that are only
                # checked for presence never exist whole: less memory, and fewer fresh
                # pages to fault in, which costs more than the parsing here.
                .collect(engine="streaming")
            )
        except (pl.exceptions.PolarsError, UnicodeDecodeError, ValueError):
            return None
        if not canonical.result():
            return None
    if not frame["_complete"].all():
        return None
    return frame.drop("_complete")


def _scan(source: Path | bytes, schema: dict[str, pl.DataType], *, comments: bool) -> pl.LazyFrame:
    return pl.scan_csv(
        source,
        separator=" ",
        has_header=False,
        quote_char=None,
        comment_prefix="#" if comments else None,
        schema=schema,
        extra_columns="ignore",
        missing_columns="insert",
    )


def _lean_frame(
    block: bytes, schema: dict[str, pl.DataType], keep: list[str]
) -> pl.DataFrame | None:
    """What :func:`_fast_frame` gives for a block without comments, parsing only the
    kept columns; None when that is not sure (and the full check decides).

    Checking every field for presence made polars parse all of them, and doubled the
    parse; asking it only whether the last field is there still cost a fifth of the
    parse. Here bytes answer for the fields that are not kept: when every line is
    exactly as many non-empty fields as the schema has (:func:`_plain_block`), none is
    missing, so the kept columns are all polars is asked for. Fields in between are
    then present and unparsed: only the rank, which no reader uses (a non-integer rank
    only sent the file to the exact reader, which ignores it). A line with more fields
    is not refused by the readers (they ignore the extra ones) but is left to the full
    check here.
    """
    lean = {name: kind if name in keep else pl.String() for name, kind in schema.items()}
    with ThreadPoolExecutor(max_workers=1) as pool:
        plain = pool.submit(_plain_block, block, len(schema))
        try:
            frame = _scan(block, lean, comments=False).select(keep).collect(engine="streaming")
        except (pl.exceptions.PolarsError, UnicodeDecodeError, ValueError):
            return None
        if not plain.result():
            return None
    if any(frame[name].null_count() for name in keep):
        return None
    return frame


#: Bytes of a block checked at a time: a quarter megabyte's marks stay in the core's
#: cache (a third less CPU than windows of a megabyte), and the GIL that a window's
#: ``translate`` holds is let go a few hundred times a block.
_SCAN_BYTES = 1 << 18
#: Every byte above the space: deleted, they leave a line's separators.
_FIELD_BYTES = bytes(range(_SPACE + 1, 256))


def _plain_block(block: bytes, n_fields: int) -> bool:
    """Whether every line of ``block`` is exactly ``n_fields`` non-empty fields, each
    followed by one space (the last by a newline), and the block is canonical
    (:func:`is_canonical`).

    The bytes up to the space, taken a window of whole lines at a time, must read
    ``n_fields - 1`` spaces then a newline, line after line; and no two of them may sit
    side by side nor begin the block (an empty field). That also rules out every control
    byte the exact reader must see (tab, carriage return, NUL, ...: all below the
    space), so only a block that is not ASCII needs :func:`is_canonical`'s search for
    Unicode white space. A last line without its newline, or a line longer than a
    window, is left to the full check. Deleting the other bytes (``bytes.translate``)
    leaves the separators in order at a fraction of the cost of listing their positions
    with numpy (a tenth of a large evaluation's CPU): the check costs a third less.
    """
    if not block or block[-1] != _NEWLINE:
        return False
    if not block.isascii() and not is_canonical(block):
        return False
    line = b" " * (n_fields - 1) + b"\n"
    data = np.frombuffer(block, dtype=np.uint8)
    # A window's marks and their neighbours' go into the same two buffers every time:
    # fresh arrays the size of a block cost as much in page faults as the checks.
    marks = np.empty(min(_SCAN_BYTES, data.size), dtype=np.bool_)
    doubled = np.empty_like(marks)
    at = 0
    while at < data.size:
        end = block.rfind(b"\n", at, at + _SCAN_BYTES) + 1
        if end <= at:
            return False
        separators = block[at:end].translate(None, _FIELD_BYTES)
        if separators != line * (len(separators) // n_fields):
            return False
        # Neighbouring separators (a window starts a line): an empty field or a blank line.
        size = end - at
        np.less_equal(data[at:end], _SPACE, out=marks[:size])
        np.logical_and(marks[1:size], marks[: size - 1], out=doubled[: size - 1])
        if bool(marks[0]) or bool(doubled[: size - 1].any()):
            return False
        at = end
    return True


def _ids_fit(frame: pl.DataFrame) -> bool:
    """Whether every id is short enough; else the exact reader names the first line
    that is not."""
    names = _names(frame["qid"])
    docids = frame["docid"].str
    # A string has no more characters than bytes, and its byte length is stored beside
    # it: counting characters (which reads every byte) is needed only for long ids.
    if max(_top(names.len_bytes()), _top(docids.len_bytes())) <= MAX_ID_CHARS:
        return True
    return max(_top(names.len_chars()), _top(docids.len_chars())) <= MAX_ID_CHARS


def _names(ids: pl.Series) -> Any:
    """The string methods of an id column, categorical or String."""
    return ids.cat if ids.dtype == pl.Categorical else ids.str


def _top(lengths: pl.Series) -> int:
    top = lengths.max()
    return top if isinstance(top, int) else 0


def _require_rows(path: Path, frame: pl.DataFrame, what: str) -> None:
    if frame.height == 0:
        raise InputError(path, f"has no {what} lines (the file is empty or only comments)")


def read_run(path: str | Path) -> pl.DataFrame:
    """A run as a frame ``qid`` (categorical), ``docid``, ``score`` in file order.

    Ordering is the caller's.
    """
    path = Path(path)
    check_readable(path)
    frame = read_run_block(path)
    if frame is not None:
        return frame
    rows = read_run_exactly(path)
    return pl.DataFrame(
        {"qid": rows.qids, "docid": rows.docids, "score": rows.scores},
        schema={"qid": pl.Categorical, "docid": pl.String, "score": pl.Float64},
    )


def read_run_block(source: Path | bytes) -> pl.DataFrame | None:
    """What :func:`read_run` reads quickly: a canonical run file or block of one, as its
    frame; None for anything the exact reader has to see (it also names bad lines).

    A block's ``qid`` is a String column, a whole file's a categorical one.
    """
    # Columns that are only checked for presence parse to cheap types (strings: a batch
    # of them is dropped at once, while a categorical hashes every value into the
    # process-wide table). A rank that is not an integer sends the file to the exact
    # reader, which ignores ranks. A block is grouped by query (or refused as not
    # grouped), so its rows are looked up one run of equal ids at a time and need no
    # categorical codes: hashing every row's id into the shared table was a twentieth
    # of a large evaluation.
    schema: dict[str, pl.DataType] = {
        "qid": pl.String() if isinstance(source, bytes) else pl.Categorical(),
        "q0": pl.String(),
        "docid": pl.String(),
        "rank": pl.Int64(),
        "score": pl.Float64(),
        "tag": pl.String(),
    }
    keep = ["qid", "docid", "score"]
    # polars reads much faster without looking for comments; a file that has them
    # (a row whose qid starts with "#", or a short row) is read again with them.
    frame = _fast_frame(source, schema, keep, comments=False)
    if frame is None or bool(_names(frame["qid"]).starts_with("#").any()):
        frame = _fast_frame(source, schema, keep)
    if (
        frame is not None
        and frame.height
        and bool(frame["score"].is_finite().all())
        and _ids_fit(frame)
    ):
        return frame
    return None


def read_run_blocks(
    path: Path, block_bytes: int | None = None
) -> Generator[pl.DataFrame | None, None, None]:
    """A grouped run's blocks of whole queries (:mod:`raglabel.formats.trec.blocks`), each as
    :func:`read_run_block` reads it; the next block is parsed while the caller works on
    this one (polars parses without the GIL)."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending: Future[pl.DataFrame | None] | None = None
        for block in query_blocks(path, block_bytes):
            ahead = pool.submit(read_run_block, block)
            if pending is not None:
                yield pending.result()
            pending = ahead
        if pending is not None:
            yield pending.result()


def read_qrels(path: str | Path, grade_map: GradeMap | None = None) -> pl.DataFrame:
    """Qrels as a frame ``qid, docid, grade`` (grades 1..5 through ``grade_map``).

    A label the map does not cover, and a (qid, docid) judged twice, are errors that
    name their lines.
    """
    path = Path(path)
    check_readable(path)
    refuse_run_as_qrels(path)  # before its ranks are read as labels
    grade_map = GradeMap() if grade_map is None else grade_map
    schema: dict[str, pl.DataType] = {
        name: pl.Int64() if name == "relevance" else pl.String() for name in _QRELS_FIELDS
    }
    frame = _fast_frame(path, schema, ["qid", "docid", "relevance"])
    if frame is None or not _ids_fit(frame):
        # The exact reader maps labels and rejects repeated pairs itself.
        rows = read_qrels_exactly(path, grade_map)
        return pl.DataFrame(
            {"qid": rows.qids, "docid": rows.docids, "grade": rows.grades},
            schema={"qid": pl.String, "docid": pl.String, "grade": pl.Int8},
        )
    _require_rows(path, frame, "qrels")
    labels = frame["relevance"].to_numpy()
    grades, uncovered = grade_map.apply(labels)
    if uncovered.any():
        row = int(np.flatnonzero(uncovered)[0])
        raise InputError(
            path,
            grade_map.uncovered(int(labels[row])),
            line_of_row(path, row),
        )
    frame = frame.select("qid", "docid").with_columns(grade=pl.Series(grades, dtype=pl.Int8))
    dup = _repeated_pairs(frame)
    if dup.any():
        rows_dup = np.flatnonzero(dup.to_numpy())
        first = frame.row(int(rows_dup[0]), named=True)
        same = frame.with_row_index("_row").filter(
            (pl.col("qid") == first["qid"]) & (pl.col("docid") == first["docid"])
        )["_row"]
        lines = [line_of_row(path, int(r)) for r in same[:2]]
        raise InputError(
            path,
            f"passage {first['docid']!r} is judged twice for query {first['qid']!r} "
            f"(lines {lines[0]} and {lines[1]}); keep one judgment per pair",
            lines[1],
        )
    return frame


def _repeated_pairs(frame: pl.DataFrame) -> pl.Series:
    """Whether each row's (qid, docid) occurs in another row too.

    Pairs are compared by a 64-bit hash first, sorted by numpy, and as strings only where
    hashes meet: polars' own search for repeats took over 250 MB for a million pairs.
    """
    pair = pl.struct("qid", "docid")
    # Hashed column by column: an expression over the frame would first copy its string
    # columns into one chunk each (the parser leaves them in dozens).
    qids, docids = (as_numpy(frame[name].hash(_PAIR_SEED)) for name in ("qid", "docid"))
    hashes = qids ^ (docids * _MIX)
    order = np.argsort(hashes)
    ordered = hashes[order]
    meets = np.flatnonzero(ordered[1:] == ordered[:-1])
    repeated = np.zeros(frame.height, dtype=np.bool_)
    if meets.size:
        rows = np.unique(np.concatenate([order[meets], order[meets + 1]]))
        confirmed = frame[pl.Series(rows)].select(pair.is_duplicated()).to_series().to_numpy()
        repeated[rows[confirmed]] = True
    return pl.Series(repeated)
