"""The document of ``raglabel progress``: who graded how much of what they were
assigned, how fast, and how far they agree, as a pydantic model and its JSON Schema's
source (``schemas/progress.schema.json``).

:mod:`raglabel.analysis.progress` makes it (its docstring defines every figure); ``--format
json`` prints it field for field, and the app's Progress screen shows it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

_DESCRIBED = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class AnnotatorProgress(BaseModel):
    """One annotator's share, pace and agreement with each other annotator."""

    model_config = _DESCRIBED

    assigned: int
    """Queries assigned to them (``raglabel assign``)."""
    done: int
    """Of those, the queries they graded every pooled pair of, to the depth asked."""
    grades: int
    """Their standing grades: one a pair they graded whose latest grade stands, whether
    made in the app, imported or an adjudication; the grades ``eval`` reads of them."""
    grades_per_hour: float | None
    """Grades given at the keys in their active spans per active hour; null without any
    active time."""
    median_active_s: float | None
    """The median gap in seconds between two grades they gave at the keys in a row,
    breaks left out; null with fewer than two such grades or no gap short of a break."""
    alpha_with: dict[str, float | None]
    """Each other annotator -> Krippendorff's alpha (ordinal) of the two on the pairs
    both graded; null when they share fewer than 2 pairs or alpha is undefined there."""


class QueryProgress(BaseModel):
    """One assigned query: how many of its annotators finished it."""

    model_config = _DESCRIBED

    assigned: int
    """Annotators it is assigned to."""
    done: int
    """Of those, the annotators who graded every pooled pair of it."""


class ProgressReport(BaseModel):
    """The team's progress, read from one consistent state of the project file."""

    model_config = _DESCRIBED

    annotators: dict[str, AnnotatorProgress]
    """Everyone assigned a query or holding a grade, by name."""
    queries: dict[str, QueryProgress]
    """Each query assigned to someone, by query id, in query id order."""
    to_adjudicate: int
    """Pairs whose annotators' grades differ by more than one that the lead has not
    settled yet."""
