"""The answers section of ``raglabel eval DB --answers``: per answer system and criterion
the human and the judge figures, the judge-corrected mean, ``ctx_rank_prec``, and paired
comparisons between systems.

Reading (:func:`load_answers`) and computing (:func:`answers_section`) are apart, so a
benchmark can time them apart and the app can compute from what it already read.

Who counts where, per sample and criterion:
- a criterion whose inputs the sample lacks is NA with that reason for people and judge;
- people: the lower median of the annotators' standing grades; a sample nobody graded is
  neither valid nor NA (it is simply not graded yet);
- judge: the lower median of every good answer over its models and repeats; a sample all
  of whose answers failed is NA ``judge_failed``; a sample never judged is neither valid
  nor NA;
- ``ctx_rank_prec``: the judge's chunk grades (per chunk the lower median over its good
  answers) scored in the sample's evaluated order; beside it the same score on people's
  resolved grades of the chunks as passages of the query, where people graded every chunk.
  A sample whose chunks gain nothing is NA ``no_useful_chunk``.
"""

from __future__ import annotations

import itertools
import math
import sqlite3
import zlib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from raglabel.errors import UsageError
from raglabel.formats.report import Comparison, CriterionAnswers, Report, SampleGrades
from raglabel.judge.work import AnswerItem, ChunkGrade
from raglabel.metrics.answer_stats import (
    MIN_HUMAN,
    corrected_mean,
    ranking_scores,
    summarize,
)
from raglabel.metrics.chunk_ranking import chunk_ranking, linear_gains
from raglabel.metrics.criteria import (
    CRITERIA,
    DEFAULT_THRESHOLD,
    JUDGE_FAILED,
    NO_USEFUL_CHUNK,
    RANKING,
    RANKING_THRESHOLD,
)
from raglabel.metrics.stats import adjust_families, paired_test
from raglabel.storage.answer_items import answer_items, require_systems
from raglabel.storage.answers import standing_answer_grades
from raglabel.storage.judgments import JudgedAnswer, judged_answers
from raglabel.storage.labels import resolved_grades

FloatArray = NDArray[np.float64]
#: Every criterion the section reports, in its order.
ALL: tuple[str, ...] = (*CRITERIA, RANKING)
GRADERS = ("human", "judge")


def default_thresholds() -> dict[str, float]:
    return {**{c: float(DEFAULT_THRESHOLD) for c in CRITERIA}, RANKING: RANKING_THRESHOLD}


def parse_thresholds(specs: Sequence[str]) -> dict[str, float]:
    """``CRITERION=N`` options over the defaults: 1-5 for a criterion, 0-100 for
    ctx_rank_prec. Anything else is a usage error naming ``--threshold``."""
    out = default_thresholds()
    given: set[str] = set()
    for spec in specs:
        name, sep, text = spec.partition("=")
        name = name.strip()
        if not sep or name not in out:
            raise UsageError(
                f"--threshold {spec!r}: expected CRITERION=N with CRITERION one of {', '.join(ALL)}"
            )
        if name in given:
            raise UsageError(f"--threshold {spec!r}: {name} is given a threshold twice")
        given.add(name)
        try:
            value = float(text)
        except ValueError:
            raise UsageError(f"--threshold {spec!r}: {text!r} is not a number") from None
        low, high = (0.0, 100.0) if name == RANKING else (1.0, 5.0)
        if not low <= value <= high:  # NaN fails this too
            raise UsageError(f"--threshold {spec!r}: {name} takes {low:g} to {high:g}")
        out[name] = value
    return out


@dataclass
class AnswerInputs:
    """What the section is computed from, read from a project."""

    items: list[AnswerItem]
    #: (system, sample id, criterion) -> every annotator's standing grade
    human: dict[tuple[str, str, str], list[int]]
    #: the same grades by annotator: (system, sample id, criterion) -> {annotator: grade}
    by_annotator: dict[tuple[str, str, str], dict[str, int]]
    judged: dict[tuple[str, str, str], list[JudgedAnswer]]
    #: (query row id, passage id) -> resolved human passage grade
    passages: dict[tuple[int, str], int]


def load_answers(
    conn: sqlite3.Connection, systems: Sequence[str] = (), *, relevance_threshold: int = 4
) -> AnswerInputs:
    """Read the samples of ``systems`` (all when empty), their human grades, the judge's
    answers and the resolved passage grades. No answer system is a usage error."""
    require_systems(conn)
    items = answer_items(conn, systems, relevance_threshold=relevance_threshold)
    by_annotator: dict[tuple[str, str, str], dict[str, int]] = defaultdict(dict)
    wanted = {(item.system, item.sample_id) for item in items}
    for (system, sample, criterion, who), standing in standing_answer_grades(
        conn, samples=wanted
    ).items():
        by_annotator[system, sample, criterion][who] = standing[0]
    human = {key: list(grades.values()) for key, grades in by_annotator.items()}
    judged = judged_answers(conn, items, ALL)
    passages = {(q, pid): grade for q, pid, grade in resolved_grades(conn)}
    return AnswerInputs(items, human, dict(by_annotator), judged, passages)


@dataclass(frozen=True)
class AnswerOptions:
    thresholds: dict[str, float] = field(default_factory=default_thresholds)
    gains: Mapping[int, float] = field(default_factory=linear_gains)
    resamples: int = 1000
    seed: int = 42
    level: float = 0.95
    per_query: bool = False
    compare: bool = False
    baseline: str | None = None  # compare every system with this one only
    permutations: int = 10_000
    adjust: str = "holm"


@dataclass
class _Column:
    """One grader's per-sample values of one criterion over a system's samples."""

    values: FloatArray
    na: list[str | None]  # the NA reason per sample, None where there is none

    def counts(self) -> dict[str, int]:
        found: dict[str, int] = defaultdict(int)
        for reason in self.na:
            if reason is not None:
                found[reason] += 1
        return dict(sorted(found.items()))


@dataclass
class _Ranking:
    """Which samples the judge's chunk grades scored: sample index -> the chunk grades
    of its good answers (see :func:`_fitting`)."""

    fitting: dict[int, list[tuple[ChunkGrade, ...]]] = field(default_factory=dict)


def _lower_median(grades: list[int]) -> int:
    """:func:`raglabel.storage.labels.resolve`'s median, inlined: it runs per sample."""
    grades.sort()
    return grades[(len(grades) - 1) // 2]


def _criterion_columns(
    items: Sequence[AnswerItem], criterion: str, inputs: AnswerInputs
) -> tuple[_Column, _Column]:
    n = len(items)
    human = np.full(n, np.nan)
    judge = np.full(n, np.nan)
    human_na: list[str | None] = [None] * n
    judge_na: list[str | None] = [None] * n
    people = inputs.human
    judged = inputs.judged
    for i, item in enumerate(items):
        reason = item.missing(criterion)
        if reason is not None:
            human_na[i] = judge_na[i] = reason
            continue
        key = (item.system, item.sample_id, criterion)
        grades = people.get(key)
        if grades:
            human[i] = _lower_median(list(grades))
        answers = judged.get(key)
        if answers is None:
            continue  # never judged: not valid, and not NA either
        good = [a.grade for a in answers if a.error is None and a.grade is not None]
        if good:
            judge[i] = _lower_median(good)
        else:
            judge_na[i] = JUDGE_FAILED
    return _Column(human, human_na), _Column(judge, judge_na)


def _fitting(answers: list[JudgedAnswer], size: int) -> list[tuple[ChunkGrade, ...]]:
    """The good answers' chunk grades that name each of the sample's ``size`` chunks
    once, in position order."""
    wanted = list(range(1, size + 1))
    out = []
    for a in answers:
        if a.error is not None or a.chunks is None:
            continue
        chunks = a.chunks
        if [c.position for c in chunks] != wanted:
            chunks = tuple(sorted(chunks, key=lambda c: c.position))
            if [c.position for c in chunks] != wanted:
                continue
        out.append(chunks)
    return out


def _consensus_chunks(fitting: list[tuple[ChunkGrade, ...]], size: int) -> tuple[ChunkGrade, ...]:
    """Per chunk position the lower median of the good answers' grades, with the reason
    of the first answer that gave that grade (for --per-query's detail)."""
    out = []
    for p in range(size):
        grade = _lower_median([chunks[p].grade for chunks in fitting])
        reason = next(chunks[p].reason for chunks in fitting if chunks[p].grade == grade)
        out.append(ChunkGrade(p + 1, grade, reason))
    return tuple(out)


def _ranking_columns(
    items: Sequence[AnswerItem], inputs: AnswerInputs, gains: Mapping[int, float]
) -> tuple[_Column, _Column, _Ranking]:
    human_na: list[str | None] = [item.missing(RANKING) for item in items]
    judge_na = list(human_na)
    ranking = _Ranking()
    # Samples grouped by (good answers, chunks): each group's grades are one array,
    # whose lower median over answers is one sort.
    stacks: dict[tuple[int, int], tuple[list[int], list[list[list[int]]]]] = {}
    human_rows: list[int] = []
    human_grades: list[list[int]] = []
    passages = inputs.passages
    for i, item in enumerate(items):
        if human_na[i] is not None:
            continue
        answers = inputs.judged.get((item.system, item.sample_id, RANKING))
        size = len(item.contexts)
        if answers is not None:
            fitting = _fitting(answers, size)
            if not fitting:
                judge_na[i] = JUDGE_FAILED
            else:
                ranking.fitting[i] = fitting
                rows, grades = stacks.setdefault((len(fitting), size), ([], []))
                rows.append(i)
                grades.append([[c.grade for c in chunks] for chunks in fitting])
        people = [passages.get((item.query_row, c.pid)) for c in item.contexts]
        if all(grade is not None for grade in people):
            human_rows.append(i)
            human_grades.append([int(g) for g in people if g is not None])
    judge_rows: list[int] = []
    judge_grades: list[list[int]] = []
    for (count, _), (rows, grades) in stacks.items():
        stack = np.sort(np.array(grades, dtype=np.int64), axis=1)
        judge_rows += rows
        judge_grades += stack[:, (count - 1) // 2, :].tolist()
    judge = _scores(items, judge_rows, judge_grades, gains)
    human = _scores(items, human_rows, human_grades, gains)
    for values, na, rows in ((judge, judge_na, judge_rows), (human, human_na, human_rows)):
        for i in rows:
            if np.isnan(values[i]):
                na[i] = NO_USEFUL_CHUNK
    return _Column(human, human_na), _Column(judge, judge_na), ranking


def _scores(
    items: Sequence[AnswerItem],
    rows: list[int],
    grades: list[list[int]],
    gains: Mapping[int, float],
) -> FloatArray:
    out = np.full(len(items), np.nan)
    if rows:
        orders = [items[i].evaluated_order() for i in rows]
        out[rows] = ranking_scores(grades, orders, gains)
    return out


def _seed(seed: int, *parts: str) -> int:
    """A seed of its own per (system, criterion, grader), so an interval does not move
    when other systems are added or left out."""
    return (seed + zlib.crc32("\x1f".join(parts).encode("utf-8"))) % (2**63 - 1)


@dataclass
class _System:
    items: list[AnswerItem]
    columns: dict[str, tuple[_Column, _Column]]  # criterion -> (human, judge)
    ranking: _Ranking


def _system(items: list[AnswerItem], inputs: AnswerInputs, gains: Mapping[int, float]) -> _System:
    columns: dict[str, tuple[_Column, _Column]] = {
        c: _criterion_columns(items, c, inputs) for c in CRITERIA
    }
    human, judge, ranking = _ranking_columns(items, inputs, gains)
    columns[RANKING] = (human, judge)
    return _System(items, columns, ranking)


def _criterion_report(
    name: str, criterion: str, system: _System, options: AnswerOptions
) -> CriterionAnswers:
    human, judge = system.columns[criterion]
    threshold = options.thresholds[criterion]
    summaries = [
        summarize(
            column.values,
            threshold,
            column.counts(),
            resamples=options.resamples,
            seed=_seed(options.seed, name, criterion, grader),
            level=options.level,
        )
        for grader, column in zip(GRADERS, (human, judge), strict=True)
    ]
    result = CriterionAnswers(
        human=summaries[0],
        judge=summaries[1],
        corrected=corrected_mean(judge.values, human.values, level=options.level),
    )
    if options.per_query:
        result.per_sample = _per_sample(criterion, system, options.gains)
    return result


def _values(column: FloatArray) -> list[float | None]:
    """The column as plain floats, None for NaN."""
    return [None if math.isnan(x) else x for x in column.tolist()]


def _per_sample(
    criterion: str, system: _System, gains: Mapping[int, float]
) -> dict[str, SampleGrades]:
    human, judge = system.columns[criterion]
    people, model = _values(human.values), _values(judge.values)
    out: dict[str, SampleGrades] = {}
    for i, item in enumerate(system.items):
        grades = SampleGrades(item.qid, people[i], model[i], human.na[i], judge.na[i])
        fitting = system.ranking.fitting.get(i) if criterion == RANKING else None
        if fitting is not None:
            chunks = _consensus_chunks(fitting, len(item.contexts))
            detail = chunk_ranking(chunks, item.evaluated_order(), gains)
            grades.actual_ranks = detail.actual_ranks
            grades.ideal_ranks = detail.ideal_ranks
            grades.non_relevant_chunks_reasons = detail.non_relevant_chunks_reasons
        out[item.sample_id] = grades
    return out


def _by_system(items: Sequence[AnswerItem]) -> dict[str, list[AnswerItem]]:
    grouped: dict[str, list[AnswerItem]] = {}
    for item in items:
        grouped.setdefault(item.system, []).append(item)
    return grouped


@dataclass
class AnswersSection:
    answers: dict[str, dict[str, CriterionAnswers]]
    compare: list[Comparison] | None  # raw p-values: adjusted with the runs' secondary tests


def answers_section(inputs: AnswerInputs, options: AnswerOptions) -> AnswersSection:
    """Every system's criteria (and ctx_rank_prec), and with ``compare`` the paired
    randomization tests between systems over the samples both have, per criterion and
    grader."""
    systems = {
        name: _system(items, inputs, options.gains)
        for name, items in _by_system(inputs.items).items()
    }
    answers = {
        name: {c: _criterion_report(name, c, system, options) for c in ALL}
        for name, system in systems.items()
    }
    compare = _comparisons(systems, options) if options.compare and len(systems) > 1 else None
    return AnswersSection(answers, compare)


def _comparisons(systems: dict[str, _System], options: AnswerOptions) -> list[Comparison]:
    names = list(systems)
    if options.baseline in systems:
        pairs = [(options.baseline, name) for name in names if name != options.baseline]
    else:
        pairs = list(itertools.combinations(names, 2))
    tests: list[Comparison] = []
    for base, other in pairs:
        ids = {item.sample_id: i for i, item in enumerate(systems[other].items)}
        shared = [(i, ids[item.sample_id]) for i, item in enumerate(systems[base].items)
                  if item.sample_id in ids]  # fmt: skip
        left = np.array([i for i, _ in shared], dtype=np.int64)
        right = np.array([j for _, j in shared], dtype=np.int64)
        for criterion in ALL:
            for g, grader in enumerate(GRADERS):
                a = systems[base].columns[criterion][g].values[left]
                b = systems[other].columns[criterion][g].values[right]
                tests.append(
                    paired_test(
                        a, b, options, baseline=base, run=other, metric=f"{criterion}:{grader}"
                    )
                )
    return tests


def attach(report: Report, section: AnswersSection, adjust: str) -> None:
    """Put the section into ``report``, adjusting the systems' tests (all secondary)
    together with the runs' secondary tests; the headline family stays as it was."""
    report.answers = section.answers
    if section.compare is None:
        return
    runs = report.compare or []
    tests = adjust_families([*runs, *section.compare], adjust)
    if report.compare is not None:
        report.compare = tests[: len(runs)]
    report.answer_compare = tests[len(runs) :]


__all__ = [
    "MIN_HUMAN",
    "AnswerInputs",
    "AnswerOptions",
    "AnswersSection",
    "answers_section",
    "attach",
    "load_answers",
    "parse_thresholds",
]
