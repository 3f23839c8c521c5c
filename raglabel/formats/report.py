"""The JSON report of ``raglabel eval``: its pydantic models are the schema's source."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class LabelsInfo(BaseModel):
    """The label set a report was computed on."""

    model_config = ConfigDict(extra="forbid")

    queries: int = Field(description="Queries in the label set.")
    graded: int = Field(description="Graded (query, passage) pairs.")
    fingerprint: str = Field(
        description="Identifies the exact label set; changes when any grade changes."
    )
    source: str = Field("human", description="Which grades the metrics used.")
    grade_inversions: list[str] = Field(
        default_factory=list,
        description="Queries whose rarity weights rank a lower grade above a higher one.",
    )


class CtxRankDetail(BaseModel):
    """How one query's returned passages were ordered, against their ideal order."""

    model_config = ConfigDict(extra="forbid")

    k: int
    actual_ranks: list[int]
    ideal_ranks: list[int]
    grades: list[int | None]
    passed: bool | None


class RunReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mean: dict[str, float | None] = Field(description="Macro-average over queries; null is NA.")
    valid: dict[str, int] = Field(description="Queries that entered each mean.")
    ci: dict[str, tuple[float, float] | None] | None = Field(
        None, description="Percentile bootstrap interval of each mean (with --ci)."
    )
    per_query: dict[str, dict[str, float | None]] | None = Field(
        None, description="Each query's values (with --per-query)."
    )
    ctx_rank: dict[str, dict[str, CtxRankDetail]] | None = Field(
        None, description="Per cutoff and query: actual vs ideal ranks (with --per-query)."
    )


class Comparison(BaseModel):
    """Paired randomization test of ``run`` minus ``baseline`` on one metric."""

    model_config = ConfigDict(extra="forbid")

    baseline: str
    run: str
    metric: str
    mean_difference: float | None
    ci: tuple[float, float] | None
    p_value: float | None
    wins: int
    ties: int
    losses: int
    queries: int


class Report(BaseModel):
    """Everything ``raglabel eval --format json`` prints."""

    model_config = ConfigDict(extra="forbid")

    labels: LabelsInfo
    config: dict[str, object] = Field(description="Every convention in force.")
    runs: dict[str, RunReport]
    compare: list[Comparison] | None = None
    warnings: list[str] = Field(default_factory=list)
