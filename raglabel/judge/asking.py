"""What the judge asks about one slot, how it reads the reply, and how it asks for a
repair: one small protocol, with one implementation per slot kind (passage slots and
answer slots), so the worker pool in ``runner.py`` serves both unchanged."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Protocol, TypeVar

from raglabel.judge import answer_prompt
from raglabel.judge.answer_reply import parse_chunks
from raglabel.judge.prompt import Template, repair_request
from raglabel.judge.reply import JudgeReply, Problem, parse_reply
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


class Asking(Protocol[S_contra]):
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


@dataclass(frozen=True)
class PassageAsking:
    template: Template

    def prompt(self, slot: Slot) -> str:
        pair = slot.pair
        return self.template.render(pair.query, pair.passage, pair.title)

    def read(self, slot: Slot, content: str) -> Reading | Problem:
        parsed = parse_reply(content)
        if isinstance(parsed, JudgeReply):
            return Reading(parsed.grade, parsed.reason)
        return parsed

    def repair(self, slot: Slot, problem: Problem) -> str:
        return repair_request(problem.text)

    def params(self, slot: Slot, base: dict[str, Any]) -> dict[str, Any]:
        return base


@dataclass(frozen=True)
class AnswerAsking:
    def prompt(self, slot: AnswerSlot) -> str:
        return answer_prompt.render(slot.item, slot.criterion)

    def read(self, slot: AnswerSlot, content: str) -> Reading | Problem:
        if slot.criterion == RANKING:
            chunks = parse_chunks(content, len(slot.item.contexts))
            if isinstance(chunks, Problem):
                return chunks
            return Reading(None, None, chunks)
        parsed = parse_reply(content)
        if isinstance(parsed, JudgeReply):
            return Reading(parsed.grade, parsed.reason)
        return parsed

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
