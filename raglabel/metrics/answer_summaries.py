"""What the report says of one answer system's grades: a grader's summary and the
judge-corrected mean.

Apart from the statistics that compute them (:mod:`raglabel.metrics.answer_stats`),
because the report's types name them: an evaluation without answers then loads neither
those statistics nor the agreement measures they use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

__all__ = ["CorrectedMean", "GradeSummary"]

# Unknown keys are an error in the JSON Schema, and attribute docstrings describe fields.
_SCHEMA_CONFIG: dict[str, object] = {"extra": "forbid", "use_attribute_docstrings": True}


@dataclass
class GradeSummary:
    """One grader's (people's or the judge's) figures for one system and criterion."""

    __pydantic_config__: ClassVar[dict[str, object]] = _SCHEMA_CONFIG

    mean: float | None
    """Mean over the valid samples; null when none is valid."""
    pass_rate: float | None
    """Share of the valid samples at or above the pass threshold."""
    valid: int
    """Samples with a grade that entered the mean."""
    na: dict[str, int] = field(default_factory=dict)
    """Samples the criterion cannot apply to, by reason (inputs missing, judge failed)."""
    ci: tuple[float, float] | None = None
    """Percentile bootstrap interval of the mean over samples."""
    samples: int = 0
    """The system's samples; those neither valid nor NA were not graded (yet)."""


@dataclass
class CorrectedMean:
    """The judge's mean corrected by the human grades (prediction-powered inference)."""

    __pydantic_config__: ClassVar[dict[str, object]] = _SCHEMA_CONFIG

    mean: float
    """mean(judge over N) - mean(judge - human over n)."""
    ci: tuple[float, float]
    """mean +- z * sqrt(var(judge)/N + var(judge - human)/n), sample variances (ddof=1)."""
    n_human: int
    """Samples with both a human and a judge grade (n)."""
    n_judge: int
    """Samples with a judge grade (N)."""
