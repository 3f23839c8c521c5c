"""How numbers and grades read on screen, the same in every widget."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

#: The rubric's short names, by grade.
GRADE_NAMES = {5: "decisive", 4: "highly relevant", 3: "partial", 2: "weak", 1: "junk/harmful"}
#: One style per grade, so a column of grades reads at a glance.
GRADE_STYLES = {5: "bold green", 4: "green", 3: "yellow", 2: "dark_orange", 1: "red"}


def number(value: float | None, digits: int = 3) -> str:
    if value is None or math.isnan(value):
        return "NA"
    return f"{value:.{digits}f}"


def interval_bounds(low: float, high: float, digits: int) -> tuple[str, str]:
    """An interval's bounds with fewer decimals than its mean, rounded outwards so they
    still hold the mean printed beside them (float noise such as 1.0000000000000002 is
    not widened into another step)."""
    scale = 10**digits
    down = math.floor(round(low * scale, 7)) / scale
    up = math.ceil(round(high * scale, 7)) / scale
    return f"{down:.{digits}f}", f"{up:.{digits}f}"


def cut(text: str, width: int) -> str:
    """``text`` in ``width`` characters, ending with an ellipsis where it was cut, so a
    cut title never reads as a whole one."""
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


#: Decimals of a run's interval on the Runs screen, in its chart and its table alike:
#: two, so nine metrics with intervals fit 140 columns.
RUN_CI_DIGITS = 2


def run_interval(ci: tuple[float, float], *, compact: bool = False) -> str:
    """A run's interval as the Runs screen shows it, rounded outwards to
    :data:`RUN_CI_DIGITS` so it holds the 3-decimal mean beside it: ``[0.62, 0.86]``
    in the chart, ``.62-.86`` in the table (``compact``), the same bounds."""
    low, high = interval_bounds(*ci, RUN_CI_DIGITS)
    if compact:
        return f"{low.removeprefix('0')}-{high.removeprefix('0')}"
    return f"[{low}, {high}]"


def short_run(name: str, width: int = 6) -> str:
    return cut(name, width)


def short_runs(names: Sequence[str], widths: Sequence[int]) -> list[str]:
    """Each run name cut to its column's width; names that would be cut alike (``dense``
    and ``dense_rerank`` both ``den…``) keep their ends as well (``d…se``, ``d…nk``)."""
    cut = [
        short_run(name, width) if width > 0 else ""
        for name, width in zip(names, widths, strict=True)
    ]
    alike = Counter(cut)
    for i, (name, width) in enumerate(zip(names, widths, strict=True)):
        if alike[cut[i]] > 1 and len(name) > width >= 3:
            head = (width - 1) // 2
            cut[i] = name[:head] + "…" + name[len(name) - (width - 1 - head) :]
    # Still alike (names that differ only in the middle): numbered, in order.
    alike = Counter(cut)
    seen: Counter[str] = Counter()
    for i, (label, width) in enumerate(zip(list(cut), widths, strict=True)):
        if alike[label] > 1 and width >= 3:
            seen[label] += 1
            suffix = str(seen[label])
            cut[i] = names[i][: max(width - 1 - len(suffix), 0)] + "…" + suffix
    return cut


# Control characters (a newline or a tab in a title, an escape) would reach the terminal
# as they are from a widget that draws its own lines, since those skip Rich's line
# splitting: each shows as a space.
_CONTROLS = {code: " " for code in [*range(0x20), *range(0x7F, 0xA0)]}


def one_line(value: str) -> str:
    """``value`` with every control character shown as a space."""
    return value.translate(_CONTROLS)
