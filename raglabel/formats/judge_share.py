"""The judge share's words, one home for every place that shows it: the command line's
warning and table, the report page and its summary.

A run's judge share at K (``--fill-with-judge``): of the entries in its top K over all
queries that have a label, the share whose label is the judge's
(:mod:`raglabel.analysis.judge_share` counts them).
"""

from __future__ import annotations

#: Above this judge share at some K, a run's metrics lean on the judge: eval warns.
WARN_ABOVE = 0.2


def percent(share: float | None) -> str:
    """``share`` as a percentage to the nearest tenth (``30%``, ``33.3%``); NA for None."""
    if share is None:
        return "NA"
    return f"{round(share * 100, 1):g}%"


def leaning(shares: dict[str, float | None]) -> list[tuple[str, float]]:
    """The cutoffs (as the report keys them) whose share is above :data:`WARN_ABOVE`,
    with the share. A share is a quotient of counts far below 2**50, so a count of
    exactly a fifth is 0.2 itself, never just above it."""
    return [(k, share) for k, share in shares.items() if share is not None and share > WARN_ABOVE]


def _above(share: float) -> str:
    """A share above the mark, as a percentage; one a hair above it would round to it,
    so it is said as what it is: over it."""
    shown = percent(share)
    return f"over {percent(WARN_ABOVE)}" if shown == percent(WARN_ABOVE) else shown


def leaning_line(run: str, shares: dict[str, float | None]) -> str | None:
    """The warning for ``run`` when its share is above :data:`WARN_ABOVE` at some K."""
    high = [f"{_above(share)} of its top-{k}" for k, share in leaning(shares)]
    if not high:
        return None
    said = high[0] if len(high) == 1 else ", ".join(high[:-1]) + " and " + high[-1]
    return (
        f"run {run!r}: {said} labels are the judge's (--fill-with-judge);"
        " its metrics lean on the judge"
    )
