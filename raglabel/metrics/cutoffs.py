"""A query's own cutoff (a sample's ``metadata.k``) and the columns its values go to.

The cutoff of a query resolves as the metric spec says: its own k where the input sets
one, else the caller's k, else the configured default. A column's name states the k of
every value in it: a query with its own k appears in the columns of that k only, and
such a k becomes a column of its own when the caller did not ask for it. The other
queries appear in the caller's columns only. So ``recall@5`` never holds a value taken
at k = 2; that one is in ``recall@2``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from numpy.typing import NDArray

from raglabel.metrics.names import MetricKey
from raglabel.metrics.run import RankedRun


def own_cutoffs(runs: Iterable[RankedRun], query_ids: Sequence[str]) -> dict[str, int]:
    """Each query that has its own k, with that k (the same in every run that sets it)."""
    own: dict[str, int] = {}
    for run in runs:
        if run.k_override is None:
            continue
        for q in np.flatnonzero(run.k_override > 0):
            own[query_ids[int(q)]] = int(run.k_override[q])
    return own


def with_own_cutoffs(
    metrics: Sequence[MetricKey], own: dict[str, int]
) -> tuple[list[MetricKey], frozenset[MetricKey]]:
    """The metrics with a column at each query's own k beside every metric asked for
    with a cutoff, and the columns so added (the caller did not ask for them, so the
    queries without an own k stay out of them). A column the caller asked for, say
    ``recall@2``, is every such query's, whatever other metric adds an ``@2`` column."""
    pins = sorted(set(own.values()))
    asked: dict[str, set[int]] = {}
    for key in metrics:
        if key.k is not None:
            asked.setdefault(key.base, set()).add(key.k)
    # Each base's own-k columns follow its last column asked for: the caller's columns
    # keep their order, and the first of them (the report's headline) stays first.
    last = {key.base: i for i, key in enumerate(metrics) if key.k is not None}
    out: list[MetricKey] = []
    added: list[MetricKey] = []
    for i, key in enumerate(metrics):
        out.append(key)
        if last.get(key.base) == i:
            extra = [MetricKey(key.base, k) for k in pins if k not in asked[key.base]]
            out += extra
            added += extra
    return out, frozenset(added)


def out_of_column(
    run: RankedRun, key: MetricKey, own_only: frozenset[MetricKey]
) -> NDArray[np.bool_]:
    """The queries whose value does not belong in ``key``'s column: those with their
    own k at another cutoff, and the others in a column only own ks added."""
    out = np.zeros(run.n_queries, dtype=np.bool_)
    if key.k is None:
        return out
    pinned = out if run.k_override is None else run.k_override > 0
    if run.k_override is not None:
        out = pinned & (run.k_override != key.k)
    if key in own_only:
        out = out | ~pinned
    return out


def own_k_note(own: dict[str, int], asked: Sequence[MetricKey]) -> list[str]:
    """A word on the queries whose own k keeps them out of a column asked for, or adds
    columns nobody asked for (nothing when every own k is every cutoff asked for)."""
    asked_ks = {key.k for key in asked if key.k is not None}
    if not asked_ks or not own or len(set(own.values()) | asked_ks) == 1:
        return []
    by_k: dict[int, list[str]] = {}
    for qid, k in own.items():
        by_k.setdefault(k, []).append(qid)
    parts = []
    for k, qids in sorted(by_k.items()):
        shown = ", ".join(qids[:3]) + (", ..." if len(qids) > 3 else "")
        parts.append(f"{len(qids)} at k={k} ({shown})")
    others = ", ".join(f"@{k}" for k in sorted(asked_ks))
    who = "1 query sets its" if len(own) == 1 else f"{len(own)} queries set their"
    return [
        f"{who} own cutoff (metadata.k): {'; '.join(parts)}. A query's cutoff metrics are "
        f"in the columns of its own k only; the other queries' are in the {others} "
        "columns (config.query_k lists every query's own k)"
    ]
