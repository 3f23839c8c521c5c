"""Samples JSONL: one query per line with its gold passages and a system's retrieval."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Self

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from raglabel.errors import InputError
from raglabel.formats.jsonl import Identifier, validated
from raglabel.formats.maps import GradeMap
from raglabel.formats.rows import QrelsRows, RunRows
from raglabel.formats.text import content_id, normalize


class RetrievedPassage(BaseModel):
    """A retrieved passage: its id, its text, or both (text alone is matched by content)."""

    model_config = ConfigDict(extra="ignore")

    id: Identifier | None = None
    text: str | None = None

    @model_validator(mode="after")
    def _identified(self) -> Self:
        if self.id is None and not (self.text and self.text.strip()):
            raise ValueError("a retrieved passage needs an id or a text")
        return self

    def key(self) -> str:
        """The id, or for text alone an id derived from the normalised text."""
        if self.id is not None:
            return self.id
        assert self.text is not None
        return content_id(self.text)


class ActualOutput(BaseModel):
    model_config = ConfigDict(extra="ignore")

    retrieved: list[RetrievedPassage]


class SampleInput(BaseModel):
    model_config = ConfigDict(extra="allow")

    question: str


class SampleMetadata(BaseModel):
    model_config = ConfigDict(extra="allow")

    k: Annotated[int, Field(ge=1)] | None = None


class Sample(BaseModel):
    """One line of a samples JSONL file."""

    model_config = ConfigDict(extra="allow")

    id: Identifier
    input: SampleInput
    expected_output: list[Identifier] | dict[str, int] = Field(
        description="Relevant passage ids (binary), or passage id -> grade."
    )
    actual_output: ActualOutput | list[Identifier] = Field(
        description="The system's ranked retrieval, best first."
    )
    metadata: SampleMetadata | None = None
    expected_answer: str | None = None

    def retrieved(self) -> list[RetrievedPassage]:
        if isinstance(self.actual_output, list):
            return [RetrievedPassage(id=pid) for pid in self.actual_output]
        return self.actual_output.retrieved


@dataclass(frozen=True)
class SampleSet:
    """Samples flattened to rows: gold grades, the ranked run, and per-query extras."""

    qrels: QrelsRows
    run: RunRows  # in list order; ``contains`` says if a text holds the expected answer
    k_override: dict[str, int]
    answered: set[str]  # queries with an expected answer


def samples_in(path: str | Path) -> Iterator[tuple[int, Sample]]:
    """Every sample with its line number; a repeated sample id is an error."""
    path = Path(path)
    seen: dict[str, int] = {}
    for number, sample in validated(path, Sample):
        if sample.id in seen:
            raise InputError(
                path, f"sample id {sample.id!r} already used on line {seen[sample.id]}", number
            )
        seen[sample.id] = number
        yield number, sample
    if not seen:
        raise InputError(path, "has no samples (the file is empty)")


def read_samples(path: str | Path, grade_map: GradeMap | None = None) -> SampleSet:
    """Read and validate every line; the first bad one is an error naming line and field.

    A list ``expected_output`` means binary relevance (relevant -> grade 5, as with
    ``--grade-map 0:2,1:5``); a map gives grades 1..5, or labels through ``grade_map``.
    A retrieved passage given by text alone gets an id derived from that text.
    """
    path = Path(path)
    qrels = QrelsRows([], [], [])
    run = RunRows([], [], None, [])
    k_override: dict[str, int] = {}
    answered: set[str] = set()
    for number, sample in samples_in(path):
        for docid, grade in gold_grades(path, number, sample, grade_map).items():
            qrels.qids.append(sample.id)
            qrels.docids.append(docid)
            qrels.grades.append(grade)
        answer = normalize(sample.expected_answer) if sample.expected_answer else ""
        if answer:
            answered.add(sample.id)
        if sample.metadata is not None and sample.metadata.k is not None:
            k_override[sample.id] = sample.metadata.k
        for passage in sample.retrieved():
            run.qids.append(sample.id)
            run.docids.append(passage.key())
            assert run.contains is not None
            run.contains.append(bool(answer) and answer in normalize(passage.text or ""))
    return SampleSet(qrels=qrels, run=run, k_override=k_override, answered=answered)


def gold_grades(
    path: Path, number: int, sample: Sample, grade_map: GradeMap | None
) -> dict[str, int]:
    expected = sample.expected_output
    if isinstance(expected, list):
        return dict.fromkeys(expected, 5)
    if not expected:
        return {}
    if grade_map is None:
        bad = [(pid, g) for pid, g in expected.items() if not 1 <= g <= 5]
        if bad:
            pid, g = bad[0]
            raise InputError(
                path,
                f"field expected_output.{pid}: grade {g} is outside 1-5 "
                "(give --grade-map to map other labels)",
                number,
            )
        return dict(expected)

    def not_covered(pid: str) -> InputError:
        return InputError(
            path,
            f"field expected_output.{pid}: label {expected[pid]} is not covered by "
            f"--grade-map ({grade_map.describe()})",
            number,
        )

    # A label beyond int64 is covered by no map; say so before numpy overflows on it.
    huge = next((pid for pid, g in expected.items() if not -(2**62) <= g <= 2**62), None)
    if huge is not None:
        raise not_covered(huge)
    labels = np.array(list(expected.values()), dtype=np.int64)
    grades, uncovered = grade_map.apply(labels)
    if uncovered.any():
        raise not_covered(list(expected)[int(np.flatnonzero(uncovered)[0])])
    return {pid: int(g) for pid, g in zip(expected, grades, strict=True)}
