"""The document of ``raglabel assign --list --format json``: each annotator's share and
which of it they have done, as a pydantic model and its JSON Schema's source
(``schemas/assign-list.schema.json``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

_DESCRIBED = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class AnnotatorShare(BaseModel):
    """One annotator's assigned queries."""

    model_config = _DESCRIBED

    assigned: list[str]
    """Query ids assigned to them, in the order their queue serves them."""
    done: list[str]
    """Of those, in the same order, the queries they graded every pooled pair of: each
    passage some stored run ranks within its top ``--depth``, by a grade of their own
    that did not accept a judge's suggestion."""


class AssignList(BaseModel):
    """The stored assignment."""

    model_config = _DESCRIBED

    overlap: int | None
    """The overlap the last ``raglabel assign`` asked for (annotators per query); null when
    nothing was ever assigned."""
    annotators: dict[str, AnnotatorShare]
    """Every annotator with an assignment, by name, in name order."""
