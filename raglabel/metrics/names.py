"""Metric names (``ndcg@10``, ``mrr``), the groups a user may ask for, and the names
other tools give the same measures (trec_eval's ``P_5``, ir_measures' ``nDCG@10``)."""

from __future__ import annotations

import re

from raglabel.metrics.record import FrozenRecord

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
#: trec_eval's ranked-list measures beside the classic ones: AP, R-precision, bpref.
TREC_METRICS = ("ap", "rprec", "bpref")
ALL_METRICS = SET_METRICS + CLASSIC_METRICS + RANKING_METRICS
KNOWN_METRICS = ALL_METRICS + TREC_METRICS
#: Metrics whose better run has the lower value: the share of harmful passages on top.
LOWER_IS_BETTER = frozenset({"harm"})
#: Metrics that also exist without a cutoff.
UNCUT = frozenset({"mrr", "ap", "rprec", "bpref"})
#: Metrics that exist only without a cutoff.
UNCUT_ONLY = frozenset({"rprec", "bpref"})
#: The classic metrics: with ``--judged-only`` they see condensed lists.
RANKED_LIST_METRICS = frozenset(
    {"hit", "recall", "recall_all", "precision", "mrr", "ndcg", "ap", "rprec", "bpref"}
)
GROUPS: dict[str, tuple[str, ...]] = {
    "set": SET_METRICS,
    "classic": CLASSIC_METRICS,
    "ranking": RANKING_METRICS,
    "trec": ("precision", "recall", "hit", "mrr", "ndcg", "ap", "rprec", "bpref"),
    "all": ALL_METRICS,
}

#: Names of other tools, lower case, without a cutoff: name -> raglabel's base.
_PLAIN_ALIASES = {
    "map": "ap",  # trec_eval
    "recip_rank": "mrr",
    "rr": "mrr",  # ir_measures
    "r-prec": "rprec",
}
#: Bases of other tools' names that take a cutoff (``P_5``, ``P.5``, ``P@5``).
_CUT_ALIASES = {
    "p": "precision",
    "r": "recall",
    "ndcg_cut": "ndcg",
    "map_cut": "ap",
    "success": "hit",
    "rr": "mrr",
    "recip_rank": "mrr",
}
_TREC_CUT = re.compile(r"^(p|recall|ndcg_cut|map_cut|success)[._](\d+)$")
#: The largest cutoff the engine takes (it must fit a signed 64-bit integer).
MAX_CUTOFF = 2**63 - 1


# Written out, not a dataclass (frozen, ordered): a dataclass compiles its ten generated
# methods when the module is imported, at every eval's start-up. Equality, hash, order
# and repr are the dataclass's: by (base, k), as a dict key and sorted.
class MetricKey(FrozenRecord):
    """One metric at one cutoff (``k`` is None for an uncut metric such as MRR)."""

    __slots__ = ("base", "k")

    base: str
    k: int | None

    def __init__(self, base: str, k: int | None) -> None:
        object.__setattr__(self, "base", base)
        object.__setattr__(self, "k", k)

    def __repr__(self) -> str:
        return f"MetricKey(base={self.base!r}, k={self.k!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MetricKey) and other.__class__ is self.__class__:
            return (self.base, self.k) == (other.base, other.k)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.base, self.k))

    def __lt__(self, other: MetricKey) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (self.base, self.k) < (other.base, other.k)

    def __le__(self, other: MetricKey) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (self.base, self.k) <= (other.base, other.k)

    def __gt__(self, other: MetricKey) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (self.base, self.k) > (other.base, other.k)

    def __ge__(self, other: MetricKey) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (self.base, self.k) >= (other.base, other.k)

    @property
    def name(self) -> str:
        return self.base if self.k is None else f"{self.base}@{self.k}"


class MetricNameError(ValueError):
    """A metric list names something raglabel does not compute."""


def _known_names() -> list[str]:
    names = list(KNOWN_METRICS) + list(GROUPS)
    names += ["P_5", "P.5", "P@5", "recall_100", "R@100", "ndcg_cut_10", "nDCG@10"]
    names += ["recip_rank", "RR", "map", "map_cut_10", "AP", "Rprec", "bpref", "success_10"]
    return names


def _unknown(item: str) -> MetricNameError:
    import difflib  # only a misspelt name needs it

    close = difflib.get_close_matches(item, _known_names(), n=1, cutoff=0.5)
    if not close:
        close = difflib.get_close_matches(item.lower(), [n.lower() for n in _known_names()], n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return MetricNameError(
        f"unknown metric {item!r}{hint} Known: {', '.join(KNOWN_METRICS)}, the groups "
        f"{', '.join(GROUPS)}, and trec_eval or ir_measures names (P_5, nDCG@10, map, ...)"
    )


def parse_cutoff(text: str) -> int:
    """A cutoff: an integer from 1 to 2**63 - 1, else a ValueError that says why."""
    try:
        k = int(text.strip())
    except ValueError:
        raise ValueError(f"{text.strip()!r} is not an integer") from None
    if k < 1:
        raise ValueError(f"cutoffs must be at least 1, got {k}")
    if k > MAX_CUTOFF:
        raise ValueError(f"cutoff {k} is too large (at most 2**63 - 1)")
    return k


def cutoff_value(text: str, what: str) -> int:
    """The cutoff written in the metric name ``what``."""
    try:
        return parse_cutoff(text)
    except ValueError as exc:
        raise MetricNameError(f"cutoff of {what!r}: {exc}") from None


def canonical(item: str) -> tuple[str, str | None]:
    """``(base, cutoff text or None)`` of one metric name, aliases resolved; the base is
    a group name or a metric of :data:`KNOWN_METRICS`."""
    lowered = item.lower()
    base, at, cut = lowered.partition("@")
    if at:
        if base in GROUPS or base in KNOWN_METRICS:
            return base, cut
        if base in _CUT_ALIASES:
            return _CUT_ALIASES[base], cut
        raise _unknown(item)
    if base in GROUPS or base in KNOWN_METRICS:
        return base, None
    if base in _PLAIN_ALIASES:
        return _PLAIN_ALIASES[base], None
    match = _TREC_CUT.match(base)
    if match:
        return _CUT_ALIASES.get(match.group(1), match.group(1)), match.group(2)
    raise _unknown(item)


def parse_metric_list(text: str | None, ks: list[int]) -> list[MetricKey]:
    """Expand ``"set,ndcg@10,mrr"`` into metric keys, keeping the user's order.

    A name without ``@k`` is computed at every cutoff of ``ks``; ``mrr`` and ``ap`` alone
    are the uncut measures, ``rprec`` and ``bpref`` take no cutoff; a group name expands
    to its members. Other tools' names (``P_5``, ``ndcg_cut.10``, ``map``, ``nDCG@10``,
    ``RR``) are aliases of raglabel's. ``None`` means all metrics, plus the uncut MRR.
    """
    items = [part.strip() for part in (text or "all").split(",") if part.strip()]
    if not items:
        raise MetricNameError("the metric list is empty")
    keys: list[MetricKey] = []
    for item in items:
        base, cut = canonical(item)
        if base in GROUPS:
            if cut is not None:
                raise MetricNameError(f"a group takes no cutoff: {item!r}")
            for member in GROUPS[base]:
                if member not in UNCUT_ONLY:
                    keys.extend(MetricKey(member, k) for k in ks)
                if member in UNCUT:
                    keys.append(MetricKey(member, None))
            continue
        if cut is not None:
            if base in UNCUT_ONLY:
                raise MetricNameError(f"{base} takes no cutoff: {item!r}")
            keys.append(MetricKey(base, cutoff_value(cut, item)))
        elif base in UNCUT:
            keys.append(MetricKey(base, None))
        else:
            keys.extend(MetricKey(base, k) for k in ks)
    unique: dict[MetricKey, None] = dict.fromkeys(keys)
    return list(unique)


def lower_is_better(metric: str) -> bool:
    """Whether the better run has the lower value of ``metric``, named as reports print
    it (``harm@5``)."""
    return metric.split("@", 1)[0] in LOWER_IS_BETTER
