"""Every convention the metrics depend on, with the defaults of the metric spec.

Rarity weights depend on these numbers as much as on the labels, so a report always
prints the whole configuration beside its figures.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

GRADES = (1, 2, 3, 4, 5)

Grade = Annotated[int, Field(ge=1, le=5)]


def _default_gain_map() -> dict[int, float]:
    # The TREC 0-3 scale shifted onto 1-5 grades: with the default import map the
    # gains equal the original labels, so nDCG matches trec_eval's ndcg_cut.
    return {g: float(max(0, g - 2)) for g in GRADES}


class MetricConfig(BaseModel):
    """Conventions of the metric family; all have the spec's defaults."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    alpha: float = Field(1.0, ge=0.0, description="Rarity exponent: r_g = b_g / p_g^alpha.")
    cap4: float = Field(1.0, ge=0.0, description="Upper bound of the grade-4 weight.")
    cap3: float = Field(
        0.25, ge=0.0, description="Upper bound of the weights of grades 3 and below."
    )
    base_utilities: dict[int, float] = Field(
        default_factory=lambda: {5: 1.0, 4: 0.5, 3: 0.1, 2: 0.0, 1: 0.0},
        description=(
            "Base utility b_g of each grade. Grades 2 and 1 default to 0 (weight 0, as in "
            "the metric's definition); given a positive utility they are capped by cap3."
        ),
    )
    fallback_weights: dict[int, float] = Field(
        default_factory=lambda: {5: 1.0, 4: 1.0, 3: 0.2, 2: 0.0, 1: 0.0},
        description="Weights used for a query whose labeled slice has no grade 5.",
    )
    harm_threshold: Grade = Field(2, description="Harm@K counts grades at or below this.")
    relevance_threshold: Grade = Field(
        4, description="Binary relevance for classic metrics: grade at or above this."
    )
    gain_map: dict[int, float] = Field(
        default_factory=_default_gain_map, description="nDCG gain of each grade."
    )
    ctx_threshold: float = Field(
        80.0, ge=0.0, le=100.0, description="ctx_rank_prec pass mark (0-100)."
    )
    default_k: int = Field(5, ge=1, description="Cutoff when neither query nor caller sets one.")

    @field_validator("base_utilities", "fallback_weights", "gain_map")
    @classmethod
    def _every_grade_once(cls, value: dict[int, float]) -> dict[int, float]:
        missing = [g for g in GRADES if g not in value]
        extra = sorted(k for k in value if k not in GRADES)
        if missing or extra:
            raise ValueError(
                f"needs exactly the grades 1-5 as keys (missing {missing}, unknown {extra})"
            )
        if any(v < 0 for v in value.values()):
            raise ValueError("values must not be negative")
        return {g: float(value[g]) for g in GRADES}

    @model_validator(mode="after")
    def _grade5_has_utility(self) -> MetricConfig:
        if self.base_utilities[5] <= 0:
            raise ValueError("base_utilities[5] must be positive: weights are relative to it")
        return self
