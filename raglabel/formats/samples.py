"""Samples JSONL: one query per line with its gold passages and a system's retrieval."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from raglabel.errors import InputError
from raglabel.formats.lines import check_readable
from raglabel.formats.maps import GradeMap
from raglabel.formats.rows import QrelsRows, RunRows
from raglabel.formats.text import normalize


def _id_text(value: Any) -> Any:
    # JSON producers often write numeric ids; an id is its text either way.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


Identifier = Annotated[str, BeforeValidator(_id_text), Field(min_length=1)]


class RetrievedPassage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: Identifier
    text: str | None = None


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


def _describe(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "(line)"
    return f"field {where}: {first['msg']}"


def read_samples(path: str | Path, grade_map: GradeMap | None = None) -> SampleSet:
    """Read and validate every line; the first bad one is an error naming line and field.

    A list ``expected_output`` means binary relevance (relevant -> grade 5, as with
    ``--grade-map 0:2,1:5``); a map gives grades 1..5, or labels through ``grade_map``.
    """
    path = Path(path)
    check_readable(path)
    qrels = QrelsRows([], [], [])
    run = RunRows([], [], None, [])
    k_override: dict[str, int] = {}
    answered: set[str] = set()
    seen: dict[str, int] = {}
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise InputError(path, "is not valid UTF-8", number) from None
            if not text.strip():
                continue
            try:
                sample = Sample.model_validate(json.loads(text))
            except json.JSONDecodeError as exc:
                raise InputError(path, f"not valid JSON ({exc.msg})", number) from None
            except ValidationError as exc:
                raise InputError(path, _describe(exc), number) from None
            if sample.id in seen:
                raise InputError(
                    path, f"sample id {sample.id!r} already used on line {seen[sample.id]}", number
                )
            seen[sample.id] = number
            gold = _gold_grades(path, number, sample, grade_map)
            for docid, grade in gold.items():
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
                run.docids.append(passage.id)
                assert run.contains is not None
                run.contains.append(bool(answer) and answer in normalize(passage.text or ""))
    if not seen:
        raise InputError(path, "has no samples (the file is empty)")
    return SampleSet(qrels=qrels, run=run, k_override=k_override, answered=answered)


def _gold_grades(
    path: Path, number: int, sample: Sample, grade_map: GradeMap | None
) -> dict[str, int]:
    expected = sample.expected_output
    if isinstance(expected, list):
        return dict.fromkeys(expected, 5)
    if not expected:
        return {}
    labels = np.array(list(expected.values()), dtype=np.int64)
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
    grades, uncovered = grade_map.apply(labels)
    if uncovered.any():
        pid = list(expected)[int(np.flatnonzero(uncovered)[0])]
        raise InputError(
            path,
            f"field expected_output.{pid}: label {expected[pid]} is not covered by "
            f"--grade-map ({grade_map.describe()})",
            number,
        )
    return {pid: int(g) for pid, g in zip(expected, grades, strict=True)}
