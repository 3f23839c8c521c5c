"""What a judge run works through and hands back: slots, outcomes and the running tally.

Kept apart from the HTTP client so storage and the grading app can use these types
without loading httpx.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from raglabel.judge.backoff import RetryPolicy


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
class Outcome:
    slot: Slot
    grade: int | None
    reason: str | None
    raw: str | None  # every reply text received for the slot, the repair's included
    error: str | None
    attempts: int
    repaired: bool
    latency_ms: int | None
    prompt_tokens: int | None
    completion_tokens: int | None

    @property
    def ok(self) -> bool:
        return self.grade is not None


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
            f" {self.failed} failed, {self.retries} retries{eta}"
        )


@dataclass(frozen=True)
class RunLimits:
    concurrency: int = 8
    requests_per_minute: float | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timeout_s: float = 60.0  # per request, the whole exchange
