"""The figures of a probe (``raglabel agree --probe``): how one model's grade moved from
the control (a graded passage as it is) to the perturbed answer (the passage altered),
and how often each exceeded the person's grade.

The unit drawn by the interval is the query, as in ``agree``: pairs of one query share
its wording and often its passages' sources, so their changes hang together, and
drawing pairs one by one would make the interval too narrow. The mean change over a
resample of queries is the sum of the drawn queries' changes over their pair counts,
each a column mean of the same draw (:func:`raglabel.metrics.stats.bootstrap_means`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
from numpy.typing import NDArray

from raglabel.formats.probe_report import ModelProbe, ProbeAnswer, ProbeFailure
from raglabel.metrics.stats import bootstrap_means, percentile_interval

TOP_GRADE: Final = 5
#: Fewer queries than this give no interval: resampling one query only repeats it.
MIN_QUERIES: Final = 2
INTERVAL: Final = "percentile bootstrap over queries"


@dataclass(frozen=True)
class Answers:
    """One model's answers about the drawn pairs, in the draw's order: the pair's
    query and passage, the person's grade, and the grade of each arm (None where it
    failed or was never asked)."""

    queries: Sequence[str]
    passages: Sequence[str]
    human: Sequence[int]
    control: Sequence[int | None]
    perturbed: Sequence[int | None]


def model_probe(
    model: str,
    answers: Answers,
    failures: list[ProbeFailure],
    *,
    resamples: int,
    seed: int,
) -> ModelProbe:
    """The figures of one model over the pairs where both arms were graded."""
    both = [
        (q, h, c, p)
        for q, h, c, p in zip(
            answers.queries, answers.human, answers.control, answers.perturbed, strict=True
        )
        if c is not None and p is not None
    ]
    n = len(both)
    change = np.array([p - c for _, _, c, p in both], dtype=np.float64)
    human = np.array([h for _, h, _, _ in both], dtype=np.float64)
    control = np.array([c for _, _, c, _ in both], dtype=np.float64)
    perturbed = np.array([p for _, _, _, p in both], dtype=np.float64)
    queries = sorted({q for q, _, _, _ in both})
    return ModelProbe(
        model=model,
        asked=len(answers.queries),
        compared=n,
        queries=len(queries),
        rose=int((change > 0).sum()),
        stayed=int((change == 0).sum()),
        fell=int((change < 0).sum()),
        control_at_top=int((control == TOP_GRADE).sum()),
        mean_change=float(change.mean()) if n else None,
        ci=mean_change_interval([q for q, _, _, _ in both], change, resamples=resamples, seed=seed),
        above_human_control=float((control > human).mean()) if n else None,
        above_human_perturbed=float((perturbed > human).mean()) if n else None,
        failures=failures,
        # Each pair has two answers; an answer neither graded nor failed never came back.
        unanswered=sum(g is None for g in (*answers.control, *answers.perturbed))
        - sum(f.count for f in failures),
        answers=[
            ProbeAnswer(*row)
            for row in zip(
                answers.queries,
                answers.passages,
                answers.human,
                answers.control,
                answers.perturbed,
                strict=True,
            )
        ],
    )


def mean_change_interval(
    queries: Sequence[str],
    change: NDArray[np.float64],
    *,
    resamples: int,
    seed: int,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """The percentile bootstrap interval of the mean of ``change`` (one value per pair,
    ``queries`` naming each pair's query), resampling queries with replacement; None
    with fewer than ``MIN_QUERIES`` queries."""
    names = sorted(set(queries))
    if len(names) < MIN_QUERIES:
        return None
    row = {name: i for i, name in enumerate(names)}
    sums = np.zeros(len(names))
    counts = np.zeros(len(names))
    for name, value in zip(queries, change, strict=True):
        sums[row[name]] += value
        counts[row[name]] += 1
    means = bootstrap_means(np.column_stack([sums, counts]), resamples, seed)
    # Every query holds a pair, so every resample's count is positive.
    return percentile_interval(means[:, 0] / means[:, 1], level)
