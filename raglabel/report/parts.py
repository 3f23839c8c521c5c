"""The pieces a report is made of: sections of prose, charts and tables, and the few
ways every section writes a name or an interval, shared by :mod:`.document` and the
sections built in their own modules (:mod:`.judge_corrected`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from raglabel.metrics.names import lower_is_better
from raglabel.report.summary import bounds
from raglabel.report.svg import Svg


@dataclass
class Chart:
    name: str  # a file name stem, for Markdown's separate files
    caption: str  # shown above the chart
    svg: Svg


@dataclass
class Table:
    head: list[str]
    rows: list[list[str]]


@dataclass
class Section:
    title: str
    paragraphs: list[str] = field(default_factory=list)
    charts: list[Chart] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "chart"


def bracket(ci: tuple[float, float] | None) -> str:
    if ci is None:
        return ""
    low, high = bounds(ci)
    return f"[{low}, {high}]"


def named(metric: str) -> str:
    """A chart's name for ``metric``, saying which way is better where it is not up."""
    return f"{metric} (lower is better)" if lower_is_better(metric) else metric
