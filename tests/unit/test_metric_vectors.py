"""Hand-computed metric vectors.

Every expected value below is derived by hand from the spec (``/work/shared/spec/metrics.md``
and the seed documents), written as an exact ``Fraction`` where the metric is rational, with
the derivation in a comment. Only the log2 discounts of nDCG and ctx_rank_prec are floats.
No expected value is computed by raglabel code.

Notation in comments: N = graded passages of the query, p_g = n_g / N, r_g = b_g / p_g^alpha,
w_4 = min(r_4 / r_5, cap4), w_3 = min(r_3 / r_5, cap3); defaults b = (1, .5, .1, 0, 0),
alpha = 1, cap4 = 1, cap3 = 1/4; fallback (n_5 = 0) w = (5:1, 4:1, 3:1/5, 2:0, 1:0).
nDCG gain = max(0, grade - 2); unjudged entries (grade 0) weigh and gain 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pytest

from raglabel.analysis.evaluation import Options, evaluate
from raglabel.formats.report import LabelsInfo
from raglabel.metrics import (
    LabelSet,
    MetricConfig,
    QueryStats,
    RankedRun,
    evaluate_runs,
    parse_metric_list,
)
from raglabel.metrics.stats import nan_mean, ratio_of_means

NA = None
Expected = Fraction | float | None

# Every metric that takes a cutoff, plus the uncut MRR; containment is tested on its own.
ALL_BASES = (
    "ra_nwg",
    "proc",
    "pct_proc",
    "n_recall_4plus",
    "n_recall_5",
    "precision_4plus",
    "harm",
    "judged",
    "hit",
    "recall",
    "recall_all",
    "precision",
    "mrr",
    "mrr@k",
    "ndcg",
    "ctx_rank_prec",
    "ctx_rank_pass",
)


def dcg(gains: list[float]) -> float:
    """sum gain_i / log2(i + 1) over 1-based ranks i."""
    return sum(g / math.log2(rank + 1) for rank, g in enumerate(gains, start=1))


def label_set(*queries: dict[int, int]) -> LabelSet:
    counts = np.zeros((len(queries), 6), dtype=np.int64)
    for q, per_grade in enumerate(queries):
        for grade, n in per_grade.items():
            counts[q, grade] = n
    return LabelSet(tuple(f"q{q}" for q in range(len(queries))), counts)


def metric_name(base: str, k: int) -> str:
    if base == "mrr":
        return "mrr"
    if base == "mrr@k":
        return f"mrr@{k}"
    return f"{base}@{k}"


def run_metrics(
    labels: LabelSet,
    ranked: list[list[int]],
    names: list[str],
    k: int,
    *,
    config: MetricConfig | None = None,
    pool: list[list[int]] | None = None,
    contains: list[list[bool]] | None = None,
    answers: list[bool] | None = None,
    k_override: list[int] | None = None,
) -> dict[str, np.ndarray]:
    """Per-query values of ``names`` (base names as in ALL_BASES) keyed by base name."""
    run = RankedRun.from_lists("sys", ranked, contains=contains, k_override=k_override)
    pools = None if pool is None else {"sys": RankedRun.from_lists("pool", pool)}
    keys = parse_metric_list(",".join(metric_name(n, k) for n in names), ks=[k])
    result = evaluate_runs(
        labels,
        [run],
        keys,
        config=config or MetricConfig(),
        pools=pools,
        answers=None if answers is None else np.array(answers, dtype=np.bool_),
    )["sys"]
    by_name = {key.name: values for key, values in result.items()}
    return {n: by_name[metric_name(n, k)] for n in names}


def assert_values(got: np.ndarray, expected: list[Expected], what: str) -> None:
    assert got.shape == (len(expected),), what
    for q, (value, want) in enumerate(zip(got.tolist(), expected, strict=True)):
        if want is None:
            assert math.isnan(value), f"{what} q{q}: expected NA, got {value}"
        else:
            assert not math.isnan(value), f"{what} q{q}: expected {float(want)}, got NA"
            assert value == pytest.approx(float(want), abs=1e-12), f"{what} q{q}"


@dataclass(frozen=True)
class Case:
    """One query: its label counts, its run (grades in rank order), K and every value."""

    id: str
    labels: dict[int, int]
    run: list[int]
    k: int
    expected: dict[str, Expected]
    pool: list[int] | None = None


def _ndcg(run: list[int], labels: list[int], k: int) -> float:
    """Linear gains max(0, g - 2); IDCG from all labeled grades, both cut at k."""
    gain = [max(0, g - 2) for g in run[:k]]
    ideal = sorted((max(0, g - 2) for g in labels), reverse=True)[:k]
    return dcg(gain) / dcg(ideal)


CASES = [
    # The seed document's worked example: labels [5,4,4,3,3,3,2,1], top-K [4,3,3,3], K=4.
    # N=8: r5 = 1/(1/8) = 8, r4 = (1/2)/(2/8) = 2, r3 = (1/10)/(3/8) = 4/15
    # w4 = min(2/8, 1) = 1/4, w3 = min((4/15)/8, 1/4) = 1/30.
    Case(
        "seed_example",
        {5: 1, 4: 2, 3: 3, 2: 1, 1: 1},
        [4, 3, 3, 3],
        4,
        {
            # G_obs = 1/4 + 3/30 = 7/20; G_oracle = 1 + 1/4 + 1/4 + 1/30 = 23/15
            # 7/20 / (23/15) = 105/460 = 21/92
            "ra_nwg": Fraction(21, 92),
            "proc": Fraction(21, 92),  # pool = the run itself: G_pool = G_obs
            "pct_proc": Fraction(1),
            "n_recall_4plus": Fraction(1, 3),  # one 4 / min(4, R4+ = 3)
            "n_recall_5": Fraction(0),  # no 5 / min(4, 1)
            "precision_4plus": Fraction(1, 4),
            "harm": Fraction(0),
            "judged": Fraction(1),
            "hit": Fraction(1),
            "recall": Fraction(1, 3),  # one of the 3 passages with grade >= 4
            "recall_all": Fraction(0),
            "precision": Fraction(1, 4),
            "mrr": Fraction(1),
            "mrr@k": Fraction(1),
            # DCG gains [2,1,1,1]; ideal over all labels: [3,2,2,1]
            "ndcg": dcg([2, 1, 1, 1]) / dcg([3, 2, 2, 1]),
            "ctx_rank_prec": 100.0,  # already sorted by grade
            "ctx_rank_pass": 1.0,
        },
    ),
    # N=10: r5 = 1/(2/10) = 5, r4 = (1/2)/(4/10) = 5/4, r3 = (1/10)/(2/10) = 1/2
    # w4 = (5/4)/5 = 1/4, w3 = (1/2)/5 = 1/10. Top-5 = [0,3,5,1,4] (0 = unjudged).
    Case(
        "unjudged_mixed",
        {5: 2, 4: 4, 3: 2, 2: 1, 1: 1},
        [0, 3, 5, 1, 4, 5, 4],
        5,
        {
            # G_obs = 0 + 1/10 + 1 + 0 + 1/4 = 27/20; G_oracle = 1+1+1/4+1/4+1/4 = 11/4
            "ra_nwg": Fraction(27, 20) / Fraction(11, 4),  # = 27/55
            # pool = the whole run {5,5,4,4,3,1,0}: best 5 = 1+1+1/4+1/4+1/10 = 13/5
            "proc": Fraction(13, 5) / Fraction(11, 4),  # = 52/55
            "pct_proc": Fraction(27, 52),
            "n_recall_4plus": Fraction(2, 5),  # {5,4} / min(5, 6)
            "n_recall_5": Fraction(1, 2),  # one 5 / min(5, 2)
            "precision_4plus": Fraction(2, 5),
            "harm": Fraction(1, 5),  # the grade 1; the unjudged entry is not harm
            "judged": Fraction(4, 5),  # unjudged counts in the denominator
            "hit": Fraction(1),
            "recall": Fraction(2, 6),
            "recall_all": Fraction(0),
            "precision": Fraction(2, 5),
            "mrr": Fraction(1, 3),  # first grade >= 4 at rank 3
            "mrr@k": Fraction(1, 3),
            # gains [0,1,3,0,2]; ideal from all labels [3,3,2,2,2]
            "ndcg": dcg([0, 1, 3, 0, 2]) / dcg([3, 3, 2, 2, 2]),
            # same passages sorted: [3,2,1,0,0]; ratio ~ 61.0 < 80
            "ctx_rank_prec": 100 * dcg([0, 1, 3, 0, 2]) / dcg([3, 2, 1, 0, 0]),
            "ctx_rank_pass": 0.0,
        },
    ),
    # N=5: r5 = 5, r4 = (1/2)/(1/5) = 5/2 -> w4 = 1/2. Relevant entries only after K=3.
    Case(
        "first_relevant_beyond_k",
        {5: 1, 4: 1, 2: 3},
        [2, 2, 0, 5, 4],
        3,
        {
            "ra_nwg": Fraction(0),  # G_obs = 0; G_oracle = 1 + 1/2 + 0
            "proc": Fraction(1),  # pool holds the 5 and the 4: 3/2 / 3/2
            "pct_proc": Fraction(0),
            "n_recall_4plus": Fraction(0),
            "n_recall_5": Fraction(0),
            "precision_4plus": Fraction(0),
            "harm": Fraction(2, 3),  # two grade-2 entries, divided by K
            "judged": Fraction(2, 3),
            "hit": Fraction(0),
            "recall": Fraction(0),
            "recall_all": Fraction(0),
            "precision": Fraction(0),
            "mrr": Fraction(1, 4),  # uncut: the 5 at rank 4
            "mrr@k": Fraction(0),  # nothing relevant in the top 3
            "ndcg": 0.0,
            "ctx_rank_prec": NA,  # top-3 gains all 0: ideal DCG 0
            "ctx_rank_pass": NA,
        },
    ),
    # No grade 5: fallback w4 = 1, w3 = 1/5, w2 = 0.
    Case(
        "no_grade5_fallback",
        {4: 2, 3: 3, 2: 5},
        [3, 3, 4, 2],
        3,
        {
            # G_obs = 1/5 + 1/5 + 1 = 7/5; G_oracle = 1 + 1 + 1/5 = 11/5
            "ra_nwg": Fraction(7, 11),
            "proc": Fraction(7, 11),  # pool {4,3,3,2}: best 3 = 7/5
            "pct_proc": Fraction(1),
            "n_recall_4plus": Fraction(1, 2),  # one 4 / min(3, 2)
            "n_recall_5": NA,  # R5 = 0
            "precision_4plus": Fraction(1, 3),
            "harm": Fraction(0),  # the grade 2 is at rank 4
            "judged": Fraction(1),
            "hit": Fraction(1),
            "recall": Fraction(1, 2),
            "recall_all": Fraction(0),
            "precision": Fraction(1, 3),
            "mrr": Fraction(1, 3),
            "mrr@k": Fraction(1, 3),
            "ndcg": dcg([1, 1, 2]) / dcg([2, 2, 1]),
            # ~84.0 >= 80
            "ctx_rank_prec": 100 * dcg([1, 1, 2]) / dcg([2, 1, 1]),
            "ctx_rank_pass": 1.0,
        },
    ),
    # Only grades 1 and 2: fallback w2 = w1 = 0, so G_oracle = 0.
    Case(
        "oracle_gain_zero",
        {2: 2, 1: 3},
        [1, 2, 0],
        3,
        {
            "ra_nwg": NA,
            "proc": NA,
            "pct_proc": NA,
            "n_recall_4plus": NA,  # R4+ = 0
            "n_recall_5": NA,
            "precision_4plus": Fraction(0),
            "harm": Fraction(2, 3),
            "judged": Fraction(2, 3),
            "hit": NA,  # no relevant passage: classic binary metrics undefined
            "recall": NA,
            "recall_all": NA,
            "precision": Fraction(0),
            "mrr": NA,
            "mrr@k": NA,
            "ndcg": 0.0,  # IDCG = 0 -> 0.0
            "ctx_rank_prec": NA,
            "ctx_rank_pass": NA,
        },
    ),
    # K = 10 larger than the labeled slice (N = 2). r5 = 2, r3 = (1/10)/(1/2) = 1/5
    # -> w3 = min(1/10, 1/4) = 1/10.
    Case(
        "k_larger_than_slice",
        {5: 1, 3: 1},
        [3, 0, 0],
        10,
        {
            # G_obs = 1/10; G_oracle = 1 + 1/10 (only 2 passages exist)
            "ra_nwg": Fraction(1, 11),
            "proc": Fraction(1, 11),
            "pct_proc": Fraction(1),
            "n_recall_4plus": Fraction(0),  # 0 / min(10, 1)
            "n_recall_5": Fraction(0),
            "precision_4plus": Fraction(0),
            "harm": Fraction(0),
            "judged": Fraction(1, 3),  # |S_K| = 3 entries
            "hit": Fraction(0),
            "recall": Fraction(0),
            "recall_all": Fraction(0),
            "precision": Fraction(0),
            "mrr": Fraction(0),
            "mrr@k": Fraction(0),
            "ndcg": dcg([1]) / dcg([3, 1]),
            "ctx_rank_prec": 100.0,
            "ctx_rank_pass": 1.0,
        },
    ),
    # Run shorter than K: Precision4+, Harm and precision divide by K = 5, Judged by |S_K| = 2.
    # Fallback weights (no 5): w4 = 1, w2 = w1 = 0.
    Case(
        "run_shorter_than_k",
        {4: 1, 2: 3, 1: 1},
        [4, 1],
        5,
        {
            "ra_nwg": Fraction(1),  # G_obs = 1; G_oracle = 1 (+ zeros)
            "proc": Fraction(1),
            "pct_proc": Fraction(1),
            "n_recall_4plus": Fraction(1),  # 1 / min(5, 1)
            "n_recall_5": NA,
            "precision_4plus": Fraction(1, 5),
            "harm": Fraction(1, 5),
            "judged": Fraction(1),
            "hit": Fraction(1),
            "recall": Fraction(1),
            "recall_all": Fraction(1),
            "precision": Fraction(1, 5),
            "mrr": Fraction(1),
            "mrr@k": Fraction(1),
            "ndcg": Fraction(1),  # [2,0] against ideal [2]
            "ctx_rank_prec": 100.0,
            "ctx_rank_pass": 1.0,
        },
    ),
    # A query the run returned nothing for: 0 wherever the labels define the metric.
    # N=4: w4 = ((1/2)/(1/4)) / 4 = 1/2, w3 = ((1/10)/(1/2)) / 4 = 1/20; G_oracle = 8/5 > 0.
    Case(
        "empty_run",
        {5: 1, 4: 1, 3: 2},
        [],
        5,
        {
            "ra_nwg": Fraction(0),
            "proc": Fraction(0),  # the pool (the run) is empty
            "pct_proc": NA,  # PROC = 0
            "n_recall_4plus": Fraction(0),
            "n_recall_5": Fraction(0),
            "precision_4plus": Fraction(0),
            "harm": Fraction(0),
            "judged": NA,  # S_K empty
            "hit": Fraction(0),
            "recall": Fraction(0),
            "recall_all": Fraction(0),
            "precision": Fraction(0),
            "mrr": Fraction(0),
            "mrr@k": Fraction(0),
            "ndcg": 0.0,
            "ctx_rank_prec": NA,
            "ctx_rank_pass": NA,
        },
    ),
    # Empty run on a query whose labels leave most metrics undefined.
    Case(
        "empty_run_undefined",
        {2: 1, 1: 1},
        [],
        5,
        {
            "ra_nwg": NA,
            "proc": NA,
            "pct_proc": NA,
            "n_recall_4plus": NA,
            "n_recall_5": NA,
            "precision_4plus": Fraction(0),
            "harm": Fraction(0),
            "judged": NA,
            "hit": NA,
            "recall": NA,
            "recall_all": NA,
            "precision": Fraction(0),
            "mrr": NA,
            "mrr@k": NA,
            "ndcg": 0.0,
            "ctx_rank_prec": NA,
            "ctx_rank_pass": NA,
        },
    ),
    # Grade inversion: one 5, ten 4s, one 3. N=12: r5 = 12, r4 = (1/2)/(10/12) = 3/5,
    # r3 = (1/10)/(1/12) = 6/5 -> w4 = 1/20, w3 = 1/10 > w4. The oracle takes the 3 second.
    Case(
        "grade_inversion",
        {5: 1, 4: 10, 3: 1},
        [4, 4],
        2,
        {
            # G_obs = 2/20; G_oracle@2 = 1 + 1/10 (5 then the 3, not a 4)
            "ra_nwg": Fraction(1, 11),
            "proc": Fraction(1, 11),
            "pct_proc": Fraction(1),
            "n_recall_4plus": Fraction(1),  # 2 / min(2, 11)
            "n_recall_5": Fraction(0),
            "precision_4plus": Fraction(1),
            "harm": Fraction(0),
            "judged": Fraction(1),
            "hit": Fraction(1),
            "recall": Fraction(2, 11),
            "recall_all": Fraction(0),
            "precision": Fraction(1),
            "mrr": Fraction(1),
            "mrr@k": Fraction(1),
            "ndcg": dcg([2, 2]) / dcg([3, 2]),
            "ctx_rank_prec": 100.0,
            "ctx_rank_pass": 1.0,
        },
    ),
    # A reranker whose pool misses the only 5. N=10: r5 = 10, r4 = (1/2)/(3/10) = 5/3,
    # r3 = (1/10)/(4/10) = 1/4 -> w4 = 1/6, w3 = 1/40.
    Case(
        "pool_misses_the_5",
        {5: 1, 4: 3, 3: 4, 2: 2},
        [4, 3, 3],
        3,
        {
            # G_obs = 1/6 + 2/40 = 13/60; G_oracle@3 = 1 + 1/6 + 1/6 = 4/3
            "ra_nwg": Fraction(13, 60) / Fraction(4, 3),  # = 13/80
            # pool {4,4,3,3,3,2}: best 3 = 1/6 + 1/6 + 1/40 = 43/120
            "proc": Fraction(43, 120) / Fraction(4, 3),  # = 43/160
            "pct_proc": Fraction(13, 80) / Fraction(43, 160),  # = 26/43
            "n_recall_4plus": Fraction(1, 3),  # 1 / min(3, 4)
            "n_recall_5": Fraction(0),
            "precision_4plus": Fraction(1, 3),
            "harm": Fraction(0),
            "judged": Fraction(1),
            "hit": Fraction(1),
            "recall": Fraction(1, 4),
            "recall_all": Fraction(0),
            "precision": Fraction(1, 3),
            "mrr": Fraction(1),
            "mrr@k": Fraction(1),
            "ndcg": dcg([2, 1, 1]) / dcg([3, 2, 2]),
            "ctx_rank_prec": 100.0,
            "ctx_rank_pass": 1.0,
        },
        pool=[3, 4, 4, 3, 2, 3],
    ),
    # A pool with nothing of value: PROC = 0, so %PROC is NA while RA-nWG is 0.
    Case(
        "useless_pool",
        {5: 1, 1: 1},
        [1],
        1,
        {
            "ra_nwg": Fraction(0),
            "proc": Fraction(0),
            "pct_proc": NA,
            "n_recall_4plus": Fraction(0),  # 0 / min(1, 1)
            "n_recall_5": Fraction(0),
            "precision_4plus": Fraction(0),
            "harm": Fraction(1),
            "judged": Fraction(1),
            "hit": Fraction(0),
            "recall": Fraction(0),
            "recall_all": Fraction(0),
            "precision": Fraction(0),
            "mrr": Fraction(0),
            "mrr@k": Fraction(0),
            "ndcg": 0.0,
            "ctx_rank_prec": NA,  # grade 1 gains 0
            "ctx_rank_pass": NA,
        },
        pool=[1, 0],
    ),
    # Every relevant passage retrieved, the first at rank 2. w4 = 1/2 (as above, N=5).
    Case(
        "recall_all_complete",
        {5: 1, 4: 1, 2: 3},
        [2, 5, 4],
        3,
        {
            "ra_nwg": Fraction(1),  # 1 + 1/2 over the same
            "proc": Fraction(1),
            "pct_proc": Fraction(1),
            "n_recall_4plus": Fraction(1),  # 2 / min(3, 2)
            "n_recall_5": Fraction(1),
            "precision_4plus": Fraction(2, 3),
            "harm": Fraction(1, 3),
            "judged": Fraction(1),
            "hit": Fraction(1),
            "recall": Fraction(1),
            "recall_all": Fraction(1),
            "precision": Fraction(2, 3),
            "mrr": Fraction(1, 2),
            "mrr@k": Fraction(1, 2),
            "ndcg": dcg([0, 3, 2]) / dcg([3, 2, 0]),
            "ctx_rank_prec": 100 * dcg([0, 3, 2]) / dcg([3, 2, 0]),  # ~67.9
            "ctx_rank_pass": 0.0,
        },
    ),
]


def test_cases_are_complete() -> None:
    for case in CASES:
        assert set(case.expected) == set(ALL_BASES), case.id


def test_ndcg_helper_matches_hand_values() -> None:
    # Sanity of the test's own helper against the seed document's example:
    # hits at ranks 2 and 4 over ideal ranks 1 and 2, binary gains -> ~0.65.
    assert dcg([0, 1, 0, 1]) / dcg([1, 1]) == pytest.approx(0.6509209298, abs=1e-9)
    assert _ndcg([4, 3, 3, 3], [5, 4, 4, 3, 3, 3, 2, 1], 4) == pytest.approx(
        dcg([2, 1, 1, 1]) / dcg([3, 2, 2, 1])
    )


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case_alone(case: Case) -> None:
    labels = label_set(case.labels)
    pool = None if case.pool is None else [case.pool]
    got = run_metrics(labels, [case.run], list(ALL_BASES), case.k, pool=pool)
    for name, want in case.expected.items():
        assert_values(got[name], [want], f"{case.id}: {name}")


def test_all_cases_in_one_batch() -> None:
    """The same cases as queries of one label set and one run, each pinned to its own K."""
    labels = label_set(*(c.labels for c in CASES))
    ranked = [c.run for c in CASES]
    pool = [c.pool if c.pool is not None else c.run for c in CASES]
    got = run_metrics(
        labels,
        ranked,
        list(ALL_BASES),
        # The caller's k is overridden per query; mrr@k's key name uses the caller's k.
        7,
        pool=pool,
        k_override=[c.k for c in CASES],
    )
    for name in ALL_BASES:
        assert_values(got[name], [c.expected[name] for c in CASES], f"batch: {name}")


def test_seed_example_weights_and_score() -> None:
    labels = label_set({5: 1, 4: 2, 3: 3, 2: 1, 1: 1})
    stats = QueryStats.build(labels, MetricConfig())
    # w = (unjudged 0, w1 0, w2 0, w3 1/30, w4 1/4, w5 1)
    assert_values(
        stats.weights[0], [0, 0, 0, Fraction(1, 30), Fraction(1, 4), Fraction(1)], "weights"
    )
    assert not stats.inverted[0]
    got = run_metrics(labels, [[4, 3, 3, 3]], ["ra_nwg"], 4)
    # 0.35 / 1.5333... = 21/92
    assert_values(got["ra_nwg"], [Fraction(21, 92)], "RA-nWG@4")
    assert float(Fraction(21, 92)) == pytest.approx(0.35 / (1 + 0.5 + 1 / 30), abs=1e-12)


def test_fallback_weights_when_no_grade5() -> None:
    stats = QueryStats.build(label_set({4: 2, 3: 3, 2: 5}), MetricConfig())
    assert_values(
        stats.weights[0], [0, 0, 0, Fraction(1, 5), Fraction(1), Fraction(1)], "fallback weights"
    )


def test_grade_inversion_is_flagged() -> None:
    labels = label_set({5: 1, 4: 10, 3: 1}, {5: 1, 4: 2, 3: 3, 2: 1, 1: 1})
    stats = QueryStats.build(labels, MetricConfig())
    # q0: w3 = 1/10 > w4 = 1/20; q1 (the seed example): w3 = 1/30 < w4 = 1/4
    assert_values(
        stats.weights[0],
        [0, 0, 0, Fraction(1, 10), Fraction(1, 20), Fraction(1)],
        "inverted weights",
    )
    assert stats.inverted.tolist() == [True, False]
    # The oracle honours the inverted order: [5, 3] is the best 2-set.
    got = run_metrics(labels, [[5, 3], [5, 4]], ["ra_nwg"], 2)
    # q0: (1 + 1/10) / (1 + 1/10); q1: (1 + 1/4) / (1 + 1/4)
    assert_values(got["ra_nwg"], [Fraction(1), Fraction(1)], "oracle set")


def test_grade4_outweighing_grade5_is_flagged() -> None:
    # Labels 5x4, 4x1, 3x1, 1x2 with cap4 = 3: r4/r5 = ((1/2)/(1/8)) / (1/(4/8)) = 2,
    # so w4 = min(2, 3) = 2 > w5 = 1: a lower grade ranks above a higher one.
    labels = label_set({5: 4, 4: 1, 3: 1, 1: 2})
    stats = QueryStats.build(labels, MetricConfig(cap4=3.0))
    assert_values(stats.weights[0], [0, 0, 0, Fraction(1, 4), Fraction(2), Fraction(1)], "w")
    assert stats.inverted.tolist() == [True]


@pytest.mark.parametrize(
    ("alpha", "weights", "ra_nwg"),
    [
        # alpha = 0: r_g = b_g; w4 = min(1/2, 1) = 1/2, w3 = min(1/10, 1/4) = 1/10
        # G_obs = 1/2 + 3/10 = 4/5; G_oracle = 1 + 1/2 + 1/2 + 1/10 = 21/10 -> 8/21
        (0.0, (Fraction(1, 10), Fraction(1, 2)), Fraction(8, 21)),
        # alpha = 1: the seed example
        (1.0, (Fraction(1, 30), Fraction(1, 4)), Fraction(21, 92)),
        # alpha = 2: r5 = 1/(1/8)^2 = 64, r4 = (1/2)/(1/4)^2 = 8, r3 = (1/10)/(3/8)^2 = 32/45
        # w4 = 8/64 = 1/8, w3 = (32/45)/64 = 1/90
        # G_obs = 1/8 + 3/90 = 19/120; G_oracle = 1 + 1/8 + 1/8 + 1/90 = 227/180
        # -> (19/120) / (227/180) = 57/454
        (2.0, (Fraction(1, 90), Fraction(1, 8)), Fraction(57, 454)),
    ],
)
def test_alpha(alpha: float, weights: tuple[Fraction, Fraction], ra_nwg: Fraction) -> None:
    labels = label_set({5: 1, 4: 2, 3: 3, 2: 1, 1: 1})
    config = MetricConfig(alpha=alpha)
    stats = QueryStats.build(labels, config)
    assert_values(
        stats.weights[0], [0, 0, 0, weights[0], weights[1], Fraction(1)], f"alpha={alpha}"
    )
    got = run_metrics(labels, [[4, 3, 3, 3]], ["ra_nwg"], 4, config=config)
    assert_values(got["ra_nwg"], [ra_nwg], f"RA-nWG@4 alpha={alpha}")


@pytest.mark.parametrize(
    ("cap4", "cap3", "w3", "w4", "ra_nwg"),
    [
        # Labels 5x4, 4x1, 3x1, 1x2 (N=8): r5 = 1/(4/8) = 2, r4 = (1/2)/(1/8) = 4,
        # r3 = (1/10)/(1/8) = 4/5 -> r4/r5 = 2, r3/r5 = 2/5: both caps bind by default.
        # w4 = 1, w3 = 1/4. Run [4,3,1,0]: G_obs = 5/4; G_oracle@4 = four weights of 1 = 4.
        (1.0, 0.25, Fraction(1, 4), Fraction(1), Fraction(5, 16)),
        # Tighter caps: w4 = 0.6, w3 = 0.3 -> G_obs = 0.9, G_oracle = 4 -> 9/40
        (0.6, 0.3, Fraction(3, 10), Fraction(3, 5), Fraction(9, 40)),
        # Loose caps do not bind: w4 = 2, w3 = 2/5. The oracle takes the 4 first:
        # G_oracle@4 = 2 + 1 + 1 + 1 = 5; G_obs = 2 + 2/5 = 12/5 -> 12/25
        (3.0, 0.5, Fraction(2, 5), Fraction(2), Fraction(12, 25)),
    ],
)
def test_caps(cap4: float, cap3: float, w3: Fraction, w4: Fraction, ra_nwg: Fraction) -> None:
    labels = label_set({5: 4, 4: 1, 3: 1, 1: 2})
    config = MetricConfig(cap4=cap4, cap3=cap3)
    stats = QueryStats.build(labels, config)
    assert_values(stats.weights[0], [0, 0, 0, w3, w4, Fraction(1)], "capped weights")
    got = run_metrics(labels, [[4, 3, 1, 0]], ["ra_nwg"], 4, config=config)
    assert_values(got["ra_nwg"], [ra_nwg], "RA-nWG@4")


def test_pool_run_that_holds_the_5() -> None:
    # Same query as pool_misses_the_5; this pool holds the 5: G_pool@3 = 1 + 1/6 + 1/6 = 4/3
    labels = label_set({5: 1, 4: 3, 3: 4, 2: 2})
    got = run_metrics(
        labels, [[4, 3, 3]], ["ra_nwg", "proc", "pct_proc"], 3, pool=[[0, 5, 4, 4, 3]]
    )
    assert_values(got["ra_nwg"], [Fraction(13, 80)], "RA-nWG")
    assert_values(got["proc"], [Fraction(1)], "PROC")
    assert_values(got["pct_proc"], [Fraction(13, 80)], "%PROC")


def test_k_override_per_query() -> None:
    # Two copies of the seed example; q0 pinned to K=2, q1 follows the caller's K=4.
    labels = label_set({5: 1, 4: 2, 3: 3, 2: 1, 1: 1}, {5: 1, 4: 2, 3: 3, 2: 1, 1: 1})
    names = ["ra_nwg", "precision_4plus", "precision", "recall", "ndcg", "judged", "harm"]
    got = run_metrics(labels, [[4, 3, 3, 3], [4, 3, 3, 3]], names, 4, k_override=[2, 0])
    # q0 at K=2: G_obs = 1/4 + 1/30 = 17/60; G_oracle@2 = 1 + 1/4 = 5/4 -> 17/75
    assert_values(got["ra_nwg"], [Fraction(17, 75), Fraction(21, 92)], "RA-nWG")
    assert_values(got["precision_4plus"], [Fraction(1, 2), Fraction(1, 4)], "Precision4+")
    assert_values(got["precision"], [Fraction(1, 2), Fraction(1, 4)], "precision")
    assert_values(got["recall"], [Fraction(1, 3), Fraction(1, 3)], "recall")
    assert_values(
        got["ndcg"],
        [dcg([2, 1]) / dcg([3, 2]), dcg([2, 1, 1, 1]) / dcg([3, 2, 2, 1])],
        "nDCG",
    )
    assert_values(got["judged"], [Fraction(1), Fraction(1)], "Judged")
    assert_values(got["harm"], [Fraction(0), Fraction(0)], "Harm")


# Query of the unjudged_mixed case: labels 5x2, 4x4, 3x2, 2x1, 1x1; top-5 [0,3,5,1,4].
MIXED_LABELS = {5: 2, 4: 4, 3: 2, 2: 1, 1: 1}
MIXED_RUN = [0, 3, 5, 1, 4, 5, 4]


@pytest.mark.parametrize(
    ("threshold", "expected"),
    [
        # relevant = grade >= 3: 8 passages; top-5 holds the 3, the 5, the 4; first at rank 2
        (
            3,
            {
                "hit": Fraction(1),
                "recall": Fraction(3, 8),
                "recall_all": Fraction(0),
                "precision": Fraction(3, 5),
                "mrr": Fraction(1, 2),
                "mrr@k": Fraction(1, 2),
            },
        ),
        # relevant = grade 5 only: 2 passages; one in the top-5, at rank 3
        (
            5,
            {
                "hit": Fraction(1),
                "recall": Fraction(1, 2),
                "recall_all": Fraction(0),
                "precision": Fraction(1, 5),
                "mrr": Fraction(1, 3),
                "mrr@k": Fraction(1, 3),
            },
        ),
        # relevant = any grade: 10 passages; 4 graded entries in the top-5, first at rank 2
        (
            1,
            {
                "hit": Fraction(1),
                "recall": Fraction(4, 10),
                "recall_all": Fraction(0),
                "precision": Fraction(4, 5),
                "mrr": Fraction(1, 2),
                "mrr@k": Fraction(1, 2),
            },
        ),
    ],
)
def test_relevance_threshold(threshold: int, expected: dict[str, Expected]) -> None:
    config = MetricConfig(relevance_threshold=threshold)
    names = [*expected, "n_recall_4plus", "precision_4plus"]
    got = run_metrics(label_set(MIXED_LABELS), [MIXED_RUN], names, 5, config=config)
    for name, want in expected.items():
        assert_values(got[name], [want], f"threshold {threshold}: {name}")
    # The 4+ metrics keep their fixed grade-4 cut: 2 / min(5, 6) and 2 / 5.
    assert_values(got["n_recall_4plus"], [Fraction(2, 5)], "N-Recall4+")
    assert_values(got["precision_4plus"], [Fraction(2, 5)], "Precision4+")


@pytest.mark.parametrize(
    ("threshold", "harm"),
    [
        (1, Fraction(1, 5)),  # the grade 1
        (2, Fraction(1, 5)),  # default: grades 1-2 (no 2 in the top-5)
        (3, Fraction(2, 5)),  # the 3 and the 1
        (5, Fraction(4, 5)),  # every graded entry; the unjudged one never counts
    ],
)
def test_harm_threshold(threshold: int, harm: Fraction) -> None:
    config = MetricConfig(harm_threshold=threshold)
    got = run_metrics(label_set(MIXED_LABELS), [MIXED_RUN], ["harm"], 5, config=config)
    assert_values(got["harm"], [harm], f"Harm@5 threshold {threshold}")


def test_custom_gain_map() -> None:
    config = MetricConfig(gain_map={1: 0, 2: 0, 3: 1, 4: 3, 5: 7})
    labels = label_set({5: 1, 4: 2, 3: 3, 2: 1, 1: 1}, MIXED_LABELS)
    got = run_metrics(
        labels, [[4, 3, 3, 3], MIXED_RUN], ["ndcg", "ctx_rank_prec"], 4, config=config
    )
    # q0 gains [3,1,1,1], ideal [7,3,3,1]; q1 top-4 [0,3,5,1] gains [0,1,7,0],
    # ideal over all labels [7,7,3,3]; sorted top-4 [7,1,0,0]
    assert_values(
        got["ndcg"],
        [dcg([3, 1, 1, 1]) / dcg([7, 3, 3, 1]), dcg([0, 1, 7, 0]) / dcg([7, 7, 3, 3])],
        "nDCG@4",
    )
    assert_values(
        got["ctx_rank_prec"], [100.0, 100 * dcg([0, 1, 7, 0]) / dcg([7, 1, 0, 0])], "ctx@4"
    )


def test_gain_map_giving_low_grades_gain() -> None:
    # gain = grade: the oracle_gain_zero query now has an nDCG and a ctx_rank_prec
    config = MetricConfig(gain_map={1: 1, 2: 2, 3: 3, 4: 4, 5: 5})
    got = run_metrics(
        label_set({2: 2, 1: 3}), [[1, 2, 0]], ["ndcg", "ctx_rank_prec", "ra_nwg"], 3, config=config
    )
    # run gains [1,2,0]; ideal over labels [2,2,1]; sorted run [2,1,0]
    assert_values(got["ndcg"], [dcg([1, 2, 0]) / dcg([2, 2, 1])], "nDCG@3")
    assert_values(got["ctx_rank_prec"], [100 * dcg([1, 2, 0]) / dcg([2, 1, 0])], "ctx@3")
    assert_values(got["ra_nwg"], [NA], "RA-nWG unaffected by gains")


@pytest.mark.parametrize(("threshold", "passed"), [(60.0, 1.0), (61.0, 0.0), (80.0, 0.0)])
def test_ctx_threshold(threshold: float, passed: float) -> None:
    # unjudged_mixed: 100 * DCG([0,1,3,0,2]) / DCG([3,2,1,0,0]) = 60.998...
    score = 100 * dcg([0, 1, 3, 0, 2]) / dcg([3, 2, 1, 0, 0])
    assert 60.99 < score < 61.0
    config = MetricConfig(ctx_threshold=threshold)
    got = run_metrics(
        label_set(MIXED_LABELS), [MIXED_RUN], ["ctx_rank_prec", "ctx_rank_pass"], 5, config=config
    )
    assert_values(got["ctx_rank_prec"], [score], "ctx_rank_prec")
    assert_values(got["ctx_rank_pass"], [passed], "ctx_rank_pass")


def test_ctx_rank_prec_reversed_order() -> None:
    # Top-3 [3,4,5]: gains [1,2,3] against sorted [3,2,1]
    got = run_metrics(label_set({5: 1, 4: 1, 3: 1}), [[3, 4, 5]], ["ctx_rank_prec"], 3)
    assert_values(got["ctx_rank_prec"], [100 * dcg([1, 2, 3]) / dcg([3, 2, 1])], "ctx@3")


@pytest.mark.parametrize(
    ("k", "expected"),
    [
        # q0: the answer is only in the 3rd entry; q1 has no expected answer -> NA;
        # q2 is missing from the run but has an answer -> 0
        (2, [Fraction(0), NA, Fraction(0)]),
        (3, [Fraction(1), NA, Fraction(0)]),
    ],
)
def test_containment(k: int, expected: list[Expected]) -> None:
    labels = label_set({5: 1, 2: 2}, {5: 1}, {4: 1})
    got = run_metrics(
        labels,
        [[5, 0, 2], [5], []],
        ["containment"],
        k,
        contains=[[False, False, True], [True], []],
        answers=[True, False, True],
    )
    assert_values(got["containment"], expected, f"containment@{k}")


def test_containment_without_answers_mask_and_without_texts() -> None:
    labels = label_set({5: 1, 2: 2}, {5: 1}, {4: 1})
    ranked = [[5, 0, 2], [5], []]
    contains = [[False, False, True], [True], []]
    got = run_metrics(labels, ranked, ["containment"], 1, contains=contains)
    assert_values(got["containment"], [Fraction(0), Fraction(1), Fraction(0)], "containment@1")
    got = run_metrics(labels, ranked, ["containment"], 1)
    assert_values(got["containment"], [NA, NA, NA], "containment without texts")


# Queries for the run-level %PROC, K = 1 (weights derived per query):
# q0 {5,1}: w5 = 1. run [1], pool [1,5]: RA-nWG 0, PROC 1, %PROC 0
# q1 {5,4}: N=2, r5 = 2, r4 = 1 -> w4 = 1/2. run [4], pool [4,5]: RA-nWG 1/2, PROC 1, %PROC 1/2
# q2 {2}: G_oracle = 0 -> all NA
# q3 {5,3}: r3 = 1/5 -> w3 = 1/10. run [3], pool [3]: RA-nWG 1/10, PROC 1/10, %PROC 1
# q4 {5}: run [], pool []: RA-nWG 0, PROC 0, %PROC NA
RATIO_LABELS = ({5: 1, 1: 1}, {5: 1, 4: 1}, {2: 1}, {5: 1, 3: 1}, {5: 1})
RATIO_RUN = [[1], [4], [2], [3], []]
RATIO_POOL = [[1, 5], [4, 5], [2], [3], []]
RATIO_RA = [Fraction(0), Fraction(1, 2), NA, Fraction(1, 10), Fraction(0)]
RATIO_PROC = [Fraction(1), Fraction(1), NA, Fraction(1, 10), Fraction(0)]
RATIO_PCT = [Fraction(0), Fraction(1, 2), NA, Fraction(1), NA]
# Run level over the 4 queries where both are defined (q0, q1, q3, q4):
# mean RA-nWG = (0 + 1/2 + 1/10 + 0)/4 = 3/20, mean PROC = (1 + 1 + 1/10 + 0)/4 = 21/40
# -> %PROC = (3/20) / (21/40) = 2/7, not the mean of per-query ratios (1/2).
RATIO_RUN_LEVEL = Fraction(2, 7)


def test_pct_proc_per_query_values() -> None:
    got = run_metrics(
        label_set(*RATIO_LABELS), RATIO_RUN, ["ra_nwg", "proc", "pct_proc"], 1, pool=RATIO_POOL
    )
    assert_values(got["ra_nwg"], RATIO_RA, "RA-nWG@1")
    assert_values(got["proc"], RATIO_PROC, "PROC@1")
    assert_values(got["pct_proc"], RATIO_PCT, "%PROC@1")


def test_ratio_of_means() -> None:
    nan = float("nan")
    ra = np.array([0.0, 0.5, nan, 0.1, 0.0])
    proc = np.array([1.0, 1.0, nan, 0.1, 0.0])
    value, n = ratio_of_means(ra, proc)
    assert n == 4
    assert value == pytest.approx(float(RATIO_RUN_LEVEL), abs=1e-12)
    # Queries where only one side is defined are left out of both means:
    # (1/2 + 1/10) / 2 over (1 + 1/10) / 2 = 6/11
    value, n = ratio_of_means(np.array([nan, 0.5, 0.1]), np.array([1.0, 1.0, 0.1]))
    assert n == 2
    assert value == pytest.approx(float(Fraction(6, 11)), abs=1e-12)
    assert ratio_of_means(np.array([0.0]), np.array([0.0])) == (None, 1)
    assert ratio_of_means(np.array([nan]), np.array([nan])) == (None, 0)
    # nan_mean of per-query %PROC: (0 + 1/2 + 1)/3 = 1/2
    mean, n = nan_mean(np.array([0.0, 0.5, nan, 1.0, nan]))
    assert n == 3
    assert mean == pytest.approx(0.5, abs=1e-12)


def test_run_level_pct_proc_through_evaluate() -> None:
    labels = label_set(*RATIO_LABELS)
    run = RankedRun.from_lists("sys", RATIO_RUN)
    pool = RankedRun.from_lists("pool", RATIO_POOL)
    stats = QueryStats.build(labels, MetricConfig())
    options = Options(
        metrics=parse_metric_list("pct_proc@1,ra_nwg@1,proc@1", ks=[1]),
        per_query=True,
        pools={"sys": pool},
    )
    report = evaluate(
        stats,
        [run],
        options,
        labels_info=LabelsInfo(queries=5, graded=9, fingerprint="test"),
        config={},
        warnings=[],
    )
    result = report.runs["sys"]
    assert result.mean["pct_proc@1"] == pytest.approx(float(RATIO_RUN_LEVEL), abs=1e-12)
    assert result.valid["pct_proc@1"] == 4
    # RA-nWG and PROC means over their 4 defined queries: 3/20 and 21/40
    assert result.mean["ra_nwg@1"] == pytest.approx(float(Fraction(3, 20)), abs=1e-12)
    assert result.mean["proc@1"] == pytest.approx(float(Fraction(21, 40)), abs=1e-12)
    assert result.valid["ra_nwg@1"] == 4
    assert result.per_query is not None
    per_query = [result.per_query[q]["pct_proc@1"] for q in labels.query_ids]
    assert per_query[2] is None
    assert per_query[4] is None
    for value, want in zip(per_query, RATIO_PCT, strict=True):
        if want is not None:
            assert value == pytest.approx(float(want), abs=1e-12)


def test_run_level_pct_proc_without_its_parts_requested() -> None:
    # %PROC alone: its numerator and denominator are computed behind the scenes.
    labels = label_set(*RATIO_LABELS)
    options = Options(
        metrics=parse_metric_list("pct_proc@1", ks=[1]),
        pools={"sys": RankedRun.from_lists("pool", RATIO_POOL)},
    )
    report = evaluate(
        QueryStats.build(labels, MetricConfig()),
        [RankedRun.from_lists("sys", RATIO_RUN)],
        options,
        labels_info=LabelsInfo(queries=5, graded=9, fingerprint="test"),
        config={},
        warnings=[],
    )
    assert report.runs["sys"].mean == {"pct_proc@1": pytest.approx(float(RATIO_RUN_LEVEL))}


def test_ap_rprec_bpref_by_hand() -> None:
    # q0: one 5, one 4, two 2s (R = 2 relevant, N = 2 judged non-relevant); the run ranks
    # 2, 5, unjudged, 2, 4. q1 has no relevant passage: all NA (0 only under --na zero).
    labels = label_set({5: 1, 4: 1, 2: 2}, {3: 2})
    run = RankedRun.from_lists("sys", [[2, 5, 0, 2, 4], [3, 3]])
    keys = parse_metric_list("ap,ap@3,rprec,bpref", ks=[3])
    got = {key.name: v for key, v in evaluate_runs(labels, [run], keys)["sys"].items()}
    # AP: relevant at ranks 2 and 5: (1/2 + 2/5) / 2
    assert_values(got["ap"], [Fraction(9, 20), NA], "ap")
    # AP@3: only rank 2 is in the top 3, still divided by R = 2
    assert_values(got["ap@3"], [Fraction(1, 4), NA], "ap@3")
    # R-precision: 1 relevant among the top R = 2
    assert_values(got["rprec"], [Fraction(1, 2), NA], "rprec")
    # bpref: rank 2 has 1 judged non-relevant above: 1 - 1/min(2, 2); rank 5 has 2
    # (the unjudged entry does not count): 1 - 2/2. (1/2 + 0) / 2
    assert_values(got["bpref"], [Fraction(1, 4), NA], "bpref")
    # Condensed list (2, 5, 2, 4): AP (1/2 + 2/4) / 2; bpref unchanged (ignores unjudged)
    condensed = evaluate_runs(labels, [run], keys, judged_only=True)["sys"]
    by_name = {key.name: v for key, v in condensed.items()}
    assert_values(by_name["ap"], [Fraction(1, 2), NA], "ap judged-only")
    assert_values(by_name["bpref"], [Fraction(1, 4), NA], "bpref judged-only")
    assert_values(by_name["rprec"], [Fraction(1, 2), NA], "rprec judged-only")
