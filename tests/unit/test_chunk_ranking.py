"""The judged ranking precision of answer chunks (raglabel.metrics.chunk_ranking)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
from examples import examples
from hypothesis import given
from hypothesis import strategies as st

from raglabel.metrics import LabelSet, MetricConfig, RankedRun, evaluate_runs, parse_metric_list
from raglabel.metrics.chunk_ranking import chunk_ranking
from raglabel.metrics.criteria import NO_USEFUL_CHUNK


@dataclass(frozen=True)
class Graded:
    position: int
    grade: int
    reason: str


def graded(*grades: int) -> list[Graded]:
    return [Graded(i + 1, g, f"why {i + 1}") for i, g in enumerate(grades)]


def test_hand_computed_score_and_ranks() -> None:
    # Gains max(0, g - 2): 3 -> 1, 5 -> 3, 1 -> 0.
    result = chunk_ranking(graded(3, 5, 1), [0, 1, 2])
    dcg = 1.0 + 3.0 / math.log2(3)
    best = 3.0 + 1.0 / math.log2(3)
    assert result.score == pytest.approx(100 * dcg / best)
    assert result.na is None
    assert result.actual_ranks == [0, 1, 2]
    assert result.ideal_ranks == [1, 0, 2]
    assert result.non_relevant_chunks_reasons == [
        {"chunk_position": 1, "reason": "why 1"},
        {"chunk_position": 3, "reason": "why 3"},
    ]


def test_ranks_reorder_the_chunks_before_scoring() -> None:
    # The file listed the best chunk second but ranked it first: a perfect order.
    result = chunk_ranking(graded(3, 5, 1), [1, 0, 2])
    assert result.score == pytest.approx(100.0)
    assert result.actual_ranks == [1, 0, 2]
    assert result.ideal_ranks == result.actual_ranks


def test_ties_keep_the_evaluated_order() -> None:
    result = chunk_ranking(graded(4, 4, 5), [2, 1, 0])
    assert result.score == pytest.approx(100.0)
    assert result.ideal_ranks == [2, 1, 0]


def test_no_useful_chunk_is_na_not_zero() -> None:
    result = chunk_ranking(graded(2, 1, 2), [0, 1, 2])
    assert result.score is None
    assert result.na == NO_USEFUL_CHUNK
    assert len(result.non_relevant_chunks_reasons) == 3


def test_a_gain_map_replaces_the_linear_gains() -> None:
    gains = {1: 0.0, 2: 0.0, 3: 0.0, 4: 1.0, 5: 1.0}
    result = chunk_ranking(graded(3, 4), [0, 1], gains)
    assert result.score == pytest.approx(100 * (1 / math.log2(3)))


@pytest.mark.parametrize(
    ("chunks", "order"),
    [
        (graded(3, 4), [0]),  # more grades than chunks
        (graded(3), [0, 1]),  # fewer
        ([Graded(1, 3, ""), Graded(1, 4, "")], [0, 1]),  # a repeated position
        ([Graded(1, 3, ""), Graded(3, 4, "")], [0, 1]),  # a position that does not exist
        (graded(3, 4), [0, 0]),  # not a permutation
    ],
)
def test_mismatched_input_is_refused(chunks: list[Graded], order: list[int]) -> None:
    with pytest.raises(ValueError, match="not"):
        chunk_ranking(chunks, order)


@examples(150)
@given(
    grades=st.lists(st.integers(2, 5), min_size=1, max_size=8),
    data=st.data(),
)
def test_agrees_with_the_passage_metric(grades: list[int], data: st.DataObject) -> None:
    """The same grades in the same order give the engine's ctx_rank_prec@n."""
    n = len(grades)
    order = data.draw(st.permutations(range(n)))
    result = chunk_ranking(graded(*grades), order)
    counts = np.zeros((1, 6), dtype=np.int64)
    for grade in grades:
        counts[0, grade] += 1
    labels = LabelSet(("q",), counts)
    run = RankedRun.from_lists("sys", [[grades[p] for p in order]])
    keys = parse_metric_list(f"ctx_rank_prec@{n}", ks=[n])
    values = evaluate_runs(labels, [run], keys, config=MetricConfig())["sys"]
    (engine,) = (float(v[0]) for v in values.values())
    if result.score is None:
        assert math.isnan(engine)
    else:
        assert result.score == pytest.approx(engine, rel=1e-9)
    assert sorted(result.ideal_ranks) == list(range(n))
