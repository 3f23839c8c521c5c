"""Metric names (``ndcg@10``, ``mrr``), the groups a user may ask for, and the names
other tools give the same measures (trec_eval's ``P_5``, ir_measures' ``nDCG@10``,
ranx's ``map@100``): how a typed list of them is read. The measures themselves, with
their groups, aliases and direction, are the records of :mod:`raglabel.metrics.table`."""

from __future__ import annotations

import re

from raglabel.metrics.aliases import CUT, FAMILIES, PLAIN, SYNONYMS
from raglabel.metrics.record import FrozenRecord
from raglabel.metrics.table import METRICS, names_in

SET_METRICS = names_in("set")
CLASSIC_METRICS = names_in("classic")
RANKING_METRICS = names_in("ranking")
#: trec_eval's ranked-list measures beside the classic ones: AP, R-precision, bpref.
TREC_METRICS = names_in("trec")
#: Measures other libraries report, computed when named (no group holds them): F1
#: (ranx's f1) and nDCG with exponential gain 2**gain - 1 (ranx's ndcg_burges).
PEER_METRICS = names_in("peer")
ALL_METRICS = SET_METRICS + CLASSIC_METRICS + RANKING_METRICS
KNOWN_METRICS = ALL_METRICS + TREC_METRICS + PEER_METRICS
#: Metrics whose better run has the lower value (the share of harmful passages on top).
LOWER_IS_BETTER = frozenset(m.name for m in METRICS if m.better == "lower")
#: Metrics that also exist without a cutoff; a group adds their uncut form.
UNCUT = frozenset(m.name for m in METRICS if m.uncut in ("grouped", "only"))
#: Metrics whose name without ``@k`` means the uncut measure, as in trec_eval, ir_measures
#: and ranx (``ndcg`` is nDCG over the whole ranking there); groups hold nDCG at ``-k``.
BARE_IS_UNCUT = frozenset(m.name for m in METRICS if m.uncut != "never")
#: Metrics that exist only without a cutoff.
UNCUT_ONLY = frozenset(m.name for m in METRICS if m.uncut == "only")
#: The classic metrics: with ``--judged-only`` they see condensed lists.
RANKED_LIST_METRICS = frozenset(m.name for m in METRICS if m.ranked_list)
GROUPS: dict[str, tuple[str, ...]] = {
    "set": SET_METRICS,
    "classic": CLASSIC_METRICS,
    "ranking": RANKING_METRICS,
    "trec": ("precision", "recall", "hit", "mrr", "ndcg", "ap", "rprec", "bpref"),
    "all": ALL_METRICS,
}

#: trec_eval's names written ``name_cutoff`` or ``name.cutoff`` (``P_5``, ``ndcg_cut.10``).
_TREC_NAMES = ("p", "recall", "ndcg_cut", "map_cut", "success")
_TREC_CUT = re.compile(rf"^({'|'.join(_TREC_NAMES)})[._](\d+)$")
#: Any name with a cutoff at its end, for suggestions: stem, separator, cutoff.
_ANY_CUT = re.compile(r"^(.*?)([@._])(\d+)$")
_BARE_CUT = re.compile(r"^(.*?[a-z])()(\d+)$")
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


def _suggestion(item: str) -> str | None:
    """The known name closest to ``item`` in meaning, written with ``item``'s cutoff.

    The cutoff is set apart first, so that a name is compared with names, not with
    their digits (``mapp@100`` with ``map``, never with ``R@100``); a word people use
    for a measure (``average_precision``, ``hits``) leads to it before any spelling
    does; the closest spelling among raglabel's and other tools' names comes last.
    """
    import difflib  # only a misspelt name needs it

    lowered = item.strip().lower()
    # A cutoff written with no separator (ndcg_cut10, P10) is a cutoff too.
    match = _ANY_CUT.match(lowered) or _BARE_CUT.match(lowered)
    stem, sep, cut = (
        (match.group(1), match.group(2), match.group(3)) if match else (lowered, "", "")
    )
    stem = stem.strip().replace("-", "_").replace(" ", "_")
    if stem in SYNONYMS:
        base = SYNONYMS[stem]
        return base if not cut or base in UNCUT_ONLY else f"{base}@{cut}"
    words = [*KNOWN_METRICS, *PLAIN, *CUT, *SYNONYMS]
    if not cut:
        words += list(GROUPS)
    exact = [stem] if stem in words else []
    close = exact or difflib.get_close_matches(
        stem, [w for w in words if len(w) > 1], n=1, cutoff=0.6
    )
    if not close:
        return None
    word: str = close[0]
    if word in SYNONYMS:
        word = SYNONYMS[word]
        sep = "@" if sep else ""
    if not cut or word in UNCUT_ONLY or word in GROUPS:
        return word
    if word == "p":
        word = "P"  # trec_eval writes its precision so (names are read in any case)
    if not sep:
        sep = "_" if word.lower() in _TREC_NAMES else "@"
    elif sep != "@" and word.lower() not in _TREC_NAMES:
        sep = "@"  # only trec_eval's names take _5 or .5
    return f"{word}{sep}{cut}"


def _unknown(item: str) -> MetricNameError:
    close = _suggestion(item)
    hint = f"; did you mean {close!r}?" if close else ""
    return MetricNameError(
        f"unknown metric {item!r}{hint} Known: {', '.join(KNOWN_METRICS)}, the groups "
        f"{', '.join(GROUPS)}, and trec_eval, ir_measures or ranx names (P_5, nDCG@10, map, "
        "map@100, hit_rate@10, ...)"
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


def spelling(item: str) -> tuple[str, str | None, str | None]:
    """``(base, cutoff text or None, alias)`` of one metric name: the base is a group name
    or a metric of :data:`KNOWN_METRICS`; ``alias`` is the other tool's name it was read
    through (lower case, without the cutoff), None for raglabel's own names."""
    lowered = item.lower()
    base, at, cut = lowered.partition("@")
    if at:
        if base in GROUPS or base in KNOWN_METRICS:
            return base, cut, None
        if base in CUT:
            return CUT[base][0], cut, base
        raise _unknown(item)
    if base in GROUPS or base in KNOWN_METRICS:
        return base, None, None
    if base in PLAIN:
        return PLAIN[base][0], None, base
    if base in FAMILIES:
        return CUT[base][0], None, base
    match = _TREC_CUT.match(base)
    if match:
        name = match.group(1)
        return CUT.get(name, (name, ""))[0], match.group(2), name
    raise _unknown(item)


def canonical(item: str) -> tuple[str, str | None]:
    """``(base, cutoff text or None)`` of one metric name, aliases resolved."""
    base, cut, _ = spelling(item)
    return base, cut


def parse_metric_list(text: str | None, ks: list[int]) -> list[MetricKey]:
    """Expand ``"set,ndcg@10,mrr"`` into metric keys, keeping the user's order.

    ``name@k``, with the letter k, is computed at every cutoff of ``ks``, and so is a
    name alone, except ``mrr``, ``ap``, ``ndcg`` and ``ndcg_exp``, which alone are the
    uncut measures (as trec_eval's ``recip_rank``, ``map`` and ``ndcg``), and ``rprec``
    and ``bpref``, which take no cutoff. A group name expands to its members (nDCG at
    ``ks``). Other tools' names (``P_5``, ``ndcg_cut.10``, ``map``, ``nDCG@10``, ``RR``,
    ``map@100``, ``hit_rate@10``) are aliases of raglabel's; trec_eval's families named
    without a cutoff (``P``, ``success``, ``ndcg_cut``) are computed at ``ks``.
    ``None`` means all metrics, plus the uncut MRR.
    """
    items = [part.strip() for part in (text or "all").split(",") if part.strip()]
    if not items:
        raise MetricNameError("the metric list is empty")
    keys: list[MetricKey] = []
    for item in items:
        base, cut, alias = spelling(item)
        if base in GROUPS:
            if cut is not None:
                raise MetricNameError(f"a group takes no cutoff: {item!r}")
            for member in GROUPS[base]:
                if member not in UNCUT_ONLY:
                    keys.extend(MetricKey(member, k) for k in ks)
                if member in UNCUT:
                    keys.append(MetricKey(member, None))
            continue
        if cut is not None and base in UNCUT_ONLY:
            raise MetricNameError(f"{base} takes no cutoff: {item!r}")
        if cut == "k":  # ndcg@k: at every cutoff of ks, whatever the name alone means
            keys.extend(MetricKey(base, k) for k in ks)
        elif cut is not None:
            keys.append(MetricKey(base, cutoff_value(cut, item)))
        elif base in BARE_IS_UNCUT and alias not in FAMILIES:
            keys.append(MetricKey(base, None))
        else:
            keys.extend(MetricKey(base, k) for k in ks)
    unique: dict[MetricKey, None] = dict.fromkeys(keys)
    return list(unique)


def lower_is_better(metric: str) -> bool:
    """Whether the better run has the lower value of ``metric``, named as reports print
    it (``harm@5``)."""
    return metric.split("@", 1)[0] in LOWER_IS_BETTER
