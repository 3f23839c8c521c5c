"""Human answer grades as JSONL: one criterion of one system's sample, graded 1-5."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from raglabel.errors import InputError
from raglabel.formats.jsonl import Identifier, validated
from raglabel.metrics.criteria import Criterion

Span = tuple[Annotated[int, Field(ge=0)], Annotated[int, Field(ge=0)]]


class AnswerGrade(BaseModel):
    """One line: ``unsupported`` spans are character offsets into the answer, end
    exclusive; ``graded_at`` the time the grade was given (ISO 8601, as ``export
    --answer-grades`` writes it), kept by an import, so that a grade another copy of the
    project still holds is known for the very event it is."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    system: Identifier
    sample_id: Identifier
    criterion: Criterion
    grade: Annotated[int, Field(ge=1, le=5, strict=True)]
    annotator: Annotated[str, Field(min_length=1)]
    unsupported: list[Span] | None = None
    graded_at: str | None = None

    @model_validator(mode="after")
    def _fields(self) -> Self:
        if not self.annotator.strip():
            raise ValueError("annotator must not be empty")
        if self.graded_at is not None:
            try:
                stamp = datetime.fromisoformat(self.graded_at)
            except ValueError:
                raise ValueError(f"graded_at {self.graded_at!r} is not an ISO 8601 time") from None
            if stamp.tzinfo is None:
                raise ValueError(f"graded_at {self.graded_at!r} has no time zone")
        for start, end in self.unsupported or ():
            if start >= end:
                raise ValueError(f"unsupported span [{start}, {end}] is empty or reversed")
        return self


def read_answer_grades(path: Path) -> Iterator[tuple[int, AnswerGrade]]:
    """Every line validated; an empty file is an error."""
    count = 0
    for number, grade in validated(path, AnswerGrade):
        count += 1
        yield number, grade
    if not count:
        raise InputError(path, "has no answer grades (the file is empty)")
