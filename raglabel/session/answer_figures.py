"""The Runs screen's answer figures: per answer system and criterion the people's and the
judge's mean with its interval, pass rate, valid and NA counts, and the judge-corrected
mean.

They are ``raglabel eval DB --answers``'s numbers for the same file, computed by the same
functions with the same options (the metric config's relevance threshold and gains, the
default pass thresholds, 1,000 resamples, seed 42): every annotator's standing grades
count, as they do there, whichever annotator the app grades as.

The analysis is imported where the figures are computed, in the worker thread: it brings
the grade log's models (pydantic), which the app keeps off its start and off the key
that opens the Runs screen.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from raglabel.formats.report import CriterionAnswers
from raglabel.metrics.answer_stats import MIN_HUMAN
from raglabel.metrics.criteria import CRITERIA, RANKING
from raglabel.session.grading import GradingSession
from raglabel.storage.answer_items import system_names
from raglabel.storage.project import Project

if TYPE_CHECKING:
    from raglabel.analysis.answers import AnswerInputs

#: The criteria in the screen's row order (the report's).
FIGURE_CRITERIA = (*CRITERIA, RANKING)
#: Samples with both grades the judge-corrected mean needs.
CORRECTED_MIN = MIN_HUMAN


@dataclass(frozen=True)
class AnswerFigure:
    """One row of the screen: a system's figures for one criterion, and the pass mark
    its pass rates were counted at (1-5, or 0-100 for ctx_rank_prec)."""

    system: str
    criterion: str
    threshold: float
    figures: CriterionAnswers


@dataclass(frozen=True)
class AnswerRequest:
    """What a worker thread needs to compute the figures off the keystroke path: the
    project file to read on a connection of its own, or (a project without a file) the
    inputs already read on the app's thread."""

    path: Path | None
    relevance_threshold: int
    gains: dict[int, float]
    inputs: AnswerInputs | None = None


def has_answer_systems(session: GradingSession) -> bool:
    return bool(system_names(session.project.conn))


def answer_request(session: GradingSession) -> AnswerRequest:
    config = session.options.config
    path = session.project.path
    inputs = None
    if path is None:
        from raglabel.analysis.answers import load_answers

        inputs = load_answers(session.project.conn, relevance_threshold=config.relevance_threshold)
    return AnswerRequest(path, config.relevance_threshold, dict(config.gain_map), inputs)


def answer_figures(request: AnswerRequest) -> list[AnswerFigure]:
    """Every system's rows, systems by name and criteria in report order. Safe in a
    worker thread: it reads the file on a read-only connection of its own, which sees
    every grade the app has committed."""
    from raglabel.analysis.answers import AnswerOptions, answers_section, load_answers

    inputs = request.inputs
    if inputs is None:
        assert request.path is not None
        with Project.reader(request.path) as reader:
            inputs = load_answers(reader.conn, relevance_threshold=request.relevance_threshold)
    options = AnswerOptions(gains=request.gains)
    section = answers_section(inputs, options)
    return [
        AnswerFigure(
            system, criterion, options.thresholds[criterion], section.answers[system][criterion]
        )
        for system in sorted(section.answers)
        for criterion in FIGURE_CRITERIA
    ]
