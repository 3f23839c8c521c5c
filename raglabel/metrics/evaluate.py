"""Per-query values of every metric for one run, computed as whole-array operations.

No loop here visits a query or a passage: each metric is a few masked reductions
over the run's entries (``np.bincount`` by query) and the label set's grade counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from numpy.typing import NDArray

from raglabel.metrics.bpref import bpref
from raglabel.metrics.config import GRADES, MetricConfig
from raglabel.metrics.ctxrank import passes
from raglabel.metrics.discount import discount, ideal_dcg
from raglabel.metrics.labels import LabelSet, counts_from_grades
from raglabel.metrics.names import RANKED_LIST_METRICS, MetricKey
from raglabel.metrics.ndcg import exponential, whole_ranking
from raglabel.metrics.precision import average_precision, r_precision
from raglabel.metrics.record import FrozenRecord
from raglabel.metrics.run import RankedRun
from raglabel.metrics.weights import grade_inversions, rarity_weights, top_k_gain

FloatArray = NDArray[np.float64]
_HITS4 = frozenset({"n_recall_4plus", "precision_4plus"})


# Compared and hashed by identity: its arrays compare element-wise, so a field-by-field
# __eq__ could only raise. A hand-written record, not a dataclass, so that no code is
# generated and compiled for it at every eval's start-up.
class QueryStats(FrozenRecord):
    """What the label set and the configuration fix for every run alike."""

    __slots__ = (
        "config",
        "gains",
        "inverted",
        "labels",
        "nonrelevant",
        "r4plus",
        "r5",
        "relevant",
        "weights",
    )

    labels: LabelSet
    config: MetricConfig
    weights: FloatArray  # (n_queries, 6), rarity weight of each grade
    gains: FloatArray  # (6,), nDCG gain of each grade; 0 for unjudged
    relevant: NDArray[np.int64]  # passages at or above the relevance threshold
    nonrelevant: NDArray[np.int64]  # graded passages below it
    r4plus: NDArray[np.int64]
    r5: NDArray[np.int64]
    inverted: NDArray[np.bool_]

    def __init__(
        self,
        *,
        labels: LabelSet,
        config: MetricConfig,
        weights: FloatArray,
        gains: FloatArray,
        relevant: NDArray[np.int64],
        nonrelevant: NDArray[np.int64],
        r4plus: NDArray[np.int64],
        r5: NDArray[np.int64],
        inverted: NDArray[np.bool_],
    ) -> None:
        object.__setattr__(self, "labels", labels)
        object.__setattr__(self, "config", config)
        object.__setattr__(self, "weights", weights)
        object.__setattr__(self, "gains", gains)
        object.__setattr__(self, "relevant", relevant)
        object.__setattr__(self, "nonrelevant", nonrelevant)
        object.__setattr__(self, "r4plus", r4plus)
        object.__setattr__(self, "r5", r5)
        object.__setattr__(self, "inverted", inverted)

    @classmethod
    def build(cls, labels: LabelSet, config: MetricConfig) -> QueryStats:
        counts = labels.counts
        weights = rarity_weights(counts, config)
        gains = np.array([0.0] + [config.gain_map[g] for g in GRADES])
        return cls(
            labels=labels,
            config=config,
            weights=weights,
            gains=gains,
            relevant=counts[:, config.relevance_threshold :].sum(axis=1),
            nonrelevant=counts[:, 1 : config.relevance_threshold].sum(axis=1),
            r4plus=counts[:, 4:].sum(axis=1),
            r5=counts[:, 5].copy(),
            inverted=grade_inversions(counts, weights),
        )


def _ratio(num: FloatArray, den: FloatArray, defined: NDArray[np.bool_]) -> FloatArray:
    out = np.full(num.shape, np.nan)
    np.divide(num, den, out=out, where=defined)
    return out


class _RunView:
    """One run's entries with the per-entry quantities every cutoff reuses.

    Cutoff metrics only ever look at the first ``max_k`` entries of a query, so those
    are cut out once; only the uncut MRR and the pool read the whole run.
    """

    def __init__(
        self, stats: QueryStats, run: RankedRun, pool: RankedRun | None, max_k: int
    ) -> None:
        if run.n_queries != stats.labels.n_queries:
            raise ValueError(
                f"run {run.name!r} covers {run.n_queries} queries, "
                f"the labels {stats.labels.n_queries}"
            )
        self.stats = stats
        self.run = run
        self.n = run.n_queries
        self.pool_run = pool if pool is not None else run
        if self.pool_run.n_queries != self.n:
            raise ValueError(f"pool run {self.pool_run.name!r} does not cover the same queries")
        self.lengths = run.lengths
        head, self.qidx, self.pos = run.head(max_k)
        self.grades = (run.grades if head is None else run.grades[head]).astype(np.int64)
        self.contains = run.contains
        if run.contains is not None and head is not None:
            self.contains = run.contains[head]
        self.relevant_entry = self.grades >= stats.config.relevance_threshold
        self._pool_counts: NDArray[np.int64] | None = None

    @property
    def pool_counts(self) -> NDArray[np.int64]:
        if self._pool_counts is None:
            self._pool_counts = self.pool_run.grade_counts()
        return self._pool_counts

    def cutoffs(self, k: int) -> NDArray[np.int64]:
        if self.run.k_override is None:
            return np.full(self.n, k, dtype=np.int64)
        return np.where(self.run.k_override > 0, self.run.k_override, k).astype(np.int64)

    def count(self, mask: NDArray[np.bool_], weights: FloatArray | None = None) -> FloatArray:
        """Per-query sum over the entries selected by ``mask``."""
        w = None if weights is None else weights[mask]
        result: FloatArray = np.bincount(self.qidx[mask], weights=w, minlength=self.n).astype(
            np.float64
        )
        return result

    def at_k(self, k: int, bases: set[str]) -> dict[str, FloatArray]:
        stats, cfg = self.stats, self.stats.config
        kq = self.cutoffs(k)
        kf = kq.astype(np.float64)
        top = self.pos < kq[self.qidx]
        size = np.minimum(self.lengths, kq).astype(np.float64)
        g = self.grades
        out: dict[str, FloatArray] = {}
        graded_top = top & (g > 0)
        hits4 = self.count(top & (g >= 4)) if bases & _HITS4 else np.zeros(0)
        if bases & {"ra_nwg", "proc", "pct_proc"}:
            entry_w = stats.weights[self.qidx, g]
            g_obs = self.count(top, entry_w)
            g_oracle = top_k_gain(stats.labels.counts, stats.weights, kq)
            g_pool = top_k_gain(self.pool_counts, stats.weights, kq)
            defined = g_oracle > 0
            ra = _ratio(g_obs, g_oracle, defined)
            proc = _ratio(g_pool, g_oracle, defined)
            out["ra_nwg"], out["proc"] = ra, proc
            out["pct_proc"] = _ratio(ra, proc, defined & (g_pool > 0))
        if "n_recall_4plus" in bases:
            r = stats.r4plus
            out["n_recall_4plus"] = _ratio(hits4, np.minimum(kq, r).astype(np.float64), r > 0)
        if "n_recall_5" in bases:
            r = stats.r5
            hits5 = self.count(top & (g == 5))
            out["n_recall_5"] = _ratio(hits5, np.minimum(kq, r).astype(np.float64), r > 0)
        if "precision_4plus" in bases:
            out["precision_4plus"] = hits4 / kf
        if "harm" in bases:
            out["harm"] = self.count(graded_top & (g <= cfg.harm_threshold)) / kf
        if "judged" in bases:
            out["judged"] = _ratio(self.count(graded_top), size, size > 0)
        rel_top = top & self.relevant_entry
        n_rel = stats.relevant.astype(np.float64)
        has_rel = stats.relevant > 0
        if bases & {"hit", "recall", "recall_all", "precision", "f1"}:
            found = self.count(rel_top)
            out["hit"] = _ratio((found > 0).astype(np.float64), np.ones(self.n), has_rel)
            out["recall"] = _ratio(found, n_rel, has_rel)
            out["recall_all"] = _ratio(
                (found >= n_rel).astype(np.float64), np.ones(self.n), has_rel
            )
            out["precision"] = found / kf
            # The harmonic mean of precision found / K and recall found / R, which is
            # 2 found / (K + R); 0 when nothing relevant is found, NA when nothing is
            # relevant (as recall).
            out["f1"] = _ratio(2.0 * found, kf + n_rel, has_rel)
        if "mrr" in bases:
            out["mrr"] = self.reciprocal_rank(rel_top)
        if "ap" in bases:
            where = np.flatnonzero(rel_top)
            out["ap"] = average_precision(self.qidx[where], self.pos[where], stats.relevant)
        for name, gains in self.ndcg_gains(bases):
            dcg = self.count(top, gains[g] * discount(self.pos))
            idcg = ideal_dcg(stats.labels.counts, np.broadcast_to(gains, (self.n, 6)), kq)
            ndcg = np.zeros(self.n)
            np.divide(dcg, idcg, out=ndcg, where=idcg > 0)
            out[name] = ndcg
        if "containment" in bases:
            out["containment"] = self.containment(top)
        if bases & {"ctx_rank_prec", "ctx_rank_pass"}:
            dcg = self.count(top, stats.gains[g] * discount(self.pos))
            top_counts = counts_from_grades(self.n, self.qidx[top], g[top])
            best = ideal_dcg(top_counts, np.broadcast_to(stats.gains, (self.n, 6)), kq)
            score = _ratio(100.0 * dcg, best, best > 0)
            out["ctx_rank_prec"] = score
            passed = passes(score, cfg.ctx_threshold).astype(np.float64)
            out["ctx_rank_pass"] = np.where(np.isnan(score), np.nan, passed)
        return out

    def ndcg_gains(self, bases: set[str]) -> list[tuple[str, FloatArray]]:
        """The nDCG forms asked for, each with its gain per grade (0 = unjudged)."""
        forms: list[tuple[str, FloatArray]] = []
        if "ndcg" in bases:
            forms.append(("ndcg", self.stats.gains))
        if "ndcg_exp" in bases:
            forms.append(("ndcg_exp", exponential(self.stats.gains)))
        return forms

    def reciprocal_rank(self, relevant: NDArray[np.bool_] | None = None) -> FloatArray:
        """1 / rank of the first relevant entry among ``relevant`` (default: the whole run)."""
        if relevant is None:
            run = self.run
            where = np.flatnonzero(run.grades >= self.stats.config.relevance_threshold)
            qidx, pos = run.locate(where)
        else:
            where = np.flatnonzero(relevant)
            qidx, pos = self.qidx[where], self.pos[where]
        rr = np.zeros(self.n)
        # Entries are grouped by query in rank order: the first hit of a query is the
        # first time its index appears.
        queries, first = np.unique(qidx, return_index=True)
        rr[queries] = 1.0 / (pos[first] + 1.0)
        rr[self.stats.relevant == 0] = np.nan
        return rr

    def uncut(self, bases: set[str]) -> dict[str, FloatArray]:
        """The measures without a cutoff, over the whole run."""
        out: dict[str, FloatArray] = {}
        if "mrr" in bases:
            out["mrr"] = self.reciprocal_rank()
        stats, run = self.stats, self.run
        for name, gains in self.ndcg_gains(bases):
            out[name] = whole_ranking(run, stats.labels.counts, gains)
        threshold = stats.config.relevance_threshold
        if bases & {"ap", "rprec"}:
            qidx, pos = run.locate(np.flatnonzero(run.grades >= threshold))
            if "ap" in bases:
                out["ap"] = average_precision(qidx, pos, stats.relevant)
            if "rprec" in bases:
                out["rprec"] = r_precision(qidx, pos, stats.relevant)
        if "bpref" in bases:
            judged = np.flatnonzero(run.grades)
            qidx, _ = run.locate(judged)
            relevant = run.grades[judged] >= threshold
            out["bpref"] = bpref(qidx, relevant, stats.relevant, stats.nonrelevant)
        return out

    def containment(self, top: NDArray[np.bool_]) -> FloatArray:
        if self.contains is None:
            return np.full(self.n, np.nan)
        found: FloatArray = (self.count(top & self.contains) > 0).astype(np.float64)
        return found


def evaluate_run(
    stats: QueryStats,
    run: RankedRun,
    metrics: Sequence[MetricKey],
    *,
    pool: RankedRun | None = None,
    answers: NDArray[np.bool_] | None = None,
    judged_only: bool = False,
) -> dict[MetricKey, FloatArray]:
    """Per-query values (NaN = NA) of ``metrics`` for ``run``.

    ``answers`` marks the queries that have an expected answer; containment is NA for
    the others (and for every query when the run carries no texts). ``judged_only``
    computes the ranked-list metrics (hit, recall, precision, MRR, nDCG, AP, R-precision,
    bpref) on the condensed run, whose unjudged entries are removed.
    """
    if judged_only:
        ranked = [key for key in metrics if key.base in RANKED_LIST_METRICS]
        rest = [key for key in metrics if key.base not in RANKED_LIST_METRICS]
        parts = evaluate_run(stats, run, rest, pool=pool, answers=answers) if rest else {}
        if ranked:
            parts.update(evaluate_run(stats, run.judged_only(), ranked, pool=pool))
        return {key: parts[key] for key in metrics}
    cut = [key.k for key in metrics if key.k is not None]
    max_k = max(cut, default=0)
    if run.k_override is not None:
        max_k = max(max_k, int(run.k_override.max(initial=0)))
    view = _RunView(stats, run, pool, max_k)
    by_k: dict[int | None, set[str]] = {}
    for key in metrics:
        by_k.setdefault(key.k, set()).add(key.base)
    results: dict[MetricKey, FloatArray] = {}
    for k, bases in by_k.items():
        values = view.uncut(bases) if k is None else view.at_k(k, bases)
        for base in bases:
            results[MetricKey(base, k)] = values[base]
    if answers is not None:
        for key, column in results.items():
            if key.base == "containment":
                column[~answers] = np.nan
    return {key: results[key] for key in metrics}


def evaluate_runs(
    labels: LabelSet,
    runs: Iterable[RankedRun],
    metrics: Sequence[MetricKey],
    *,
    config: MetricConfig | None = None,
    pools: dict[str, RankedRun] | None = None,
    answers: NDArray[np.bool_] | None = None,
    judged_only: bool = False,
) -> dict[str, dict[MetricKey, FloatArray]]:
    """Evaluate several runs against one label set (weights computed once)."""
    stats = QueryStats.build(labels, config or MetricConfig())
    pools = pools or {}
    return {
        run.name: evaluate_run(
            stats,
            run,
            metrics,
            pool=pools.get(run.name),
            answers=answers,
            judged_only=judged_only,
        )
        for run in runs
    }
