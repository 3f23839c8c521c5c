"""The shapes a notebook holds labels and runs in, as the tables
:mod:`raglabel.analysis.memory` evaluates: no file is written and no text is parsed.

pytrec_eval's ``{qid: {docid: value}}``, or a polars or pandas DataFrame with a query,
a document and a value column named as ir_measures and ranx name them. Each bad value
is a ``ValueError`` that says which table, which row and what is allowed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from raglabel.analysis.memory import IdColumn, LabelTable, RunTable
from raglabel.errors import InputError

#: Column names a DataFrame may use, peer by peer, for each field.
QUERY_COLUMNS = ("query_id", "q_id", "qid")
DOC_COLUMNS = ("doc_id", "docid", "passage_id")
RELEVANCE_COLUMNS = ("relevance", "rel", "label", "grade")
SCORE_COLUMNS = ("score",)
#: The Arrow types of texts, as pyarrow writes them.
ARROW_TEXTS = ("string", "large_string", "string_view")


def is_frame(value: object) -> bool:
    """A polars or pandas DataFrame, told apart without importing either library."""
    return type(value).__name__ == "DataFrame" and hasattr(value, "columns")


def kind_of(value: object) -> str:
    """How the report names a table's origin: ``dict``, ``polars DataFrame``, ..."""
    if is_frame(value):
        return f"{type(value).__module__.split('.')[0]} DataFrame"
    return "dict"


def label_table(qrels: object) -> LabelTable:
    """``qrels`` (a dict of dicts or a DataFrame) as a table of integer labels."""
    name = kind_of(qrels)
    where = f"qrels {name}"
    qids, docids, values = _columns(qrels, RELEVANCE_COLUMNS, where)
    return LabelTable(name, qids, docids, _integers(values, qids, docids, where))


def run_table(run: object, name: str) -> RunTable:
    """One run (a dict of dicts or a DataFrame) as a table of scores."""
    where = f"run {name!r}"
    qids, docids, values = _columns(run, SCORE_COLUMNS, where)
    return RunTable(qids, docids, _scores(values, qids, docids, where))


def is_path(value: object) -> bool:
    return isinstance(value, (str, Path))


Columns = tuple[IdColumn, IdColumn, "NDArray[Any] | list[Any]"]


def _columns(data: object, value_columns: tuple[str, ...], where: str) -> Columns:
    if is_frame(data):
        return _frame_columns(data, value_columns, where)
    if not isinstance(data, Mapping):
        raise ValueError(
            f"{where}: expected {{qid: {{docid: value}}}}, a file path or a DataFrame, got"
            f" {type(data).__name__}"
        )
    qids: list[Any] = []
    counts: list[int] = []
    docids: list[Any] = []
    values: list[Any] = []
    # Whole lists at a time: a hundred thousand entries in a few milliseconds.
    for qid, docs in data.items():
        if not isinstance(docs, Mapping):
            raise ValueError(
                f"{where}: query {qid!r}: expected {{docid: value}}, got {type(docs).__name__}"
            )
        qids.append(qid)
        counts.append(len(docs))
        docids += docs.keys()
        values += docs.values()
    query_ids = _ids(qids, where, "query id", counts)
    return query_ids, _ids(docids, where, "doc id"), values


def _frame_columns(frame: Any, value_columns: tuple[str, ...], where: str) -> Columns:
    columns = [str(c) for c in frame.columns]
    names = [_column(columns, QUERY_COLUMNS, where), _column(columns, DOC_COLUMNS, where)]
    names.append(_column(columns, value_columns, where))
    series = [frame[name] for name in names]
    polars = hasattr(series[0], "null_count")
    # polars counts its nulls. pandas marks them with isna(), which takes longer on a
    # column of texts than reading it: there a missing id is found as a non-text.
    checked = series if polars else series[2:]
    for column, values in zip(names[-len(checked) :], checked, strict=True):
        nulls = values.null_count() if polars else int(values.isna().sum())
        if nulls:
            raise ValueError(f"{where}: column {column!r} has {nulls} missing value(s)")
    read = _polars_ids if polars else _pandas_ids
    # A query's rows are usually together, so its id is checked once, not once a row; a
    # passage's seldom are, so they are not looked for there.
    qids = read(series[0], where, "query id", grouped=True)
    return qids, read(series[1], where, "doc id", grouped=False), series[2].to_numpy()


def _polars_ids(values: Any, where: str, what: str, *, grouped: bool) -> IdColumn:
    import polars as pl  # a polars frame was given, so polars is there

    text = values.cast(pl.String)
    runs = text.rle().struct.unnest() if grouped else None
    if runs is not None and 2 * runs.height <= len(text):
        return _ids(runs["value"].to_list(), where, what, runs["len"].to_list())
    # polars joins the ids natively: no Python string per id.
    try:
        return IdColumn(text.str.join("\x00").item() or "", len(text), where, what)
    except InputError as exc:
        raise ValueError(str(exc)) from None


def _pandas_ids(values: Any, where: str, what: str, *, grouped: bool) -> IdColumn:
    arrow = _arrow_texts(values)
    if arrow is not None:
        return _polars_ids(arrow, where, what, grouped=grouped)
    array = values.to_numpy()
    if grouped and array.size > 1:
        starts = np.flatnonzero(np.concatenate([[True], array[1:] != array[:-1]]))
        if 2 * starts.size <= array.size:
            counts = np.diff(np.append(starts, array.size)).tolist()
            return _ids(array[starts].tolist(), where, what, counts)
    # An array of objects (texts, or a mix) lists them as they are stored, in half the
    # time of pandas' tolist(), which copies them through list(). Any other array, such
    # as datetimes, may give other values (integers) than pandas does, so pandas lists it.
    return _ids(array.tolist() if array.dtype == object else values.tolist(), where, what)


def _arrow_texts(values: Any) -> Any | None:
    """A pandas column of texts held by pyarrow (``str`` when pyarrow is installed,
    ``string[pyarrow]``), with no missing one, as a polars Series; None for any other
    column.

    To hand the texts out pandas makes a Python str of every row: 13 ms for 100,000
    ids (pandas 3.1, pyarrow 26), where polars takes the column in about 1 ms and joins
    the ids natively, as for a polars frame. A column with a missing id takes pandas'
    way, whose errors name what is missing.
    """
    dtype = values.dtype
    if getattr(dtype, "storage", None) != "pyarrow":
        return None
    # pandas' own text types hold only texts; its ArrowDtype holds any Arrow type.
    if str(getattr(dtype, "pyarrow_dtype", "string")) not in ARROW_TEXTS:
        return None
    import polars as pl  # a dependency of raglabel

    column = pl.Series(values)  # converted natively: no Python object per row
    if column.dtype != pl.String or column.null_count():
        return None
    return column


def _column(columns: list[str], names: tuple[str, ...], where: str) -> str:
    for name in names:
        if name in columns:
            return name
    raise ValueError(
        f"{where}: the DataFrame has no {' or '.join(names)} column (it has {columns})"
    )


def _ids(values: list[Any], where: str, what: str, counts: list[int] | None = None) -> IdColumn:
    """The ids as a column (each ``counts`` times over, when given)."""
    try:
        if counts is not None:
            return IdColumn.repeated(values, counts, where, what)
        return IdColumn.of(values, where, what)
    except TypeError:
        # Numbers as ids are read as the text a file would hold; anything else is refused.
        for v in values:
            if v is None or (isinstance(v, float) and math.isnan(v)):  # pandas: NaN
                raise ValueError(f"{where}: a {what} is missing") from None
            if isinstance(v, bool) or not isinstance(v, (str, int)):
                raise ValueError(
                    f"{where}: {what} {v!r} is a {type(v).__name__}, not a text"
                ) from None
        return _ids([str(v) for v in values], where, what, counts)
    except InputError as exc:
        raise ValueError(str(exc)) from None


def _integers(
    values: NDArray[Any] | list[Any], qids: IdColumn, docids: IdColumn, where: str
) -> NDArray[np.int64]:
    """Relevance labels: integers (a float with no fraction is one), not booleans."""
    array = np.asarray(values) if len(values) else np.zeros(0, dtype=np.int64)
    if array.dtype.kind in "iu":
        if array.dtype.kind == "u" and array.size and int(array.max()) > np.iinfo(np.int64).max:
            raise _not_integer(where, int(np.argmax(array)), array, qids, docids)
        return array.astype(np.int64)
    if array.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(array) | (array != np.floor(array)) | (np.abs(array) > 2**62)
        if bad.any():
            raise _not_integer(where, int(np.flatnonzero(bad)[0]), array, qids, docids)
        return array.astype(np.int64)
    out = np.empty(len(array), dtype=np.int64)
    for row, value in enumerate(array.tolist()):
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise _not_integer(where, row, array, qids, docids) from None
        if isinstance(value, bool) or not number.is_integer() or abs(number) > 2**62:
            raise _not_integer(where, row, array, qids, docids)
        out[row] = int(number)
    return out


def _not_integer(
    where: str, row: int, values: NDArray[Any], qids: IdColumn, docids: IdColumn
) -> ValueError:
    value = values[row].item() if hasattr(values[row], "item") else values[row]
    return ValueError(
        f"{where}: relevance {value!r} of ({qids.text(row)}, {docids.text(row)}) is not an integer"
    )


def _scores(
    values: NDArray[Any] | list[Any], qids: IdColumn, docids: IdColumn, where: str
) -> NDArray[np.float64]:
    """Scores: finite numbers (booleans and numeric texts read as a file would hold them)."""
    try:
        array = np.asarray(values, dtype=np.float64) if len(values) else np.zeros(0)
    except (TypeError, ValueError):
        given = list(values)
        row = next(r for r, v in enumerate(given) if not _is_number(v))
        raise ValueError(
            f"{where}: score {given[row]!r} of ({qids.text(row)}, {docids.text(row)})"
            " is not a number"
        ) from None
    finite = np.isfinite(array)
    if not finite.all():
        row = int(np.flatnonzero(~finite)[0])
        raise ValueError(
            f"{where}: score {array[row].item()!r} of ({qids.text(row)}, {docids.text(row)})"
            " is not a finite number"
        )
    return array


def _is_number(value: object) -> bool:
    try:
        float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return True
