"""The judged ranking precision of an answer sample's chunks (``ctx_rank_prec``, 0-100).

The judge grades every retrieved chunk 1-5 for how much it helps produce the reference.
The score is the passage metric's formula on those grades: 100 x DCG of the evaluated
order / DCG of the ideal order (grades sorted descending), with the gain map's gains
(linear ``max(0, grade - 2)`` by default) and the shared log2 discount. Chunks that all
gain nothing leave the score undefined: NA with :data:`NO_USEFUL_CHUNK`, never 0.

Pure: plain values in, a plain record out, so storage, analysis and the app can all call
it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from raglabel.metrics.criteria import NO_USEFUL_CHUNK
from raglabel.metrics.discount import discount


class GradedChunk(Protocol):
    """A judge's grade of one chunk (``raglabel.judge.work.ChunkGrade`` fits)."""

    @property
    def position(self) -> int: ...  # 1-based, as the judge was shown the chunks

    @property
    def grade(self) -> int: ...

    @property
    def reason(self) -> str: ...


@dataclass(frozen=True)
class ChunkRanking:
    """The score of one sample and the detail behind it.

    ``actual_ranks[p]`` and ``ideal_ranks[p]`` are the 0-based ranks of the chunk at
    0-based position ``p`` (file order) in the evaluated and the ideal order: the two
    lists are parallel, so a chunk ranked worse than it deserves shows as
    ``actual_ranks[p] > ideal_ranks[p]``.
    """

    score: float | None  # None when no chunk gains anything: see ``na``
    na: str | None  # the NA reason, or None when there is a score
    actual_ranks: list[int]
    ideal_ranks: list[int]
    #: every chunk graded below 5: ``{"chunk_position": 1-based, "reason": str}``
    non_relevant_chunks_reasons: list[dict[str, int | str]]


def linear_gains() -> dict[int, float]:
    return {grade: float(max(0, grade - 2)) for grade in range(1, 6)}


def chunk_ranking(
    chunks: Sequence[GradedChunk],
    order: Sequence[int],
    gains: Mapping[int, float] | None = None,
) -> ChunkRanking:
    """Score the judge's chunk grades in the evaluated ``order`` (0-based positions, as
    ``AnswerItem.evaluated_order()`` gives them).

    ``chunks`` must hold exactly one grade per position 1..n, where n = len(order), and
    ``order`` must be a permutation of 0..n-1; anything else is a ``ValueError`` (the
    judge's reply was checked before it was stored, so this is a caller's mistake).
    """
    n = len(order)
    if sorted(order) != list(range(n)):
        raise ValueError(f"order {list(order)!r} is not a permutation of 0..{n - 1}")
    by_position = {c.position: c for c in chunks}
    if len(chunks) != n or sorted(by_position) != list(range(1, n + 1)):
        positions = sorted(c.position for c in chunks)
        raise ValueError(f"chunk positions {positions!r} are not exactly 1..{n}")
    table = dict(linear_gains() if gains is None else gains)
    grades = np.array([by_position[p + 1].grade for p in range(n)], dtype=np.int64)
    if any(int(g) not in table for g in grades):
        raise ValueError(f"a grade of {grades.tolist()!r} has no gain")
    gain = np.array([table[int(g)] for g in grades], dtype=np.float64)

    evaluated = np.asarray(order, dtype=np.int64)
    actual = np.empty(n, dtype=np.int64)
    actual[evaluated] = np.arange(n)
    # The ideal order: highest gain first, then highest grade; ties keep the evaluated
    # order, as the passage metric keeps run order (lexsort's last key is the primary).
    ideal_order = evaluated[np.lexsort((-grades[evaluated], -gain[evaluated]))]
    ideal = np.empty(n, dtype=np.int64)
    ideal[ideal_order] = np.arange(n)

    steps = discount(np.arange(n, dtype=np.int64))
    best = float((gain[ideal_order] * steps).sum())
    dcg = float((gain[evaluated] * steps).sum())
    score = 100.0 * dcg / best if best > 0 else None
    reasons: list[dict[str, int | str]] = [
        {"chunk_position": p + 1, "reason": by_position[p + 1].reason}
        for p in range(n)
        if grades[p] < 5
    ]
    return ChunkRanking(
        score,
        None if score is not None else NO_USEFUL_CHUNK,
        actual.tolist(),
        ideal.tolist(),
        reasons,
    )
