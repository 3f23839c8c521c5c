"""The report of ``raglabel agree``: plain dataclasses, and its JSON Schema's source.

:mod:`raglabel.analysis.agreement` computes it; ``raglabel agree --format json`` writes
it field for field (``dataclasses.asdict``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from raglabel.metrics.answer_stats import AlphaInterval

# A field's docstring becomes its description in the JSON Schema.
_DESCRIBED: dict[str, object] = {"use_attribute_docstrings": True}


#: The rater name of the resolved human grade (what metrics use) in every figure.
HUMANS = "humans"


@dataclass(frozen=True)
class PairIntervals:
    """95% percentile bootstrap intervals over queries of a pair's figures; None where
    the figure is undefined, the pairs span fewer than 2 queries, or no resample
    defined it."""

    kappa: tuple[float, float] | None
    kappa_unweighted: tuple[float, float] | None
    kappa_binary: tuple[float, float] | None
    alpha: tuple[float, float] | None


@dataclass(frozen=True)
class PairAgreement:
    """Two raters over the pairs both graded; ``bias`` is mean(a - b)."""

    __pydantic_config__: ClassVar[dict[str, object]] = _DESCRIBED

    a: str
    b: str
    n: int
    kappa: float | None  # Cohen's kappa, quadratic weights, on the 1-5 grades
    alpha: float | None  # Krippendorff's alpha, ordinal
    bias: float | None
    exact: float | None
    within_one: float | None
    kappa_unweighted: float | None  # Cohen's kappa, no weights, on the 1-5 grades
    kappa_binary: float | None  # Cohen's kappa of grade >= the relevance threshold
    queries: int  # queries the pairs span: the bootstrap's unit
    confusion: list[list[int]] | None
    """Rows are rater ``a``'s grades, columns rater ``b``'s: ``confusion[i][j]`` counts
    the pairs ``a`` graded ``i + 1`` and ``b`` graded ``j + 1``. In an entry against
    ``"humans"`` (``b``) the rows are the model's (or the ensemble's) grades; the entry
    whose ``a`` is the report's ``judge`` is the transpose of the report's top-level
    ``confusion``, which puts the humans' grades in rows. Null when the two raters
    share no pair."""
    ci: PairIntervals
    # Per figure with an interval: resamples where it was undefined, left out of it.
    ci_undefined: dict[str, int]


@dataclass(frozen=True)
class QueryAgreement:
    """The judge against the humans on the pairs of one query that both graded."""

    qid: str
    pairs: int
    mean_gap: float  # mean |judge - humans|
    bias: float  # mean judge - humans


@dataclass(frozen=True)
class RunOrderAgreement:
    """One metric: each run's mean on human and on judge grades, and the two orders'
    tau over all runs and over the best runs on human grades, with their intervals."""

    metric: str
    queries: int
    human: dict[str, float | None]
    judge: dict[str, float | None]
    tau: float | None  # Kendall tau-b between the two orders of the runs
    tau_ci: tuple[float, float] | None  # 95% percentile bootstrap over queries
    top_runs: int  # N: the runs best on human grades that tau_top orders
    tau_top: float | None  # tau-b over those N runs; None when N < 3
    tau_top_ci: tuple[float, float] | None  # the N best chosen afresh in each resample
    # Per figure with an interval ("tau", "tau_top"): resamples where it was undefined.
    ci_undefined: dict[str, int]


@dataclass(frozen=True)
class AnswerGap:
    """One answer sample where the judge and the resolved human grade differ."""

    system: str
    sample_id: str
    query: str
    human: int
    judge: int
    gap: int  # judge - human


@dataclass
class CriterionAgreement:
    """Agreement on one answer criterion; each alpha is ordinal, with a percentile
    bootstrap interval over items and the number of items that entered it."""

    __pydantic_config__: ClassVar[dict[str, object]] = _DESCRIBED

    judge_vs_human: AlphaInterval  # the judge's lower median vs the resolved human grade
    humans: AlphaInterval  # among annotators: the ceiling
    repeats: AlphaInterval  # each model against its own repeats, items (sample, model)
    models: AlphaInterval  # among models, each model's lower median over its repeats
    exact: float | None  # share of items where judge and humans give the same grade
    within_one: float | None  # share where they differ by at most one
    bias: float | None  # mean judge - humans
    confusion: list[list[int]] | None
    """Rows are the humans' grades, columns the judge's: ``confusion[i][j]`` counts the
    items humans graded ``i + 1`` and the judge ``j + 1``; null without such items."""
    gaps: list[AnswerGap] = field(default_factory=list)  # largest |judge - humans| first


@dataclass
class AgreementReport:
    """Everything ``raglabel agree --format json`` prints."""

    __pydantic_config__: ClassVar[dict[str, object]] = _DESCRIBED

    annotators: list[str]
    models: list[str]
    judge: str | None  # the rater standing for the judge: the model, or the ensemble
    human_pairs: int
    judged_pairs: int
    shared_pairs: int
    alpha_annotators: float | None
    alpha_with_judge: float | None
    pairs: list[PairAgreement]
    confusion: list[list[int]] | None
    """Rows are the resolved human grades, columns the grades of the ``judge`` rater:
    ``confusion[i][j]`` counts the pairs humans graded ``i + 1`` and the judge ``j + 1``
    (grades that accepted a suggestion left out). It is the transpose of the ``pairs``
    entry whose ``a`` is ``judge`` and ``b`` is ``"humans"``, whose rows are the
    judge's. Null when no pair has both."""
    accepted: int  # human grades that took the suggestion as it was
    offered: int
    """Human grades given in the app while the judge's suggestion for the pair was there
    to take, and any grade that accepted one: imported suggestions, and those made
    after the grade, were never seen and do not count."""
    accepted_share: float | None
    queries: list[QueryAgreement]
    accepted_left_out: int  # judged pairs left out of judge-vs-human figures: accepted
    relevance_threshold: int  # kappa_binary's relevant: grade >= this
    resamples: int  # bootstrap resamples of every interval
    seed: int  # the bootstrap's seed
    runs: list[RunOrderAgreement] = field(default_factory=list)
    answers: dict[str, CriterionAgreement] | None = None  # per criterion, with --answers
