"""What a judge run works through and hands back: slots, outcomes and the running tally.

Kept apart from the HTTP client so storage and the grading app can use these types
without loading httpx.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from raglabel.judge.backoff import RetryPolicy
from raglabel.judge.failures import Failures
from raglabel.metrics.criteria import missing_input


@dataclass(frozen=True)
class Pair:
    """A (query, passage) to grade, with the row ids storage knows them by."""

    query_row: int
    passage_row: int
    qid: str
    pid: str
    query: str
    passage: str
    title: str

    @property
    def lacks_query(self) -> bool:
        """No query text to show the judge (a project made from runs and qrels only)."""
        return not self.query.strip()

    @property
    def lacks_passage(self) -> bool:
        return not self.passage.strip()

    @property
    def has_text(self) -> bool:
        return not (self.lacks_query or self.lacks_passage)


@dataclass(frozen=True)
class Slot:
    """One answer wanted: a pair, asked of one model, for the ``repeat``-th time."""

    pair: Pair
    model: str
    repeat: int
    cache_key: str
    text_key: str  # the texts the answer is about (see storage.judgments)


@dataclass(frozen=True)
class Chunk:
    """One retrieved context of an answer sample."""

    position: int  # 0-based, in the file's order
    pid: str
    text: str  # as retrieved, else the stored passage's text, else ""
    rank: int | None  # the file's ``ranks`` entry (0 = first), if it gave one


@dataclass(frozen=True)
class AnswerItem:
    """One system's answer sample, with everything a criterion may need."""

    system_row: int
    system: str
    sample_id: str
    query_row: int
    qid: str
    question: str  # the sample's question, else the query's text, else ""
    answer: str  # "" when the system gave none
    reference: str | tuple[str, ...] | None  # a gold answer, or a list of key facts
    contexts: tuple[Chunk, ...]
    # Texts of the passages people graded relevant for the query: what context_recall
    # checks against when there is no reference.
    gold: tuple[str, ...] = ()

    def missing(self, criterion: str) -> str | None:
        """Why ``criterion`` is NA for this sample (see metrics.criteria), or None."""
        has_reference = bool(self.reference)
        if criterion == "context_recall":
            has_reference = has_reference or bool(self.gold)
        return missing_input(
            criterion,
            question=bool(self.question.strip()),
            answer=bool(self.answer.strip()),
            contexts=bool(self.contexts),
            reference=has_reference,
        )

    def evaluated_order(self) -> list[int]:
        """Context positions in the order they are scored: by ``ranks`` when the file gave
        them (ties by position), else as listed."""
        return sorted(
            range(len(self.contexts)),
            key=lambda i: (self.contexts[i].rank if self.contexts[i].rank is not None else i, i),
        )


@dataclass(frozen=True)
class AnswerSlot:
    """One answer wanted about an answer sample: a criterion (or ``ctx_rank_prec``),
    asked of one model, for the ``repeat``-th time."""

    item: AnswerItem
    criterion: str
    model: str
    repeat: int
    cache_key: str
    text_key: str


@dataclass(frozen=True)
class ChunkGrade:
    position: int  # 1-based, as the judge is shown the chunks
    grade: int
    reason: str


@dataclass(frozen=True)
class Outcome:
    slot: Slot | AnswerSlot
    grade: int | None
    reason: str | None
    raw: str | None  # every reply text received for the slot, the repair's included
    error: str | None
    attempts: int
    repaired: bool
    latency_ms: int | None
    prompt_tokens: int | None
    completion_tokens: int | None
    # ctx_rank_prec's reply: one grade per chunk, in position order (no single grade).
    chunks: tuple[ChunkGrade, ...] | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class Tally:
    """What a run has done so far, for progress bars and the closing summary."""

    planned: int
    cached: int = 0
    ok: int = 0
    failed: int = 0
    retries: int = 0
    repairs: int = 0
    in_flight: int = 0
    started: float = field(default_factory=time.monotonic)
    stopped: str | None = None  # why the run stopped early, if it did
    failures: Failures = field(default_factory=Failures)  # why answers failed, by kind

    @property
    def done(self) -> int:
        return self.ok + self.failed

    def rate(self) -> float:
        elapsed = time.monotonic() - self.started
        return self.done / elapsed if elapsed > 0 else 0.0

    def bar(self, width: int = 24) -> str:
        share = self.done / self.planned if self.planned else 1.0
        full = int(share * width)
        return "[" + "#" * full + "-" * (width - full) + "]"

    def describe(self) -> str:
        rate = self.rate()
        left = self.planned - self.done
        eta = f", about {left / rate:.0f} s left" if rate > 0 and left > 0 else ""
        return (
            f"{self.done}/{self.planned} answers, {rate:.1f}/s, {self.ok} graded,"
            f" {self.failed} failed{self.failed_why()}, {self.retries} retries{eta}"
        )

    def failed_why(self) -> str:
        """`` (27 HTTP 501)``: the failures by kind, or nothing when none failed."""
        return f" ({self.failures.brief()})" if self.failures else ""


@dataclass(frozen=True)
class RunLimits:
    concurrency: int = 8
    requests_per_minute: float | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timeout_s: float = 60.0  # per request, the whole exchange
