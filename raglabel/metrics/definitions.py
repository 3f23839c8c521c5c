"""One line per metric saying what it measures under the conventions in force.

Reports print these beside their figures (``Harm@5: share of the top 5 graded 2 or
lower``), so that a reader never has to guess a threshold; the grading app can show the
same text for a :class:`MetricKey`. The names and sentences are the records of
:mod:`raglabel.metrics.table`; this module fills in the cutoff and the thresholds.
"""

from __future__ import annotations

from raglabel.metrics.config import MetricConfig
from raglabel.metrics.names import MetricKey
from raglabel.metrics.table import metric


def _top(k: int | None) -> str:
    return "the whole ranking" if k is None else f"the top {k}"


def definition(key: MetricKey, config: MetricConfig | None = None) -> str:
    """What ``key`` measures with ``config``'s thresholds, as ``name: text``."""
    cfg = config or MetricConfig()
    rel = cfg.relevance_threshold
    text = metric(key.base).definition.format(
        top=_top(key.k),
        k="K" if key.k is None else str(key.k),
        relevant=f"graded {rel} or higher" if rel < 5 else "graded 5",
        harm=cfg.harm_threshold,
        ctx=cfg.ctx_threshold,
    )
    return f"{display_name(key)}: {text}"


def display_name(key: MetricKey) -> str:
    """The name people write the metric under (``Harm@5``, ``nDCG@10``, ``MRR``)."""
    name = metric(key.base).display
    return name if key.k is None else f"{name}@{key.k}"


def definitions(keys: list[MetricKey], config: MetricConfig | None = None) -> list[str]:
    """One definition per base metric of ``keys`` (the first cutoff asked for stands for
    the others), in the order asked."""
    seen: dict[tuple[str, bool], MetricKey] = {}
    for key in keys:
        seen.setdefault((key.base, key.k is None), key)
    return [definition(key, config) for key in seen.values()]
