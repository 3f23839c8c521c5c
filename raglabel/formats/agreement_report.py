"""The report of ``raglabel agree``: plain dataclasses, and its JSON Schema's source.

:mod:`raglabel.analysis.agreement` computes it; ``raglabel agree --format json`` writes
it field for field (``dataclasses.asdict``).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class PairAgreement:
    """Two raters over the pairs both graded; ``bias`` is mean(a - b)."""

    a: str
    b: str
    n: int
    kappa: float | None
    alpha: float | None
    bias: float | None
    exact: float | None
    within_one: float | None


@dataclass(frozen=True)
class QueryAgreement:
    """The judge against the humans on the pairs of one query that both graded."""

    qid: str
    pairs: int
    mean_gap: float  # mean |judge - humans|
    bias: float  # mean judge - humans


@dataclass(frozen=True)
class RunOrderAgreement:
    """One metric: each run's mean on human and on judge grades, and the two orders' tau."""

    metric: str
    queries: int
    human: dict[str, float | None]
    judge: dict[str, float | None]
    tau: float | None  # Kendall tau-b between the two orders of the runs


@dataclass
class AgreementReport:
    """Everything ``raglabel agree --format json`` prints."""

    annotators: list[str]
    models: list[str]
    judge: str | None  # the rater standing for the judge: the model, or the ensemble
    human_pairs: int
    judged_pairs: int
    shared_pairs: int
    alpha_annotators: float | None
    alpha_with_judge: float | None
    pairs: list[PairAgreement]
    confusion: list[list[int]] | None  # rows: humans' grade 1..5, columns: the judge's
    accepted: int  # human grades that took the suggestion as it was
    offered: int  # human-graded pairs that had a suggestion
    accepted_share: float | None
    queries: list[QueryAgreement]
    accepted_left_out: int  # judged pairs left out of judge-vs-human figures: accepted
    runs: list[RunOrderAgreement] = field(default_factory=list)
