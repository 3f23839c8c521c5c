"""What a report is drawn from: the eval document and what it does not hold itself."""

from __future__ import annotations

from dataclasses import dataclass

from raglabel.formats.agreement_report import AgreementReport
from raglabel.formats.report import Comparison, CorrectedComparison, Report

#: Grades 1-5, in the order prevalence lists them.
GRADES = (1, 2, 3, 4, 5)
#: The significance level the words of the summary use.
LEVEL = 0.05


@dataclass(frozen=True)
class ReportInput:
    """Everything one report shows; the report itself computes nothing.

    ``data`` is the ``eval`` document with intervals, comparisons against ``baseline``
    and per-query values. ``grade_counts`` holds, per labelled query, how many passages
    have each grade 1-5 (the prevalence behind the rarity weights). ``agreement`` is
    ``agree``'s figures when the labels come from a project.
    """

    data: Report
    grade_counts: dict[str, tuple[int, int, int, int, int]]
    title: str
    baseline: str
    headline: str
    source: str
    agreement: AgreementReport | None = None
    corrected: Report | None = None
    """``eval --estimate corrected``'s document for the same metrics and comparisons,
    when the project has an audit draw and what else the estimate needs."""
    corrected_missing: str | None = None
    """When the project has a draw but the estimate was refused: why, and what to run."""

    @property
    def runs(self) -> list[str]:
        return list(self.data.runs)

    @property
    def metrics(self) -> list[str]:
        first = next(iter(self.data.runs.values()), None)
        return [] if first is None else list(first.mean)

    def comparison(self, run: str, metric: str) -> Comparison | None:
        for item in self.data.compare or ():
            if item.baseline == self.baseline and item.run == run and item.metric == metric:
                return item
        return None

    def corrected_comparison(self, run: str, metric: str) -> CorrectedComparison | None:
        for item in (self.corrected.compare or ()) if self.corrected else ():
            if (
                isinstance(item, CorrectedComparison)
                and item.baseline == self.baseline
                and item.run == run
                and item.metric == metric
            ):
                return item
        return None

    def family_size(self, family: str) -> int:
        """How many tests the p-values of ``family`` were adjusted over (a test with no
        paired query has no p-value and is not one of them)."""
        return sum(
            1 for c in self.data.compare or () if c.family == family and c.p_value is not None
        )

    @property
    def adjust(self) -> str:
        return str(self.data.config.get("adjust", "holm"))

    @property
    def confidence(self) -> float:
        value = self.data.config.get("confidence", 0.95)
        return float(value) if isinstance(value, int | float) else 0.95
