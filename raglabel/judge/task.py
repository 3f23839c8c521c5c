"""Judge tasks: what the judge asks about one slot, how it reads the reply, and how it
asks once for a repair.

A task is a prompt template, a reply model and the request parameters it needs.
Passages are one task; answer samples are another, which asks per criterion with the
one-grade reply and grades ``ctx_rank_prec``'s chunks with the chunk reply. The worker
pool in ``runner.py`` runs any task unchanged; storage turns its outcomes into rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Protocol, TypeVar

from raglabel.judge import answer_prompt
from raglabel.judge.prompt import Template
from raglabel.judge.prompt_header import FINAL_SCORE, JSON, PromptHeader
from raglabel.judge.reply import (
    JudgeReply,
    Problem,
    parse_chunks,
    parse_final_score,
    parse_label,
    parse_reply,
)
from raglabel.judge.work import AnswerSlot, ChunkGrade, Slot
from raglabel.metrics.criteria import RANKING


@dataclass(frozen=True)
class Reading:
    """A usable reply: a grade and its reason, or (for ctx_rank_prec) the chunk grades."""

    grade: int | None
    reason: str | None
    chunks: tuple[ChunkGrade, ...] | None = None


#: Reply tokens a ctx_rank_prec call may use at least: a frame, then room per chunk
#: for its position, grade and a one-line reason.
CHUNKS_REPLY_FLOOR: Final = 64
CHUNK_REPLY_ROOM: Final = 48

S_contra = TypeVar("S_contra", bound=Slot | AnswerSlot, contravariant=True)


class Task(Protocol[S_contra]):
    @property
    def failures_cost(self) -> bool:
        """Whether a failed slot records the time and tokens its replies took."""
        ...

    @property
    def reply(self) -> str:
        """The reply shape the prompt asks for (``prompt_header.JSON`` or
        ``FINAL_SCORE``): what a run's advice on failed replies must fit."""
        ...

    def prompt(self, slot: S_contra) -> str:
        """The user message of the first request, with a fresh fence."""
        ...

    def read(self, slot: S_contra, content: str) -> Reading | Problem:
        """The reply read strictly, or what is wrong with it."""
        ...

    def repair(self, slot: S_contra, problem: Problem) -> str:
        """The follow-up message that asks once for a usable reply."""
        ...

    def params(self, slot: S_contra, base: dict[str, Any]) -> dict[str, Any]:
        """The request parameters for this slot, from the run's own."""
        ...


def _one_grade(content: str) -> Reading | Problem:
    parsed = parse_reply(content)
    if isinstance(parsed, JudgeReply):
        return Reading(parsed.grade, parsed.reason)
    return parsed


def _labelled(header: PromptHeader, content: str) -> Reading | Problem:
    """The grade a reply to a prompt with a header gives: its label through the header's
    map. The reason stored says the label and the grade it became, so a reader sees the
    model's own answer beside raglabel's grade."""
    if header.reply == FINAL_SCORE:
        found = parse_final_score(content, header.scale)
    else:
        found = parse_label(content, header.scale)
    if isinstance(found, Problem):
        return found
    label, said = found
    grade = header.grade_of(label)
    given = f"label {label} (grade {grade})"
    return Reading(grade, f"{given}: {said}" if said else given)


@dataclass(frozen=True)
class PassageTask:
    """Grade one (query, passage) pair 1-5 under ``template``: by the grade its reply
    gives, or by the label it gives when the template has a header."""

    template: Template

    @property
    def failures_cost(self) -> bool:
        # Passage failures have always stored no figures; the file format keeps that.
        return False

    @property
    def reply(self) -> str:
        return self.template.header.reply

    def prompt(self, slot: Slot) -> str:
        pair = slot.pair
        return self.template.render(pair.query, pair.passage, pair.title)

    def read(self, slot: Slot, content: str) -> Reading | Problem:
        header = self.template.header
        return _labelled(header, content) if header.declared else _one_grade(content)

    def repair(self, slot: Slot, problem: Problem) -> str:
        return self.template.repair(problem.text)

    def params(self, slot: Slot, base: dict[str, Any]) -> dict[str, Any]:
        return base


@dataclass(frozen=True)
class AnswerTask:
    """Grade one answer sample 1-5 on one criterion, or grade each of its chunks
    (``ctx_rank_prec``), with the answer prompts (``answer_prompt.py``)."""

    @property
    def failures_cost(self) -> bool:
        # An answer run reports what it cost: replies that could not be read were paid for.
        return True

    @property
    def reply(self) -> str:
        return JSON  # the answer prompts are raglabel's own, all asking for JSON

    def prompt(self, slot: AnswerSlot) -> str:
        return answer_prompt.render(slot.item, slot.criterion)

    def read(self, slot: AnswerSlot, content: str) -> Reading | Problem:
        if slot.criterion != RANKING:
            return _one_grade(content)
        chunks = parse_chunks(content, len(slot.item.contexts))
        if isinstance(chunks, Problem):
            return chunks
        return Reading(None, None, chunks)

    def params(self, slot: AnswerSlot, base: dict[str, Any]) -> dict[str, Any]:
        """The run's parameters; a chunk grading may write past a reply limit meant for
        one grade, so its ``max_tokens`` is raised to what its chunks need."""
        limit = base.get("max_tokens")
        if slot.criterion != RANKING or not isinstance(limit, int):
            return base
        needed = CHUNKS_REPLY_FLOOR + CHUNK_REPLY_ROOM * len(slot.item.contexts)
        return base if limit >= needed else {**base, "max_tokens": needed}

    def repair(self, slot: AnswerSlot, problem: Problem) -> str:
        return answer_prompt.repair_request(slot.criterion, problem.text, len(slot.item.contexts))
