"""Pair keys and what the numpy aligner does with them (issue 27 §1): keys whose low
bits tell apart ids that differ past the first four bytes of a word, so that the
labels' filter and the check for repeats by blocks do their work; and query blocks
found on ids read as integers against the same found on the ids themselves."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from examples import examples
from hypothesis import given
from hypothesis import strategies as st

from raglabel.formats.trec.arrays import ArrayAlignment, align_qrels, read_run_table
from raglabel.formats.trec.keys import (
    _as_integers,
    distinct_in_blocks,
    filtered_rows,
    id_blocks,
    key_filter,
    pair_keys,
)
from raglabel.formats.trec.rows import QrelsRows
from raglabel.formats.trec.table import RunTable, as_text

ROOT = Path(__file__).resolve().parents[2]


def _retrieved(queries: int, docs: int) -> tuple[np.ndarray, np.ndarray]:
    """Query indexes and passage ids shaped as ``benchmarks/api.py`` makes them:
    ``doc<q>_<i>``, ids that share their first bytes and differ in a word's last."""
    qidx = np.repeat(np.arange(queries, dtype=np.int64), docs)
    docids = as_text([f"doc{q}_{i}" for q in range(queries) for i in range(docs)])
    return qidx, docids


def test_ids_sharing_their_first_bytes_get_keys_distinct_in_their_low_half() -> None:
    qidx, docids = _retrieved(200, 100)
    keys = pair_keys(qidx, docids)
    assert np.unique(keys).size == keys.size
    # The block check compares low halves; with FNV's low half alone, ``doc7_1`` to
    # ``doc7_9`` met there and the check gave up (every run was sorted again).
    assert np.unique(keys.astype(np.uint32)).size > keys.size * 0.999
    starts = np.arange(0, qidx.size, 100, dtype=np.int64)
    assert distinct_in_blocks(keys, starts, qidx)


def test_the_labels_filter_passes_few_rows_without_a_label() -> None:
    qidx, docids = _retrieved(300, 100)
    judged = np.arange(qidx.size) % 4 == 0
    marks = key_filter(np.sort(pair_keys(qidx[judged], docids[judged])))
    keys = pair_keys(qidx, docids)
    passed = np.zeros(qidx.size, dtype=np.bool_)
    passed[filtered_rows(marks, keys)] = True
    assert passed[judged].all()  # the filter only rules rows out
    # Sixteen bits a label: about one row in sixteen without one passes (it was 80%).
    assert passed[~judged].mean() < 1 / 8


def test_a_run_of_such_ids_is_not_sorted_again_to_look_for_repeats(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    qids = [f"q{q}" for q in range(300) for _ in range(100)]
    docids = [f"doc{q}_{i}" for q in range(300) for i in range(100)]
    judged = slice(0, None, 4)
    alignment = ArrayAlignment.from_rows(
        QrelsRows(qids[judged], docids[judged], [3] * len(qids[judged]))
    )

    def sorted_again(*_: object) -> None:
        raise AssertionError("the run's keys were sorted to look for repeats")

    monkeypatch.setattr(ArrayAlignment, "_first_occurrences", sorted_again)
    table = RunTable(as_text(qids), as_text(docids), -np.arange(len(qids), dtype=np.float64))
    ranked = alignment.run("r", table)
    assert ranked.grades.tolist() == [3 if i % 4 == 0 else 0 for i in range(len(qids))]


@pytest.mark.parametrize(
    ("qrels", "runs"),
    [
        ("tests/data/trec_eval/qrels.test", ["tests/data/trec_eval/results.test"]),
        (
            "fixtures/demo/qrels.txt",
            ["fixtures/demo/runs/bm25.run", "fixtures/demo/runs/hybrid.run"],
        ),
    ],
)
def test_runs_of_real_files_are_known_free_of_repeats_by_blocks(
    qrels: str, runs: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # These files' passage ids share their first four bytes too ("FR940202-2-00150"):
    # every run was sorted again before the keys' low bits were spread.
    alignment = align_qrels(ROOT / qrels, None)

    def sorted_again(*_: object) -> None:
        raise AssertionError("the run's keys were sorted to look for repeats")

    monkeypatch.setattr(ArrayAlignment, "_first_occurrences", sorted_again)
    for run in runs:
        alignment.run(run, read_run_table(ROOT / run))


@examples(200)
@given(st.lists(st.binary(min_size=1, max_size=12).filter(lambda b: b"\x00" not in b), max_size=30))
def test_id_blocks_split_where_the_ids_change(ids: list[bytes]) -> None:
    # Runs of equal ids, as files list a query's rows together.
    column = np.array([i for i in ids for _ in range(2)], dtype=np.bytes_)
    if not ids:
        column = np.zeros(0, "S1")
    starts, lengths = id_blocks(column)
    expected = [i for i in range(column.size) if i == 0 or column[i] != column[i - 1]]
    assert starts.tolist() == expected
    assert lengths.tolist() == np.diff([*expected, column.size]).tolist()
    assert starts.dtype == lengths.dtype == np.int64


@pytest.mark.parametrize("width", [1, 2, 3, 4, 5, 7, 8, 9])
def test_id_blocks_tell_a_prefix_from_the_id(width: int) -> None:
    # An id and the same id one byte longer (one byte wide: two ids): the padding tells
    # them apart.
    short = b"q" * max(width - 1, 1)
    longer = (short + b"\x01")[:width] if width > 1 else b"\x01"
    column = np.array([short, short, longer, longer, short], dtype=f"S{width}")
    assert id_blocks(column)[0].tolist() == [0, 2, 4]


def test_a_strided_id_column_is_read_right() -> None:
    # A column cut from a wider array is not contiguous: read as integers all the same.
    both = np.array([(b"q1", b"x"), (b"q1", b"y"), (b"q2", b"z")], dtype="S2,S1")
    assert id_blocks(both["f0"])[0].tolist() == [0, 2]


@pytest.mark.parametrize(
    ("width", "kind"), [(1, "u"), (2, "u"), (4, "u"), (8, "u"), (5, "S"), (9, "S")]
)
def test_ids_of_integer_widths_are_compared_as_integers(width: int, kind: str) -> None:
    # Widths of an integer are read as one with no copy; others are left as bytes (a
    # widening copy cost more than the faster comparison saved).
    ids = np.array([b"a" * width, b"b"], dtype=f"S{width}")
    values = _as_integers(ids)
    assert values.dtype.kind == kind
    assert values.size == ids.size
