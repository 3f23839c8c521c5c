"""The report of ``raglabel agree --probe``: plain dataclasses, and its JSON Schema's source.

:mod:`raglabel.session.probing` runs the probe and :mod:`raglabel.analysis.probe` makes
its figures; ``--format json`` writes ``{"probe": ...}`` field for field
(``dataclasses.asdict``). The probe's answers are never stored: it grades altered
passages, which no figure of ``agree`` or ``--fill-with-judge`` may see.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

_DESCRIBED: dict[str, object] = {"extra": "forbid", "use_attribute_docstrings": True}


@dataclass(frozen=True)
class ProbeFailure:
    """Answers of one arm that failed, of one kind."""

    __pydantic_config__: ClassVar[dict[str, object]] = _DESCRIBED

    arm: str
    """``control`` (the passage as it is) or ``perturbed`` (as the probe altered it)."""
    kind: str
    """The failure's kind, as ``raglabel judge`` counts them (``not JSON``, ``HTTP 500``...)."""
    count: int
    example: str
    """The first such failure: the model's reply for a reply kind, else the reason."""


@dataclass(frozen=True)
class ProbeAnswer:
    """One drawn pair's grades: the person's, and the model's as it is and altered."""

    __pydantic_config__: ClassVar[dict[str, object]] = _DESCRIBED

    query_id: str
    passage_id: str
    human: int
    """The resolved human grade, as ``eval`` uses it."""
    control: int | None
    """The model's grade of the passage as it is; null when that answer failed or was
    never asked (a run stopped early)."""
    perturbed: int | None
    """The model's grade of the passage as the probe altered it; null likewise."""


@dataclass(frozen=True)
class ModelProbe:
    """One model's grades of the drawn pairs, as they are and altered."""

    __pydantic_config__: ClassVar[dict[str, object]] = _DESCRIBED

    model: str
    asked: int
    """Pairs asked about (each twice: control and perturbed)."""
    compared: int
    """Pairs with both answers graded: every figure below is over these."""
    queries: int
    """Queries the compared pairs belong to: the bootstrap's unit."""
    rose: int
    """Compared pairs graded higher perturbed than in the control."""
    stayed: int
    fell: int
    control_at_top: int
    """Compared pairs whose control grade was already 5, which cannot rise."""
    mean_change: float | None
    """Mean over compared pairs of the perturbed grade minus the control's (1-5 scale)."""
    ci: tuple[float, float] | None
    """95% percentile bootstrap interval of ``mean_change`` over queries; null with
    fewer than 2 queries."""
    above_human_control: float | None
    """Share of compared pairs whose control grade exceeds the person's grade."""
    above_human_perturbed: float | None
    """Share of compared pairs whose perturbed grade exceeds the person's grade."""
    failures: list[ProbeFailure]
    unanswered: int
    """Answers asked for that never came back graded nor failed: the run stopped (an
    endpoint that cannot be reached, a limit) or was interrupted first. With
    ``failures``, they make up every answer of ``asked`` pairs not in ``compared``."""
    answers: list[ProbeAnswer]
    """Every drawn pair's grades, in the order of query and passage ids."""


@dataclass(frozen=True)
class ProbeDraw:
    """Which graded pairs were asked about, and how they were drawn."""

    __pydantic_config__: ClassVar[dict[str, object]] = _DESCRIBED

    pairs: int
    """Pairs drawn: ``--limit``, or every eligible pair when there are fewer."""
    eligible: int
    """Pairs with a resolved human grade and text, whose grade took no suggestion."""
    accepted_left_out: int
    """Human-graded pairs left out because a grade accepted a judge suggestion."""
    without_text: int
    """Human-graded pairs left out because their query or passage has no text."""
    how: str
    """The draw in words: uniform without replacement, the seed."""


@dataclass(frozen=True)
class ProbeFill:
    """The ``length`` probe's filler: how much unrelated text each passage got."""

    __pydantic_config__: ClassVar[dict[str, object]] = _DESCRIBED

    mean_ratio: float | None
    """Mean over drawn pairs of the filler's characters over the passage's."""
    short: int
    """Drawn pairs whose filler is under 90% of the passage's length: the donors ran out."""


@dataclass(frozen=True)
class ProbeReport:
    """How a judge's grade moves when a graded passage is altered in a way that should
    not raise it: each drawn pair asked twice, fresh, with the same prompt and
    parameters, once as it is (control) and once altered (perturbed)."""

    __pydantic_config__: ClassVar[dict[str, object]] = _DESCRIBED

    probe: str
    """``length`` or ``stuffing``."""
    alteration: str
    """What the probe does to a passage, in words."""
    seed: int
    resamples: int
    interval: str
    """How the intervals are made."""
    drawn: ProbeDraw
    fill: ProbeFill | None
    """For ``length`` only."""
    models: list[ModelProbe]
    status: str
    """``done``, ``stopped`` (the endpoint or the answers stopped the run early) or
    ``interrupted``."""
    stopped: str | None
    """Why the run stopped early, when it did."""
    stored: bool
    """Always false: the answers of a probe are not stored as suggestions."""
    note: str


@dataclass(frozen=True)
class ProbeDocument:
    """What ``raglabel agree --probe ... --format json`` prints."""

    __pydantic_config__: ClassVar[dict[str, object]] = _DESCRIBED

    probe: ProbeReport
