"""Ids handed to ``raglabel.evaluate`` in memory: the checked, fixed-width bytes of
:class:`raglabel.analysis.memory.IdColumn` (ASCII ids are checked in one numpy pass, any
other text by Python's reading of white space), and the pandas frames a notebook holds
(categories, extra columns, ids that are numbers, missing scores, repeated pairs, with
and without pyarrow) against pytrec_eval and against the same rows as dicts."""

from __future__ import annotations

import contextlib
import importlib.util
import random
import re
import warnings
from typing import Any

import numpy as np
import pytest
import pytrec_eval

import raglabel
from raglabel.analysis import memory
from raglabel.analysis.memory import IdColumn
from raglabel.api.tables import run_table
from raglabel.errors import InputError
from raglabel.formats.limits import MAX_ID_CHARS

pd = pytest.importorskip("pandas")

ARROW = importlib.util.find_spec("pyarrow") is not None
#: Characters Python reads as white space, ASCII's and some of Unicode's.
ASCII_SPACES = [c for c in map(chr, range(128)) if c.isspace()]
OTHER_SPACES = ["\x85", "\xa0", "\u2028", "\u3000"]


def _numpy_bytes(ids: list[str]) -> np.ndarray[Any, Any]:
    """numpy's own encoding of the ids (zero-padded to the longest one's bytes)."""
    return np.array([i.encode("utf-8") for i in ids], dtype=np.bytes_)


def _same_bytes(ids: list[str]) -> None:
    got = IdColumn.of(ids, "run 'run'", "doc id").values
    expected = _numpy_bytes(ids)
    assert got.dtype == expected.dtype
    assert got.tobytes() == expected.tobytes()


def test_ascii_ids_of_every_width_are_numpys_bytes() -> None:
    rng = random.Random(7)
    letters = [chr(c) for c in range(33, 127)]
    ids = ["".join(rng.choices(letters, k=rng.randint(1, 40))) for _ in range(2000)]
    _same_bytes(ids)
    _same_bytes(["x"])
    _same_bytes(["same", "same", "same"])


def test_other_ids_are_numpys_bytes() -> None:
    _same_bytes(["dé", "文書", "d1", "q\U0001f600"])
    # Control characters that are not white space: the one pass sees codes up to 32
    # other than NUL and leaves the ids to Python's reading, which keeps them.
    _same_bytes(["a\x01b", "c\x7f", "\x1bz", "d"])
    # The widest id allowed, in the widest characters, beside a one-byte id: every
    # column past the short id's end is zeroed.
    _same_bytes(["a", "文" * MAX_ID_CHARS, "\U0001f600" * MAX_ID_CHARS, "bc"])


def test_ascii_ids_are_checked_without_pythons_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    def read(joined: str, table: str, what: str) -> None:
        raise AssertionError(f"{what}s read by str.split: {joined[:20]!r}")

    monkeypatch.setattr(memory, "_refuse_white_space", read)
    _same_bytes([f"doc{i}" for i in range(1000)])
    with pytest.raises(AssertionError, match=r"str\.split"):
        IdColumn.of(["dé"], "run 'run'", "doc id")


@pytest.mark.parametrize("space", ASCII_SPACES + OTHER_SPACES)
def test_every_white_space_is_refused_with_the_id(space: str) -> None:
    ids = ["d1", f"a{space}b", "d2"]
    message = f"run 'run': doc id {f'a{space}b'!r} is empty or holds white space"
    with pytest.raises(InputError, match=f"^{re.escape(message)}$"):
        IdColumn.of(ids, "run 'run'", "doc id")


@pytest.mark.parametrize(
    ("ids", "message"),
    [
        ([""], "doc id '' is empty or holds white space"),
        (["d1", "", "d2"], "a doc id is empty"),
        (["d1", "a\x00b"], "a doc id holds a NUL character"),
        (["d1", "x" * (MAX_ID_CHARS + 1)], f"is {MAX_ID_CHARS + 1} characters long"),
        (["d1", "é" * (MAX_ID_CHARS + 1)], f"is {MAX_ID_CHARS + 1} characters long"),
    ],
)
def test_a_bad_id_is_refused_as_before(ids: list[str], message: str) -> None:
    with pytest.raises(InputError, match=message):
        IdColumn.of(ids, "run 'run'", "doc id")


def test_ids_of_the_widest_ascii_are_kept() -> None:
    _same_bytes(["a", "x" * MAX_ID_CHARS])


# Frames as a notebook holds them.

TREC = {"ap": "map", "ndcg@10": "ndcg_cut_10", "precision@10": "P_10", "mrr": "recip_rank"}


def _data(seed: int) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """Graded qrels and a run whose ids are of several widths, with distinct scores
    (trec_eval breaks ties by id; no tie is left to break)."""
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(40):
        qid = f"q{q * 37}"
        pool = [f"D{rng.randint(0, 10 ** rng.randint(1, 9))}-{i}" for i in range(60)]
        retrieved = rng.sample(pool, 45)
        run[qid] = {d: rng.random() * 100 for d in retrieved}
        qrels[qid] = {d: rng.choice((0, 0, 1, 2, 3)) for d in rng.sample(pool, 20)}
    return qrels, run


def _frame(table: dict[str, dict[str, Any]], value: str, ids: Any = None) -> Any:
    rows = [(q, d, v) for q, docs in table.items() for d, v in docs.items()]
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", value])
    return frame if ids is None else frame.astype({"query_id": ids, "doc_id": ids})


def _text_types() -> list[Any]:
    """Column types for ids: objects, categories, pandas' ``string`` in Python and, with
    pyarrow, in pyarrow (and pandas 3's ``str`` in both)."""
    kinds: list[Any] = [object, "category", "string[python]"]
    with contextlib.suppress(TypeError):  # pandas 3's str without pyarrow
        kinds.append(pd.StringDtype("python", na_value=np.nan))
    if ARROW:
        kinds.append("string[pyarrow]")
        with contextlib.suppress(TypeError):
            kinds.append(pd.StringDtype("pyarrow", na_value=np.nan))
    return kinds


@pytest.mark.parametrize("ids", _text_types(), ids=str)
def test_pandas_frames_equal_pytrec_eval_per_query(ids: Any) -> None:
    qrels, run = _data(3)
    labels, ranked = _frame(qrels, "relevance", ids), _frame(run, "score", ids)
    # Columns no peer names are left alone.
    labels["annotator"] = "a1"
    ranked["rank"] = np.arange(len(ranked))
    report = raglabel.evaluate(
        labels, ranked, metrics=",".join(TREC), na="zero", relevance_threshold=3
    )
    measures = {"map", "ndcg_cut.10", "P.10", "recip_rank"}
    expected = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=1).evaluate(run)
    ours = report.per_query["run"]
    assert set(ours) == set(expected)
    for query, values in expected.items():
        for mine, theirs in TREC.items():
            assert ours[query][mine] == pytest.approx(values[theirs], abs=1e-12), (query, mine)


def test_numbers_and_texts_mixed_as_ids_read_as_their_text() -> None:
    frame = pd.DataFrame(
        {"query_id": [7, "7", 10], "doc_id": [3, "12", 3], "score": [1.0, 2.0, 3.0]}
    )
    run = run_table(frame, "run")
    assert run.qids.tolist() == [b"7", b"7", b"10"]
    assert run.docids.tolist() == [b"3", b"12", b"3"]


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (1.5, r"run 'run': doc id 1\.5 is a float, not a text"),
        (True, r"run 'run': doc id True is a bool, not a text"),
        (b"d1", r"run 'run': doc id b'd1' is a bytes, not a text"),
    ],
)
def test_ids_that_are_no_text_nor_integer_are_refused(doc: object, message: str) -> None:
    frame = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d0", doc], "score": [1.0, 2.0]})
    with pytest.raises(ValueError, match=message):
        run_table(frame, "run")


def test_a_missing_score_or_label_is_counted_by_its_column() -> None:
    qrels, run = _data(5)
    ranked = _frame(run, "score")
    ranked.loc[[3, 8], "score"] = np.nan
    with pytest.raises(ValueError, match=r"^run 'run': column 'score' has 2 missing value\(s\)$"):
        raglabel.evaluate(qrels, ranked)
    labels = _frame(qrels, "relevance").astype({"relevance": float})
    labels.loc[4, "relevance"] = np.nan
    with pytest.raises(
        ValueError, match=r"^qrels pandas DataFrame: column 'relevance' has 1 missing value"
    ):
        raglabel.evaluate(labels, run)


@pytest.mark.parametrize("ids", _text_types(), ids=str)
def test_repeated_pairs_are_told_as_for_dicts(ids: Any) -> None:
    qrels, run = _data(9)
    ranked = _frame(run, "score", ids)
    query, doc = ranked.iloc[5]["query_id"], ranked.iloc[5]["doc_id"]
    twice = pd.concat([ranked, ranked.iloc[[5]].assign(score=-1.0)], ignore_index=True)
    with pytest.warns(raglabel.RaglabelWarning, match=f"1 repeated passage id.*{doc} in {query}"):
        report = raglabel.evaluate(qrels, twice, metrics="ap,ndcg@10")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert report.per_query == raglabel.evaluate(qrels, run, metrics="ap,ndcg@10").per_query
    labels = _frame(qrels, "relevance", ids)
    judged = pd.concat([labels, labels.iloc[[2]]], ignore_index=True)
    pair = f"passage {labels.iloc[2]['doc_id']!r} of query {labels.iloc[2]['query_id']!r}"
    with pytest.raises(ValueError, match=f"^qrels pandas DataFrame: {pair} is judged twice"):
        raglabel.evaluate(judged, run)
