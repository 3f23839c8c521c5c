"""How numbers and grades read on screen, the same in every widget."""

from __future__ import annotations

import math

#: The rubric's short names, by grade.
GRADE_NAMES = {5: "decisive", 4: "highly relevant", 3: "partial", 2: "weak", 1: "junk/harmful"}
#: One style per grade, so a column of grades reads at a glance.
GRADE_STYLES = {5: "bold green", 4: "green", 3: "yellow", 2: "dark_orange", 1: "red"}


def number(value: float | None, digits: int = 3) -> str:
    if value is None or math.isnan(value):
        return "NA"
    return f"{value:.{digits}f}"


def short_run(name: str, width: int = 6) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"
