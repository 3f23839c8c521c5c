"""Grading RAG answers in the app: one query's answers, each criterion's grades, the
judge's suggestions and the sentences marked unsupported.

Every write goes through the answer log (``answer_event``) and is committed before the
method returns, as passage grades are, and put on the session's undo stack, which
covers both kinds in the order they were made (``GradingSession.undo``).

Unsupported sentences belong to the faithfulness grade: their character spans are stored
with the faithfulness grade event. A mark made before the answer has a faithfulness grade
waits (it is shown as waiting, and lives only in this session) and is saved with that
grade. A mark changed after grading writes a new grade event with the same grade and
the new spans, so undo puts the marks back. Clearing the faithfulness grade clears its
marks too; undoing the clear brings both back.

Blind (the default), an annotator sees only their own grades, and the judge's grade for
a criterion stays hidden until they have graded that criterion: a failure of the judge
is shown as such, since it tells nothing about the grade.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from raglabel.formats.sentences import Span, sentence_spans
from raglabel.judge.flags import flag_sample
from raglabel.judge.work import AnswerItem
from raglabel.metrics.criteria import CRITERIA, NA_REASONS
from raglabel.session.timing import Timing
from raglabel.session.undo import UndoEntry, UndoStack
from raglabel.storage.answer_items import answer_items
from raglabel.storage.answers import (
    AnswerRecorded,
    answered_queries,
    record_answer,
    standing_answer_grades,
    undo_last_answer,
)
from raglabel.storage.events import AnswerTarget, Event, EventKind
from raglabel.storage.judgments import JudgedAnswer, judged_answers
from raglabel.storage.labels import resolve
from raglabel.storage.project import Project

#: (system, sample id): one answer.
AnswerKey = tuple[str, str]
FAITHFULNESS = "faithfulness"


@dataclass(frozen=True)
class JudgeView:
    """The judge's suggestion for one criterion of one answer.

    ``grade`` is the lower median of every good answer over models and repeats; None
    when every answer failed, or while it is hidden (blind and not yet graded by the
    annotator). ``error`` is the latest failure's reason when no answer is good.
    """

    models: tuple[str, ...]
    answers: int  # good answers behind the grade
    failed: int
    hidden: bool
    grade: int | None = None
    low: int | None = None
    high: int | None = None
    reason: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class CriterionView:
    criterion: str
    own: int | None  # this annotator's grade
    grade: int | None  # the grade in view: own when blind, else resolved over annotators
    graders: int  # annotators whose grade the one in view resolves (1 or 0 when blind)
    missing: str | None  # why the criterion is NA for this answer (a key of NA_REASONS)
    judge: JudgeView | None  # None: the judge has not answered about it

    @property
    def gradable(self) -> bool:
        return self.missing is None

    @property
    def missing_text(self) -> str:
        return NA_REASONS.get(self.missing or "", "")


@dataclass(frozen=True)
class AnswerView:
    """One system's answer to the query, as the Answers view shows it."""

    item: AnswerItem
    sentences: tuple[Span, ...]
    criteria: tuple[CriterionView, ...]  # in CRITERIA order
    unsupported: tuple[Span, ...]  # the annotator's marks: saved, or waiting (``waiting``)
    waiting: bool  # the marks wait for a faithfulness grade
    # Text aimed at the grader in the answer or a context (judge.flags.flag_sample):
    # the judge's grades of this answer deserve a human look.
    flags: tuple[str, ...] = ()

    @property
    def key(self) -> AnswerKey:
        return (self.item.system, self.item.sample_id)

    def criterion(self, name: str) -> CriterionView:
        return next(c for c in self.criteria if c.criterion == name)

    def ungraded(self) -> list[str]:
        """Criteria this annotator can grade and has not."""
        return [c.criterion for c in self.criteria if c.gradable and c.own is None]


@dataclass(frozen=True)
class AnswerChange:
    """What an answer action did: the item it touched and its own standing grade after."""

    query: str  # the query's external id
    system: str
    sample_id: str
    criterion: str
    kind: str  # grade, clear, undo, or marks (a grade event that only changed the marks)
    grade: int | None
    unsupported: tuple[Span, ...] | None
    event_id: int


@dataclass
class _Loaded:
    query: str
    items: dict[AnswerKey, AnswerItem]
    judge: dict[tuple[str, str, str], list[JudgedAnswer]]
    own: dict[tuple[str, str, str], tuple[int, tuple[Span, ...] | None]]
    others: dict[tuple[str, str, str], list[int]]  # every annotator's grade (not blind)


def toggled(marks: Sequence[Span], sentence: Span) -> tuple[Span, ...]:
    """``marks`` with ``sentence`` marked, or unmarked when a mark already covers any of
    it (a mark imported from a file need not match a sentence exactly)."""
    start, end = sentence
    overlapping = [span for span in marks if span[0] < end and start < span[1]]
    if overlapping:
        return tuple(span for span in marks if span not in overlapping)
    return tuple(sorted([*marks, sentence]))


@dataclass
class AnswerGrading:
    """The answers side of a grading session: same project, annotator and blindness, and
    the same undo stack, all handed in by the session."""

    project: Project = field(repr=False, compare=False)
    annotator: str
    blind: bool
    undo_stack: UndoStack = field(repr=False, compare=False)
    _loaded: _Loaded | None = None
    _queries: list[str] | None = None
    # Each visited query's samples: they change only on import, or (the gold passages
    # that stand in for a missing reference) when a passage grade changes.
    _items: dict[str, list[AnswerItem]] = field(default_factory=dict)
    # Marks that wait for their answer's faithfulness grade.
    _waiting: dict[AnswerKey, tuple[Span, ...]] = field(default_factory=dict)

    def switch_annotator(self, name: str) -> None:
        """Grade as ``name``: read everything again on the next look, and drop the marks
        waiting for a grade (the other annotator's)."""
        self.annotator = name
        self.passages_changed()
        self._queries = None
        self._waiting.clear()

    def reread(self) -> None:
        """Read the grades and the judge's answers again on the next look."""
        self._loaded = None

    def passages_changed(self) -> None:
        """A passage grade changed: the passages graded relevant, which stand in for a
        missing reference, may have too. Waiting marks stay."""
        self._loaded = None
        self._items.clear()

    def queries(self) -> list[str]:
        """External ids of the queries some system answered, in the project's order."""
        if self._queries is None:
            self._queries = answered_queries(self.project.conn)
        return self._queries

    def waiting_marks(self) -> int:
        """Answers whose marks still wait for a faithfulness grade (lost on quitting)."""
        return sum(1 for marks in self._waiting.values() if marks)

    # -- reading -----------------------------------------------------------------------

    def answers(self, query: str) -> list[AnswerView]:
        """Every system's answer to ``query``, by system name."""
        loaded = self._load(query)
        return [self._view(loaded, key) for key in loaded.items]

    def view(self, key: AnswerKey) -> AnswerView:
        loaded = self._loaded
        assert loaded is not None and key in loaded.items
        return self._view(loaded, key)

    def _load(self, query: str) -> _Loaded:
        if self._loaded is not None and self._loaded.query == query:
            return self._loaded
        conn = self.project.conn
        items = self._items.get(query)
        if items is None:
            items = self._items[query] = answer_items(conn, queries=[query])
        keyed = {(item.system, item.sample_id): item for item in items}
        judge = judged_answers(conn, items, CRITERIA)
        grades = standing_answer_grades(conn, samples=set(keyed))
        own: dict[tuple[str, str, str], tuple[int, tuple[Span, ...] | None]] = {}
        others: dict[tuple[str, str, str], list[int]] = {}
        for (system, sample, criterion, who), (grade, spans, _) in grades.items():
            if who == self.annotator:
                own[system, sample, criterion] = (grade, spans)
            others.setdefault((system, sample, criterion), []).append(grade)
        self._loaded = _Loaded(query, keyed, judge, own, others)
        return self._loaded

    def _view(self, loaded: _Loaded, key: AnswerKey) -> AnswerView:
        item = loaded.items[key]
        blind = self.blind
        criteria = []
        for criterion in CRITERIA:
            slot = (*key, criterion)
            own = loaded.own.get(slot, (None, None))[0]
            everyone = loaded.others.get(slot, [])
            grade = own if blind or not everyone else resolve(everyone)
            judged = loaded.judge.get(slot)
            criteria.append(
                CriterionView(
                    criterion,
                    own,
                    grade,
                    (own is not None) if blind else len(everyone),
                    item.missing(criterion),
                    None if not judged else _judge_view(judged, hidden=blind and own is None),
                )
            )
        saved = loaded.own.get((*key, FAITHFULNESS))
        if saved is not None:
            marks, waiting = saved[1] or (), False
        else:
            marks = self._waiting.get(key, ())
            waiting = bool(marks)
        flags = flag_sample(item.question, item.answer, [chunk.text for chunk in item.contexts])
        return AnswerView(
            item,
            tuple(sentence_spans(item.answer)),
            tuple(criteria),
            marks,
            waiting,
            tuple(flags),
        )

    # -- writing -----------------------------------------------------------------------

    def grade(
        self, key: AnswerKey, criterion: str, grade: int, timing: Timing | None = None
    ) -> AnswerChange:
        """Grade one criterion of one answer; a faithfulness grade carries the marks."""
        view = self._gradable(key, criterion)
        marks = view.unsupported if criterion == FAITHFULNESS and view.unsupported else None
        done = self._write(key, criterion, "grade", grade=grade, marks=marks, timing=timing)
        if criterion == FAITHFULNESS:
            self._waiting.pop(key, None)
        return done

    def clear(self, key: AnswerKey, criterion: str, timing: Timing | None = None) -> AnswerChange:
        """Clear this annotator's grade (of faithfulness: with its marks). Nothing is
        written, and ValueError says why, when there is no grade to clear."""
        view = self.view(key)
        if view.criterion(criterion).own is None:
            raise ValueError(f"you have not graded {criterion} of this answer")
        return self._write(key, criterion, "clear", timing=timing)

    def toggle_mark(
        self, key: AnswerKey, sentence: int, timing: Timing | None = None
    ) -> AnswerChange | None:
        """Mark sentence ``sentence`` (an index into the view's sentences) unsupported,
        or unmark it. With a faithfulness grade standing, a new grade event with the same
        grade and the new marks is written (its change returned); else the marks wait
        for that grade and nothing is written (None)."""
        view = self._gradable(key, FAITHFULNESS)
        if not 0 <= sentence < len(view.sentences):
            raise ValueError("no sentence there")
        marks = toggled(view.unsupported, view.sentences[sentence])
        own = view.criterion(FAITHFULNESS).own
        if own is None:
            self._waiting[key] = marks
            return None
        done = self._write(
            key, FAITHFULNESS, "grade", grade=own, marks=marks or None, timing=timing
        )
        return replace(done, kind="marks")

    def undo(self) -> AnswerChange | None:
        """Revert this annotator's latest answer action, on whatever query it was."""
        done = undo_last_answer(self.project, self.annotator, origin="app")
        if done is None:
            return None
        self._apply(done)
        self._waiting.pop((done.system, done.sample_id), None)
        return _change(done)

    def _gradable(self, key: AnswerKey, criterion: str) -> AnswerView:
        if criterion not in CRITERIA:
            raise ValueError(f"unknown criterion {criterion!r}")
        view = self.view(key)
        found = view.criterion(criterion)
        if not found.gradable:
            raise ValueError(f"{criterion} is NA for this answer: {found.missing_text}")
        return view

    def _write(
        self,
        key: AnswerKey,
        criterion: str,
        kind: EventKind,
        *,
        grade: int | None = None,
        marks: tuple[Span, ...] | None = None,
        timing: Timing | None = None,
    ) -> AnswerChange:
        target = AnswerTarget(key[0], key[1], criterion)
        done = record_answer(
            self.project,
            Event(
                target,
                self.annotator,
                kind,
                grade=grade,
                unsupported=marks,
                origin="app",
                shown_at=None if timing is None else timing.shown_at,
                active_ms=None if timing is None else timing.active_ms,
            ),
        )
        self.undo_stack.push(UndoEntry(target, done.event_id))
        self._apply(done)
        return _change(done)

    def _apply(self, done: AnswerRecorded) -> None:
        """Bring the loaded query in step with the log after one event."""
        loaded = self._loaded
        if loaded is None or loaded.query != done.query:
            return
        slot = (done.system, done.sample_id, done.criterion)
        if done.grade is None:
            loaded.own.pop(slot, None)
        else:
            loaded.own[slot] = (done.grade, done.unsupported)
        if not self.blind:
            grades = standing_answer_grades(
                self.project.conn, samples={(done.system, done.sample_id)}
            )
            loaded.others[slot] = [
                grade
                for (system, sample, criterion, _), (grade, _, _) in grades.items()
                if (system, sample, criterion) == slot
            ]


def _change(done: AnswerRecorded) -> AnswerChange:
    return AnswerChange(
        done.query,
        done.system,
        done.sample_id,
        done.criterion,
        done.kind,
        done.grade,
        done.unsupported,
        done.event_id,
    )


def _judge_view(judged: list[JudgedAnswer], *, hidden: bool) -> JudgeView:
    good = [j for j in judged if j.ok and j.grade is not None]
    failed = [j for j in judged if not j.ok]
    models = tuple(sorted({j.model for j in (good or failed)}))
    error = failed[-1].error if failed and not good else None
    if hidden or not good:
        return JudgeView(models, len(good), len(failed), hidden and bool(good), error=error)
    grades = [j.grade for j in good if j.grade is not None]
    grade = resolve(grades)
    # The reason shown is one given for the grade shown, never another answer's.
    reasons = [j.reason for j in good if j.grade == grade and j.reason]
    return JudgeView(
        models,
        len(good),
        len(failed),
        False,
        grade=grade,
        low=min(grades),
        high=max(grades),
        reason=reasons[-1] if reasons else None,
    )


def next_ungraded(
    views: Sequence[AnswerView], key: AnswerKey, criterion: str
) -> tuple[AnswerKey, str] | None:
    """Where a grade key moves after grading ``criterion`` of answer ``key``: the next
    criterion of the same answer the annotator has not graded (after this one, then
    from the first), else the first such criterion of the next answer with one (going
    round to the answers before). None when every gradable criterion has a grade."""
    order = [view.key for view in views]
    if key not in order:
        return None
    start = order.index(key)
    here = views[start].ungraded()
    if here:
        later = [c for c in here if CRITERIA.index(c) > CRITERIA.index(criterion)]
        return key, (later or here)[0]
    for view in [*views[start + 1 :], *views[:start]]:
        left = view.ungraded()
        if left:
            return view.key, left[0]
    return None
