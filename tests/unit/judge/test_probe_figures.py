"""The probe's figures (raglabel/analysis/probe.py): the counts, mean change and shares
against plain loops, and the 95% interval of the mean change (a percentile bootstrap
over queries) against scipy's bootstrap where pairs stand alone, against a plain loop
that redraws queries where they share them, and by simulation: how often it covers the
true mean change."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import bootstrap

from raglabel.analysis.probe import Answers, mean_change_interval, model_probe
from raglabel.formats.probe_report import ProbeFailure


def random_answers(rng: np.random.Generator, pairs: int, queries: int) -> Answers:
    qids = [f"q{rng.integers(queries)}" for _ in range(pairs)]
    human = [int(g) for g in rng.integers(1, 6, pairs)]
    control: list[int | None] = [int(g) for g in rng.integers(1, 6, pairs)]
    perturbed: list[int | None] = [
        min(5, c + int(rng.integers(-1, 3))) if c is not None else None for c in control
    ]
    for at in rng.choice(pairs, size=pairs // 6, replace=False):
        (control if at % 2 else perturbed)[at] = None  # an answer that failed
    return Answers(qids, [f"p{n}" for n in range(pairs)], human, control, perturbed)


def test_counts_means_and_shares_are_those_of_the_pairs_both_arms_graded() -> None:
    rng = np.random.default_rng(11)
    answers = random_answers(rng, 60, 9)
    failed = [ProbeFailure("control", "not JSON", 3, "I'd say 4")]
    found = model_probe("m", answers, failed, resamples=200, seed=1)
    kept = [
        (q, h, c, p)
        for q, h, c, p in zip(
            answers.queries, answers.human, answers.control, answers.perturbed, strict=True
        )
        if c is not None and p is not None
    ]
    assert found.asked == 60 and found.compared == len(kept) == 50
    assert found.queries == len({q for q, *_ in kept})
    assert found.rose == sum(p > c for _, _, c, p in kept)
    assert found.stayed == sum(p == c for _, _, c, p in kept)
    assert found.fell == sum(p < c for _, _, c, p in kept)
    assert found.rose + found.stayed + found.fell == found.compared
    assert found.control_at_top == sum(c == 5 for _, _, c, _ in kept)
    assert found.mean_change == pytest.approx(sum(p - c for _, _, c, p in kept) / len(kept))
    assert found.above_human_control == pytest.approx(sum(c > h for _, h, c, _ in kept) / 50)
    assert found.above_human_perturbed == pytest.approx(sum(p > h for _, h, _, p in kept) / 50)
    assert found.failures == failed
    rows = zip(
        answers.queries,
        answers.passages,
        answers.human,
        answers.control,
        answers.perturbed,
        strict=True,
    )
    assert [
        (a.query_id, a.passage_id, a.human, a.control, a.perturbed) for a in found.answers
    ] == list(rows)


def test_nothing_compared_gives_no_mean_no_share_and_no_interval() -> None:
    answers = Answers(["q1", "q2"], ["p1", "p2"], [3, 4], [None, 4], [5, None])
    found = model_probe("m", answers, [], resamples=100, seed=1)
    assert found.compared == 0 and found.rose == found.stayed == found.fell == 0
    assert found.mean_change is None and found.ci is None
    assert found.above_human_control is None and found.above_human_perturbed is None


def test_one_query_gives_no_interval() -> None:
    # Resampling one query only repeats it: no interval rather than a zero-width one.
    assert mean_change_interval(["q1"] * 5, np.ones(5), resamples=100, seed=1) is None
    answers = Answers(["q1", "q1"], ["p1", "p2"], [3, 3], [3, 4], [4, 4])
    found = model_probe("m", answers, [], resamples=100, seed=1)
    assert found.mean_change == 0.5 and found.ci is None


def test_with_one_pair_per_query_the_interval_is_scipy_s_percentile_bootstrap() -> None:
    rng = np.random.default_rng(5)
    change = rng.integers(-1, 3, size=40).astype(np.float64)
    queries = [f"q{n}" for n in range(40)]
    ours = mean_change_interval(queries, change, resamples=40_000, seed=3)
    theirs = bootstrap(
        (change,), np.mean, n_resamples=40_000, method="percentile", random_state=4
    ).confidence_interval
    assert ours is not None
    # Two independent Monte Carlo estimates of the same percentiles.
    assert ours == pytest.approx((theirs.low, theirs.high), abs=0.02)


def test_with_queries_sharing_pairs_the_interval_redraws_whole_queries() -> None:
    rng = np.random.default_rng(6)
    per_query = [rng.integers(-1, 3, size=int(rng.integers(1, 8))) for _ in range(15)]
    queries = [f"q{i}" for i, values in enumerate(per_query) for _ in values]
    change = np.concatenate(per_query).astype(np.float64)
    ours = mean_change_interval(queries, change, resamples=40_000, seed=8)
    # A plain loop: draw 15 queries with replacement, pool their pairs, take the mean.
    means = []
    draw = np.random.default_rng(9)
    for _ in range(40_000):
        picked = draw.integers(0, 15, size=15)
        means.append(float(np.concatenate([per_query[i] for i in picked]).mean()))
    assert ours == pytest.approx(tuple(np.percentile(means, [2.5, 97.5])), abs=0.02)


def test_the_interval_follows_its_seed() -> None:
    change = np.array([0, 1, 1, 2, 0, 1, -1, 1], dtype=np.float64)
    queries = ["a", "a", "b", "b", "c", "d", "d", "e"]
    first = mean_change_interval(queries, change, resamples=300, seed=1)
    assert mean_change_interval(queries, change, resamples=300, seed=1) == first
    assert mean_change_interval(queries, change, resamples=300, seed=2) != first


def test_the_interval_covers_the_true_mean_change_about_95_percent() -> None:
    """300 simulated probes of 30 queries with 1 to 6 pairs each; each query has its own
    lean (how far its passages' grades move), so its pairs hang together. A query's size
    does not depend on its lean, so the true mean change per pair is that of one pair,
    round(lean + noise), taken from two million draws."""
    rng = np.random.default_rng(2026)
    hits = 0
    runs = 300
    for s in range(runs):
        leans = rng.normal(0.4, 0.5, size=30)
        sizes = rng.integers(1, 7, size=30)
        # Whole-grade changes: a pair's lean plus noise, rounded.
        values = [
            np.round(lean + rng.normal(0, 0.8, size=n))
            for lean, n in zip(leans, sizes, strict=True)
        ]
        queries = [f"q{i}" for i, v in enumerate(values) for _ in v]
        change = np.concatenate(values)
        ci = mean_change_interval(queries, change, resamples=400, seed=s)
        assert ci is not None
        hits += ci[0] <= TRUE_ROUNDED_MEAN <= ci[1]
    assert 0.90 <= hits / runs <= 0.99, hits


def _true_rounded_mean() -> float:
    rng = np.random.default_rng(1)
    lean = rng.normal(0.4, 0.5, size=2_000_000)
    return float(np.round(lean + rng.normal(0, 0.8, size=lean.size)).mean())


TRUE_ROUNDED_MEAN = _true_rounded_mean()
