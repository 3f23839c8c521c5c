"""What the qrels readers need of a grade map, and the default map without pydantic.

``raglabel.formats.maps.GradeMap`` (a pydantic model, for maps given on the command
line) has the same three methods; the readers accept either. The default TREC map is
used on every plain ``raglabel eval``, which should not pay for importing pydantic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from numpy.typing import NDArray


class GradeLookup(Protocol):
    """Imported integer label -> grade 1..5 (None: the map does not cover it)."""

    def describe(self) -> str: ...

    def grade_of(self, label: int) -> int | None: ...

    def apply(self, labels: NDArray[np.int64]) -> tuple[NDArray[np.int8], NDArray[np.bool_]]: ...


@dataclass(frozen=True)
class TrecGrades:
    """The default map (TREC 0..3 onto grades 2..5, any negative label 1) as a plain
    object: building the pydantic GradeMap would import pydantic on every eval."""

    mapping: dict[int, int] = field(default_factory=lambda: {0: 2, 1: 3, 2: 4, 3: 5})
    negative: int = 1

    def describe(self) -> str:
        return describe_map(self.mapping, self.negative)

    def grade_of(self, label: int) -> int | None:
        return grade_of_label(self.mapping, self.negative, label)

    def apply(self, labels: NDArray[np.int64]) -> tuple[NDArray[np.int8], NDArray[np.bool_]]:
        return grades_of_labels(self.mapping, self.negative, labels)


def describe_map(mapping: dict[int, int], negative: int | None) -> str:
    text = ",".join(f"{k}:{v}" for k, v in sorted(mapping.items()))
    return text if negative is None else text + f",<0:{negative}"


def grade_of_label(mapping: dict[int, int], negative: int | None, label: int) -> int | None:
    """Grade of one label (a negative label not in ``mapping`` is ``negative``); None when
    nothing covers it."""
    grade = mapping.get(label)
    if grade is None and label < 0:
        return negative
    return grade


def grades_of_labels(
    mapping: dict[int, int], negative: int | None, labels: NDArray[np.int64]
) -> tuple[NDArray[np.int8], NDArray[np.bool_]]:
    """Grades for ``labels`` and a mask of the labels nothing covers."""
    grades = np.zeros(labels.shape, dtype=np.int8)
    covered = np.zeros(labels.shape, dtype=np.bool_)
    for label, grade in mapping.items():
        hit = labels == label
        grades[hit] = grade
        covered |= hit
    if negative is not None:
        rest = (labels < 0) & ~covered
        grades[rest] = negative
        covered |= rest
    return grades, ~covered


TREC_GRADES = TrecGrades()
