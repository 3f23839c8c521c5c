"""The parts of ``raglabel eval``'s report that only some evaluations fill: each query's
ctx_rank details (with --per-query) and the answer systems' sections (with --answers).

Apart from :mod:`raglabel.formats.report`, which names them lazily, so that the plain
evaluation (most of them) does not build these dataclasses when it starts; they are
part of the same JSON format, and of its schema, all the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from raglabel.metrics.answer_summaries import CorrectedMean, GradeSummary

__all__ = ["CorrectedMean", "CriterionAnswers", "CtxRankDetail", "GradeSummary", "SampleGrades"]

# As the report's own types (the report module imports this one, not the other way):
# unknown keys are an error, and attribute docstrings describe fields.
_SCHEMA_CONFIG: dict[str, object] = {"extra": "forbid", "use_attribute_docstrings": True}


@dataclass
class CtxRankDetail:
    """How one query's returned passages were ordered, against their ideal order."""

    __pydantic_config__: ClassVar[dict[str, object]] = _SCHEMA_CONFIG

    k: int
    actual_ranks: list[int]
    ideal_ranks: list[int]
    grades: list[int | None]
    passed: bool | None


@dataclass
class SampleGrades:
    """One answer sample's value of a criterion (with --per-query); for ctx_rank_prec
    also the ranks behind the judge's score."""

    __pydantic_config__: ClassVar[dict[str, object]] = _SCHEMA_CONFIG

    query: str
    """The sample's query id."""
    human: float | None
    """Resolved human grade (lower median over annotators), or the score on people's
    passage grades for ctx_rank_prec; null when none (see ``human_na``)."""
    judge: float | None
    """Lower median over the judge's models and repeats, or its ctx_rank_prec score."""
    human_na: str | None
    """Why there is no human value when the criterion cannot apply; null otherwise."""
    judge_na: str | None
    """Why there is no judge value when it cannot apply or the judge failed."""
    actual_ranks: list[int] | None = None
    """ctx_rank_prec: 0-based rank of each chunk (by file position) in the evaluated order."""
    ideal_ranks: list[int] | None = None
    """ctx_rank_prec: 0-based rank of each chunk (by file position) in the ideal order."""
    non_relevant_chunks_reasons: list[dict[str, int | str]] | None = None
    """ctx_rank_prec: each chunk the judge graded below 5, its 1-based position and why."""


@dataclass
class CriterionAnswers:
    """One criterion of one answer system: human grades, judge grades, corrected mean."""

    __pydantic_config__: ClassVar[dict[str, object]] = _SCHEMA_CONFIG

    human: GradeSummary
    """People's grades, several annotators resolved by the lower median."""
    judge: GradeSummary
    """Per sample the lower median over the judge's models and repeats."""
    corrected: CorrectedMean | None
    """The judge-corrected mean; null below 30 samples with both grades."""
    per_sample: dict[str, SampleGrades] | None = None
    """Each sample's values, by sample id (with --per-query)."""

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "human": vars(self.human),
            "judge": vars(self.judge),
            "corrected": None if self.corrected is None else vars(self.corrected),
        }
        if self.per_sample is not None:
            out["per_sample"] = {sample: vars(g) for sample, g in self.per_sample.items()}
        return out
