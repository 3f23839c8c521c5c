"""pandas frames as ``raglabel.evaluate``'s tables: every way pandas keeps a column of
texts (objects, its ``str`` and ``string`` types in Python, and in pyarrow when it is
installed) gives the same ids and the same errors as a polars frame and a dict."""

from __future__ import annotations

import contextlib
import importlib.util
from typing import Any

import numpy as np
import polars as pl
import pytest

import raglabel
from raglabel.api.tables import label_table, run_table

pd = pytest.importorskip("pandas")

ARROW = importlib.util.find_spec("pyarrow") is not None
needs_arrow = pytest.mark.skipif(not ARROW, reason="pandas keeps texts in pyarrow only with it")

# Queries in blocks, one passage per query in two (and non-ASCII ids of several widths).
QRELS = [
    ("q1", "d1", 2),
    ("q1", "dé", 0),
    ("q1", "d10", 3),
    ("q2", "文書", 1),
    ("q2", "d1", 3),
    ("q10", "d7", 0),
]
# A run whose queries alternate: too many blocks for the grouped reading. As many rows
# as the qrels, which test_texts_in_pyarrow_make_no_python_text_per_row counts on.
RUN = [
    ("q1", "d1", 0.5),
    ("q2", "文書", 0.25),
    ("q1", "dé", 2.0),
    ("q2", "d10", 1.0),
    ("q10", "d7", 3.5),
    ("q1", "d9", 0.125),
]


def _python_dtypes() -> list[Any]:
    """Each way pandas may keep a text column as Python objects, as a ``dtype``."""
    kinds: list[Any] = [pytest.param(object, id="object"), "string[python]"]
    with contextlib.suppress(TypeError):  # pandas 3's str without pyarrow; not in pandas 2
        kinds.append(pytest.param(pd.StringDtype("python", na_value=np.nan), id="str[python]"))
    return kinds


def _arrow_dtypes() -> list[Any]:
    """Each way pandas may keep a text column in pyarrow (none without pyarrow)."""
    if not ARROW:
        return []
    import pyarrow as pa

    kinds: list[Any] = ["string[pyarrow]"]
    kinds += [pd.ArrowDtype(pa.string()), pd.ArrowDtype(pa.large_string())]
    with contextlib.suppress(TypeError):  # pandas 3's str with pyarrow
        kinds.append(pytest.param(pd.StringDtype("pyarrow", na_value=np.nan), id="str[pyarrow]"))
    return kinds


ARROW_DTYPES = _arrow_dtypes()
TEXT_DTYPES = _python_dtypes() + ARROW_DTYPES


def _pandas(rows: list[tuple[Any, ...]], value: str, dtype: Any) -> Any:
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", value])
    return frame.astype({"query_id": dtype, "doc_id": dtype})


def _polars(rows: list[tuple[Any, ...]], value: str) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=["query_id", "doc_id", value], orient="row")


def _same(got: np.ndarray[Any, Any], expected: np.ndarray[Any, Any]) -> None:
    assert got.dtype == expected.dtype
    assert got.tolist() == expected.tolist()


@pytest.mark.parametrize("dtype", TEXT_DTYPES)
def test_each_pandas_text_column_reads_as_a_polars_frame_and_a_dict(dtype: Any) -> None:
    labels = label_table(_pandas(QRELS, "relevance", dtype))
    for expected in (
        label_table(_polars(QRELS, "relevance")),
        label_table(
            {"q1": {"d1": 2, "dé": 0, "d10": 3}, "q2": {"文書": 1, "d1": 3}, "q10": {"d7": 0}}
        ),
    ):
        _same(labels.qids, expected.qids)
        _same(labels.docids, expected.docids)
        _same(labels.labels, expected.labels)
    run = run_table(_pandas(RUN, "score", dtype), "run")
    expected_run = run_table(_polars(RUN, "score"), "run")
    _same(run.qids, expected_run.qids)
    _same(run.docids, expected_run.docids)
    _same(run.scores, expected_run.scores)
    assert run.qids.tolist() == [q.encode() for q, _, _ in RUN]
    assert run.docids.tolist() == [d.encode() for _, d, _ in RUN]


@pytest.mark.parametrize("dtype", TEXT_DTYPES)
def test_each_pandas_text_column_gives_the_dicts_numbers(dtype: Any) -> None:
    run = _pandas(RUN, "score", dtype)
    from_frame = raglabel.evaluate(_pandas(QRELS, "relevance", dtype), run, metrics="ap,ndcg@3")
    from_polars = raglabel.evaluate(
        _polars(QRELS, "relevance"), _polars(RUN, "score"), metrics="ap,ndcg@3"
    )
    assert from_frame.per_query == from_polars.per_query
    assert from_frame.means == from_polars.means


@pytest.mark.parametrize("dtype", TEXT_DTYPES)
@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ("a b", r"run 'run': doc id 'a b' is empty or holds white space"),
        ("", r"run 'run': a doc id is empty"),
        ("a\x00b", r"run 'run': a doc id holds a NUL character"),
        ("x" * 1025, r"run 'run': doc id 'xxxx.*is 1025 characters long"),
    ],
)
def test_a_bad_id_is_refused_in_the_same_words_whatever_keeps_it(
    dtype: Any, doc: str, message: str
) -> None:
    rows = [*RUN[:3], ("q1", doc, 1.0), *RUN[3:]]
    with pytest.raises(ValueError, match=message):
        run_table(_pandas(rows, "score", dtype), "run")


@pytest.mark.parametrize("dtype", TEXT_DTYPES)
def test_an_empty_run_frame_has_no_entries(dtype: Any) -> None:
    with pytest.raises(ValueError, match="run 'run': has no entries"):
        raglabel.evaluate(_pandas(QRELS, "relevance", dtype), _pandas([], "score", dtype))


def test_a_missing_id_is_named_as_pandas_marks_it() -> None:
    # Objects and pandas 3's str mark a missing text as None or NaN; the ``string`` types
    # as pandas' NA, which is no text (the words predate the pyarrow reading).
    rows = [*RUN, ("q1", None, 1.0)]
    for dtype in [object] + ([pd.StringDtype("pyarrow", na_value=np.nan)] if ARROW else []):
        with pytest.raises(ValueError, match=r"^run 'run': a doc id is missing$"):
            run_table(_pandas(rows, "score", dtype), "run")
    for dtype in ["string[python]"] + (["string[pyarrow]"] if ARROW else []):
        with pytest.raises(ValueError, match=r"doc id <NA> is a NAType, not a text$"):
            run_table(_pandas(rows, "score", dtype), "run")


def test_datetimes_as_ids_are_refused_as_pandas_gives_them() -> None:
    # numpy would list datetimes as integers, which would pass for ids.
    frame = pd.DataFrame(
        {
            "query_id": ["q1", "q1"],
            "doc_id": pd.to_datetime(["2024-01-01", "2024-01-02"]),
            "score": [1.0, 2.0],
        }
    )
    with pytest.raises(ValueError, match=r"doc id Timestamp\('2024-01-01 00:00:00'\) is a"):
        run_table(frame, "run")


@pytest.mark.parametrize("arrow", [False, True] if ARROW else [False])
def test_numbers_as_ids_read_as_the_text_a_file_would_hold(arrow: bool) -> None:
    frame = pd.DataFrame({"query_id": [7, 7, 10], "doc_id": [3, 12, 3], "score": [1.0, 2.0, 3.0]})
    if arrow:
        frame = frame.astype({"query_id": "int64[pyarrow]", "doc_id": "int64[pyarrow]"})
    run = run_table(frame, "run")
    assert run.qids.tolist() == [b"7", b"7", b"10"]
    assert run.docids.tolist() == [b"3", b"12", b"3"]


def test_an_object_column_is_listed_by_numpy_not_by_pandas(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # pandas' Series.tolist() goes through list(), twice as slow as the array's tolist().
    frame = _pandas(RUN, "score", object)
    expected = run_table(frame, "run").docids

    def refused(self: Any) -> list[Any]:
        raise AssertionError("a column of objects listed by pandas")

    monkeypatch.setattr(pd.Series, "tolist", refused)
    _same(run_table(frame, "run").docids, expected)


@needs_arrow
@pytest.mark.parametrize("dtype", ARROW_DTYPES)
def test_texts_in_pyarrow_make_no_python_text_per_row(
    dtype: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    frame = _pandas(RUN, "score", dtype)
    qrels = _pandas(QRELS, "relevance", dtype)
    expected = run_table(frame, "run"), label_table(qrels)

    def refusing(method: Any) -> Any:
        # The columns' names are texts in pyarrow too: only the columns' rows are refused.
        def refused(self: Any, *args: Any, **kwargs: Any) -> Any:
            if len(self) == len(RUN):
                raise AssertionError("a pyarrow column turned into Python objects")
            return method(self, *args, **kwargs)

        return refused

    for kind in {type(frame["doc_id"].array), type(qrels["query_id"].array)}:
        for name in ("to_numpy", "tolist", "__iter__"):
            monkeypatch.setattr(kind, name, refusing(getattr(kind, name)))
    run, labels = run_table(frame, "run"), label_table(qrels)
    _same(run.docids, expected[0].docids)
    _same(run.qids, expected[0].qids)
    _same(labels.docids, expected[1].docids)
    _same(labels.qids, expected[1].qids)
