"""Samples JSONL: one query per line with its gold passages and a system's retrieval."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Self

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from raglabel.errors import InputError
from raglabel.formats.context_ids import Carried, ContextIds, FileTexts, Passages
from raglabel.formats.jsonl import Identifier, validated
from raglabel.formats.maps import GradeMap
from raglabel.formats.text import normalize
from raglabel.formats.trec.rows import QrelsRows
from raglabel.formats.trec.table import RunTable, as_text


class RetrievedPassage(BaseModel):
    """A retrieved passage: its id, its text, or both (which passage it is: :class:`SampleKeys`)."""

    model_config = ConfigDict(extra="ignore")

    id: Identifier | None = None
    text: str | None = None

    @model_validator(mode="after")
    def _identified(self) -> Self:
        if self.id is None and not (self.text and self.text.strip()):
            raise ValueError("a retrieved passage needs an id or a text")
        return self


class ActualOutput(BaseModel):
    model_config = ConfigDict(extra="ignore")

    retrieved: list[RetrievedPassage]


class SampleInput(BaseModel):
    model_config = ConfigDict(extra="allow")

    question: str


class SampleMetadata(BaseModel):
    model_config = ConfigDict(extra="allow")

    k: Annotated[int, Field(ge=1)] | None = Field(
        default=None,
        description="This sample's own cutoff: its cutoff metrics are taken at k and "
        "reported in the columns named for k (recall@k), not in the caller's.",
    )


class Sample(BaseModel):
    """One line of a samples JSONL file."""

    model_config = ConfigDict(extra="allow")

    id: Identifier
    input: SampleInput
    expected_output: list[Identifier] | dict[str, int] = Field(
        description="Relevant passage ids (binary relevance: grade 5), or passage id -> "
        "grade 1-5, or -> a label read through --grade-map (gains 0-3, used as they are "
        "by nDCG, with --grade-map 0:2,1:3,2:4,3:5)."
    )
    actual_output: ActualOutput | list[Identifier] = Field(
        description="The system's ranked retrieval, best first."
    )
    metadata: SampleMetadata | None = None
    expected_answer: str | None = None

    @field_validator("expected_output", mode="before")
    @classmethod
    def _list_or_whole_numbers(cls, value: Any) -> Any:
        # Said here, before pydantic tries each shape and reports the list's complaint.
        if isinstance(value, dict):
            for pid, label in value.items():
                if not _whole(label):
                    raise ValueError(
                        f"the value of {pid!r} is {json.dumps(label)}: a map's values are "
                        "whole numbers (grades 1-5, or labels read through --grade-map, "
                        f"such as gains 0-3 with --grade-map {GAINS_GRADE_MAP})"
                    )
        elif not isinstance(value, list):
            raise ValueError(
                "must be a list of relevant passage ids or a map of passage id -> grade"
            )
        return value

    def retrieved(self) -> list[RetrievedPassage]:
        if isinstance(self.actual_output, list):
            return [RetrievedPassage(id=pid) for pid in self.actual_output]
        return self.actual_output.retrieved

    def carried(self) -> list[Carried]:
        """Each retrieved passage's (id, text), for :class:`SampleKeys`."""
        if isinstance(self.actual_output, list):
            return [(pid, None) for pid in self.actual_output]
        return [(p.id, p.text) for p in self.actual_output.retrieved]


def _whole(label: Any) -> bool:
    """Whether pydantic's lax int takes ``label``: an integer, a float without fraction, or
    a string of an integer (a boolean is no grade)."""
    if isinstance(label, bool):
        return False
    if isinstance(label, float):
        return label.is_integer()
    if isinstance(label, str):
        try:
            int(label)
        except ValueError:
            return False
        return True
    return isinstance(label, int)


@dataclass(frozen=True)
class SampleSet:
    """Samples flattened to rows: gold grades, the ranked run, and per-query extras."""

    qrels: QrelsRows
    run: RunTable  # in list order; ``contains`` says if a text holds the expected answer
    k_override: dict[str, int]
    answered: set[str]  # queries with an expected answer
    #: What reading the file noticed (a map that reaches no relevant grade), for stderr
    #: and the report's warnings.
    warnings: list[str] = field(default_factory=list)


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


class SampleKeys:
    """Which passage each retrieved passage of a samples file is, for ``eval --samples``
    (the file alone) and ``import --samples`` (into a project) alike.

    Retrieved ids name passages, the same in every sample, while each keeps one text
    (:mod:`raglabel.formats.context_ids`): a text alone is matched by content, and an
    id that arrives with two texts numbers its sample's chunks, so that sample's
    passages are matched by their text, with a warning. The sample's ``expected_output``
    uses the sample's own ids, so an entry naming a context matched by text follows it.
    """

    def __init__(self, path: Path, retrieved: Sequence[list[Carried]], passages: Passages) -> None:
        """``retrieved``: each sample's retrieved passages (:meth:`Sample.carried`)."""
        self._path = path
        self._ids = ContextIds(retrieved, "global", passages, noun="retrieved passage")
        self.followed = 0  # expected_output entries that followed their context

    def of(
        self, retrieved: list[Carried], gold: dict[str, int]
    ) -> tuple[list[str], dict[str, int]]:
        """The passage of each of one sample's retrieved passages, in order, and its gold
        grades by those passages."""
        keys = self._ids.sample(retrieved, prefer=list(gold))
        moved: dict[str, str] = {}
        for (ident, _), key in zip(retrieved, keys, strict=True):
            if ident is not None and key != ident:
                moved.setdefault(ident, key)
        followed: dict[str, int] = {}
        for pid, grade in gold.items():
            key = moved.get(pid, pid)
            self.followed += key != pid
            followed[key] = max(grade, followed.get(key, grade))
        return keys, followed

    def warnings(self) -> list[str]:
        entries = "entry" if self.followed == 1 else "entries"
        followed = (
            f"; {self.followed} expected_output {entries} naming such an id went with"
            " their sample's passage"
            if self.followed
            else ""
        )
        return self._ids.warnings(str(self._path), "a samples file", followed)


def read_samples(
    path: str | Path, grade_map: GradeMap | None = None, relevance_threshold: int = 4
) -> SampleSet:
    """Read and validate every line; the first bad one is an error naming line and field.

    A list ``expected_output`` means binary relevance (relevant -> grade 5, as with
    ``--grade-map 0:2,1:5``); a map gives grades 1..5, or labels through ``grade_map``
    (:data:`GAINS_GRADE_MAP` for maps of gains). Maps that cannot be grades are refused
    and maps without a relevant passage warned about (:func:`map_relevance`).
    Retrieved passages are keyed by :class:`SampleKeys`, as an import into an empty
    project keys them.
    """
    path = Path(path)
    qrels = QrelsRows([], [], [])
    run_qids: list[str] = []
    run_docids: list[str] = []
    contains: list[bool] = []
    k_override: dict[str, int] = {}
    answered: set[str] = set()
    maps: list[GoldMap] = []
    # Which passage a retrieved id is depends on the whole file (an id may come with two
    # texts), so samples are keyed after all are read; each is kept as plain values, as
    # thousands of live models cost the garbage collector more than reading them.
    read: list[tuple[str, dict[str, int], list[Carried], str]] = []
    for number, sample in samples_in(path):
        gold = gold_grades(path, number, sample, grade_map)
        maps += GoldMap.of(number, sample, gold)
        answer = normalize(sample.expected_answer) if sample.expected_answer else ""
        if answer:
            answered.add(sample.id)
        if sample.metadata is not None and sample.metadata.k is not None:
            k_override[sample.id] = sample.metadata.k
        read.append((sample.id, gold, sample.carried(), answer))
    keys = SampleKeys(path, [retrieved for _, _, retrieved, _ in read], FileTexts())
    for qid, given, retrieved, answer in read:
        ranked, gold = keys.of(retrieved, given)
        for docid, grade in gold.items():
            qrels.qids.append(qid)
            qrels.docids.append(docid)
            qrels.grades.append(grade)
        for (_, text), key in zip(retrieved, ranked, strict=True):
            run_qids.append(qid)
            run_docids.append(key)
            contains.append(bool(answer) and answer in normalize(text or ""))
    warnings = map_relevance(path, maps, grade_map, relevance_threshold) + keys.warnings()
    run = RunTable(as_text(run_qids), as_text(run_docids), None, np.array(contains, dtype=np.bool_))
    return SampleSet(
        qrels=qrels, run=run, k_override=k_override, answered=answered, warnings=warnings
    )


def check_gold(
    path: Path,
    samples: list[tuple[int, Sample]],
    grade_map: GradeMap | None,
    relevance_threshold: int = 4,
) -> list[str]:
    """Every sample's gold grades checked as :func:`read_samples` checks them (the first
    bad one is an error), with the warnings of :func:`map_relevance`; for an import,
    which reads the samples before it writes anything."""
    maps: list[GoldMap] = []
    for number, sample in samples:
        gold = gold_grades(path, number, sample, grade_map)
        maps += GoldMap.of(number, sample, gold)
    return map_relevance(path, maps, grade_map, relevance_threshold, threshold_option=False)


#: ``--grade-map`` for seed-style ``id -> gain`` maps whose gains are 0..3 (the TREC
#: scale): gain g becomes grade g + 2, whose default nDCG gain (grade - 2) is g again.
GAINS_GRADE_MAP = "0:2,1:3,2:4,3:5"
#: ``--grade-map`` saying that a map's values are grades 1..5 already (the default
#: reading, given explicitly to accept maps that reach no relevant grade).
IDENTITY_GRADE_MAP = "1:1,2:2,3:3,4:4,5:5"


@dataclass(frozen=True)
class GoldMap:
    """A sample whose ``expected_output`` is a map: its line, id and highest grade."""

    line: int
    sample: str
    highest: int

    @classmethod
    def of(cls, line: int, sample: Sample, gold: dict[str, int]) -> list[GoldMap]:
        """The sample's map, if ``expected_output`` is a non-empty one (else none)."""
        if not isinstance(sample.expected_output, dict) or not gold:
            return []
        return [cls(line, sample.id, max(gold.values()))]


def map_relevance(
    path: Path,
    maps: list[GoldMap],
    grade_map: GradeMap | None,
    relevance_threshold: int,
    *,
    threshold_option: bool = True,
) -> list[str]:
    """Refuse maps that cannot mean grades; warn of maps that leave a sample without a
    relevant passage, which the binary metrics (hit, recall, MRR) cannot score.

    A map's values are grades 1..5 unless ``grade_map`` reads them. When no map of the
    file grades any passage at the relevance threshold, reading them as grades finds no
    relevant passage in any of them: seed-style gain maps (``{"doc-3": 3, "doc-9": 1}``)
    look exactly so, and read as grades they would give nDCG other gains and leave the
    binary metrics NA without a word. Such a file is refused, naming both readings
    (``threshold_option``: the command takes ``--relevance-threshold``, as eval does).
    """
    below = [gold for gold in maps if gold.highest < relevance_threshold]
    if not below:
        return []
    gains = (
        f"if the values are gains (id -> gain, 0-3), give --grade-map {GAINS_GRADE_MAP} "
        "(gain g is read as grade g + 2, whose nDCG gain is g)"
    )
    if grade_map is None and len(below) == len(maps):
        highest = max(gold.highest for gold in maps)
        grades = f"if they are grades, say so with --grade-map {IDENTITY_GRADE_MAP}"
        if threshold_option:
            grades += f" or count grade {highest} as relevant with --relevance-threshold {highest}"
        raise InputError(
            path,
            f"no expected_output map grades a passage {relevance_threshold} or higher: read "
            "as grades 1-5 (the default), none of these samples has a relevant passage, "
            f"nDCG would use the grades' gains and hit, recall and MRR would be NA; {gains}; "
            f"{grades}",
            maps[0].line,
        )
    shown = ", ".join(f"{gold.sample} (line {gold.line})" for gold in below[:5])
    more = ", ..." if len(below) > 5 else ""
    lower = relevance_threshold - 1
    hint = gains if grade_map is None else f"eval's --relevance-threshold {lower} counts grade "
    if grade_map is not None:
        hint += f"{lower} as relevant"
    return [
        f"{path}: {len(below)} expected_output map(s) grade no passage "
        f"{relevance_threshold} or higher: {shown}{more}; hit, recall, recall_all, MRR, AP, "
        f"R-precision and bpref are NA for those samples and precision is 0 ({hint})"
    ]


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
