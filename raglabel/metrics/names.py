"""Metric names (``ndcg@10``, ``mrr``) and the groups a user may ask for."""

from __future__ import annotations

from dataclasses import dataclass

SET_METRICS = (
    "ra_nwg",
    "proc",
    "pct_proc",
    "n_recall_4plus",
    "n_recall_5",
    "precision_4plus",
    "harm",
    "judged",
)
CLASSIC_METRICS = ("hit", "recall", "recall_all", "precision", "mrr", "ndcg", "containment")
RANKING_METRICS = ("ctx_rank_prec", "ctx_rank_pass")
ALL_METRICS = SET_METRICS + CLASSIC_METRICS + RANKING_METRICS
#: Metrics that also exist without a cutoff.
UNCUT = frozenset({"mrr"})
GROUPS: dict[str, tuple[str, ...]] = {
    "set": SET_METRICS,
    "classic": CLASSIC_METRICS,
    "ranking": RANKING_METRICS,
    "all": ALL_METRICS,
}


@dataclass(frozen=True, order=True)
class MetricKey:
    """One metric at one cutoff (``k`` is None for the uncut MRR)."""

    base: str
    k: int | None

    @property
    def name(self) -> str:
        return self.base if self.k is None else f"{self.base}@{self.k}"


class MetricNameError(ValueError):
    """A metric list names something raglabel does not compute."""


def parse_metric_list(text: str | None, ks: list[int]) -> list[MetricKey]:
    """Expand ``"set,ndcg@10,mrr"`` into metric keys, keeping the user's order.

    A name without ``@k`` is computed at every cutoff of ``ks``; ``mrr`` alone is the
    uncut reciprocal rank; a group name expands to its members. ``None`` means all
    metrics, plus the uncut MRR.
    """
    items = [part.strip() for part in (text or "all").split(",") if part.strip()]
    if not items:
        raise MetricNameError("the metric list is empty")
    keys: list[MetricKey] = []
    for item in items:
        base, _, cut = item.partition("@")
        base = base.lower()
        if base in GROUPS:
            if cut:
                raise MetricNameError(f"a group takes no cutoff: {item!r}")
            for member in GROUPS[base]:
                keys.extend(MetricKey(member, k) for k in ks)
                if member in UNCUT:
                    keys.append(MetricKey(member, None))
            continue
        if base not in ALL_METRICS:
            raise MetricNameError(
                f"unknown metric {item!r}; known: {', '.join(ALL_METRICS)} "
                f"or the groups {', '.join(GROUPS)}"
            )
        if cut:
            try:
                k = int(cut)
            except ValueError:
                raise MetricNameError(f"cutoff of {item!r} is not an integer") from None
            if k < 1:
                raise MetricNameError(f"cutoff of {item!r} must be at least 1")
            keys.append(MetricKey(base, k))
        elif base in UNCUT:
            keys.append(MetricKey(base, None))
        else:
            keys.extend(MetricKey(base, k) for k in ks)
    unique: dict[MetricKey, None] = dict.fromkeys(keys)
    return list(unique)
