"""``from:to`` maps given on the command line: grade maps and gain maps.

Plain classes, not pydantic models: every ``raglabel eval`` reads its qrels through
a grade map (the default TREC one at least), and importing pydantic costs more than
evaluating a small run.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from raglabel.formats.option_words import OPTION_WORDS
from raglabel.metrics.config import GRADES, trec_grades
from raglabel.metrics.record import FrozenRecord


# Written out, not a frozen dataclass, whose generated methods would be compiled at
# every eval's start-up; nothing compares, hashes or prints a grade map.
class GradeMap(FrozenRecord):
    """Imported integer label -> grade 1..5.

    The default is the TREC 0..3 scale (0->2, 1->3, 2->4, 3->5) with every negative
    label meaning junk or harm (grade 1). A map given by the user covers exactly the
    labels it names. ``negative`` is the grade of any negative label not in the mapping
    (None: an error).
    """

    __slots__ = ("mapping", "negative")

    mapping: dict[int, int]
    negative: int | None

    def __init__(self, mapping: dict[int, int] | None = None, negative: int | None = 1) -> None:
        object.__setattr__(self, "mapping", trec_grades() if mapping is None else mapping)
        object.__setattr__(self, "negative", negative)
        for label, grade in self.mapping.items():
            if grade not in GRADES:
                raise ValueError(f"grade map: label {label} maps to {grade}, outside grades 1-5")
        if self.negative is not None and self.negative not in GRADES:
            raise ValueError(f"grade map: negative labels map to {self.negative}, outside 1-5")

    def describe(self) -> str:
        """The map as ``--grade-map`` takes it back (``<0:G``: every other negative label)."""
        text = self._mapped()
        return text if self.negative is None else text + f",{NEGATIVE}:{self.negative}"

    def _mapped(self) -> str:
        """The mapping as ``--grade-map`` takes it."""
        return ",".join(f"{k}:{v}" for k, v in sorted(self.mapping.items()))

    def uncovered(self, label: int) -> str:
        """Why ``label`` cannot be read, and what to give instead."""
        said = f"relevance {label} is not covered by the grade map ({self.describe()}); "
        option = OPTION_WORDS.get()  # the command line's words, or the Python API's
        if self.mapping == trec_grades() and self.negative is not None:  # the default
            return (
                f"{said}give one with {option('grade-map', None)}, e.g."
                f" {option('grade-map', '0:2,1:5')} for binary qrels"
            )
        return (
            f"{said}add it to {option('grade-map', None)}: {self._mapped()},{label}:G"
            " with G its grade (1-5)"
        )

    def grade_of(self, label: int) -> int | None:
        """Grade of one label, or None when the map does not cover it."""
        grade = self.mapping.get(label)
        if grade is None and label < 0:
            return self.negative
        return grade

    def apply(self, labels: NDArray[np.int64]) -> tuple[NDArray[np.int8], NDArray[np.bool_]]:
        """Grades for ``labels`` and a mask of the labels the map does not cover."""
        grades = np.zeros(labels.shape, dtype=np.int8)
        covered = np.zeros(labels.shape, dtype=np.bool_)
        for label, grade in self.mapping.items():
            hit = labels == label
            grades[hit] = grade
            covered |= hit
        if self.negative is not None:
            rest = (labels < 0) & ~covered
            grades[rest] = self.negative
            covered |= rest
        return grades, ~covered


def _pairs(text: str, option: str) -> list[tuple[str, str]]:
    pairs = []
    for raw in text.split(","):
        part = raw.strip()
        if not part:
            continue
        left, sep, right = part.partition(":")
        if not sep or not left.strip() or not right.strip():
            raise ValueError(f"{option}: {part!r} is not a from:to pair (e.g. 0:2,1:3,2:4,3:5)")
        pairs.append((left.strip(), right.strip()))
    if not pairs:
        raise ValueError(f"{option}: the map is empty")
    return pairs


#: How a grade map writes "every negative label not named" (``<0:1``), as
#: :meth:`GradeMap.describe` prints it in every report, so that it can be given back.
NEGATIVE = "<0"


def parse_grade_map(text: str) -> GradeMap:
    """``"0:2,1:5"`` -> a GradeMap covering exactly those labels; ``<0:G`` gives every
    other negative label grade G (``"0:2,1:3,2:4,3:5,<0:1"`` is the default map)."""
    mapping: dict[int, int] = {}
    negative: int | None = None
    for left, right in _pairs(text, "--grade-map"):
        if left.replace(" ", "") == NEGATIVE:
            if negative is not None:
                raise ValueError("--grade-map: <0 (the negative labels) is mapped twice")
            negative = _grade(left, right)
            continue
        try:
            label, grade = int(left), int(right)
        except ValueError:
            raise ValueError(
                f"--grade-map: {left}:{right} must map an integer label to a grade"
            ) from None
        if grade not in GRADES:
            raise ValueError(f"--grade-map: {left}:{right} maps to {grade}, outside grades 1-5")
        if label in mapping:
            raise ValueError(f"--grade-map: label {label} is mapped twice")
        mapping[label] = grade
    return GradeMap(mapping=mapping, negative=negative)


def _grade(left: str, right: str) -> int:
    """The grade of a ``<0:G`` pair."""
    try:
        grade = int(right)
    except ValueError:
        raise ValueError(f"--grade-map: {left}:{right} must map to a grade (1-5)") from None
    if grade not in GRADES:
        raise ValueError(f"--grade-map: {left}:{right} maps to {grade}, outside grades 1-5")
    return grade


def parse_gain_map(text: str) -> dict[int, float]:
    """``"1:0,2:0,3:1,4:2,5:3"`` -> grade -> nDCG gain, for all five grades."""
    gains: dict[int, float] = {}
    for left, right in _pairs(text, "--gain-map"):
        try:
            grade, gain = int(left), float(right)
        except ValueError:
            raise ValueError(f"--gain-map: {left}:{right} must map a grade to a number") from None
        if grade not in GRADES:
            raise ValueError(f"--gain-map: {grade} is not a grade (1-5)")
        if not np.isfinite(gain) or gain < 0:
            raise ValueError(f"--gain-map: gain of grade {grade} must be a finite number >= 0")
        gains[grade] = gain
    missing = [g for g in GRADES if g not in gains]
    if missing:
        raise ValueError(f"--gain-map: give a gain for every grade; missing {missing}")
    return gains
