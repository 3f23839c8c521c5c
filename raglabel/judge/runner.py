"""Driving a judge run: a pool of workers, each getting one answer slot at a time.

A slot is one answer wanted: about (query, passage) for a passage run (``Slot``), about
(answer sample, criterion) for an answer run (``AnswerSlot``), of one model, for one
repeat. A worker renders the prompt, sends it (retrying what is worth retrying), reads
the reply strictly, asks once for a repair, and hands the outcome to ``on_outcome``,
which the caller persists. What to ask and how to read the reply is the run's task
(``task.py``); the pool, retries, pauses and limits are the same for every task. An
outcome is either a grade or a recorded failure; a cancelled run (Ctrl-C) hands over
everything that finished and leaves the rest for the next run.
"""

from __future__ import annotations

import asyncio
import random
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from raglabel.judge.client import ChatClient, ChatError, Completion
from raglabel.judge.failures import REPAIR_SEPARATOR, early_stop, reply_failure
from raglabel.judge.task import Reading, Task
from raglabel.judge.work import AnswerSlot, Outcome, RunLimits, Slot, Tally

S = TypeVar("S", bound=Slot | AnswerSlot)


class JudgeStoppedError(Exception):
    """The endpoint cannot serve this run at all (bad key, wrong URL, unreachable)."""


class _SlotFailedError(Exception):
    def __init__(self, reason: str, attempts: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.attempts = attempts


class JudgeRun(Generic[S]):
    def __init__(
        self,
        client: ChatClient,
        task: Task[S],
        *,
        params: dict[str, Any],
        limits: RunLimits,
        on_outcome: Callable[[Outcome], None],
        on_progress: Callable[[Tally], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
        rng: random.Random | None = None,
        keeps_replies: bool = True,
    ) -> None:
        self.client = client
        self.task = task
        self.params = params
        self.limits = limits
        self.on_outcome = on_outcome
        self.on_progress = on_progress
        # Asked before each new slot: a way to stop from another thread, letting the
        # requests in flight finish and be kept.
        self.should_stop = should_stop or (lambda: False)
        self.rng = rng or random.Random()
        # Whether ``on_outcome`` stores failed replies where ``raglabel export`` shows
        # them: an early stop's advice points there only then.
        self.keeps_replies = keeps_replies
        self._gate = asyncio.Lock()
        self._next_send = 0.0
        self._paused_until = 0.0
        self._answered = False  # any HTTP response at all: the endpoint is reachable
        self.tally = Tally(0)

    async def run(self, slots: Sequence[S], cached: int = 0) -> Tally:
        self.tally = Tally(len(slots), cached=cached)
        queue = deque(slots)
        self._progress()
        workers = [
            asyncio.create_task(self._worker(queue))
            for _ in range(max(1, min(self.limits.concurrency, len(slots))))
        ]
        try:
            await asyncio.gather(*workers)
        except JudgeStoppedError as exc:
            self.tally.stopped = str(exc)
        finally:
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
        self._progress()
        return self.tally

    async def _worker(self, queue: deque[S]) -> None:
        while queue and self.tally.stopped is None and not self.should_stop():
            slot = queue.popleft()
            self.tally.in_flight += 1
            try:
                outcome = await self._answer(slot)
            except JudgeStoppedError:
                raise
            except Exception as exc:
                # Whatever a strange reply or server does to this slot, the run goes on
                # and the slot is recorded as failed, to be tried again next run.
                reason = self.client.redact(f"unexpected error: {type(exc).__name__}: {exc}")
                outcome = self._failed(slot, reason[:500], [], 0)
            finally:
                self.tally.in_flight -= 1
            if outcome.ok:
                self.tally.ok += 1
            else:
                self.tally.failed += 1
                self.tally.failures.add(outcome.error or "", outcome.raw)
            self.on_outcome(outcome)
            self._progress()
            t = self.tally
            why = early_stop(
                t.failures,
                t.ok,
                t.done,
                t.planned,
                reply=self.task.reply,
                kept=self.keeps_replies,
            )
            if why is not None:
                # Said here, not only when ``run`` catches it: a worker that has not
                # yielded since must not take another slot. The answers back are kept
                # (``on_outcome`` has them); those in flight are cancelled with the
                # rest, to be asked by the next run.
                self.tally.stopped = why
                raise JudgeStoppedError(why)

    async def _answer(self, slot: S) -> Outcome:
        prompt = self.task.prompt(slot)
        params = self.task.params(slot, self.params)
        messages = [{"role": "user", "content": prompt}]
        replies: list[str] = []
        attempts = 0
        latency = prompt_tokens = completion_tokens = 0
        while True:
            try:
                completion, used = await self._send(slot.model, messages, params)
            except _SlotFailedError as exc:
                spent = (latency, prompt_tokens, completion_tokens)
                return self._failed(slot, exc.reason, replies, attempts + exc.attempts, spent)
            attempts += used
            latency += completion.latency_ms
            prompt_tokens += completion.prompt_tokens or 0
            completion_tokens += completion.completion_tokens or 0
            replies.append(self.client.redact(completion.content))
            parsed = self.task.read(slot, completion.content)
            if isinstance(parsed, Reading):
                return Outcome(
                    slot,
                    parsed.grade,
                    parsed.reason,
                    _joined(replies),
                    None,
                    attempts,
                    len(replies) > 1,
                    latency,
                    prompt_tokens or None,
                    completion_tokens or None,
                    parsed.chunks,
                )
            if len(replies) > 1:
                reason = reply_failure(parsed.kind, parsed.text)
                spent = (latency, prompt_tokens, completion_tokens)
                return self._failed(slot, reason, replies, attempts, spent)
            self.tally.repairs += 1
            messages = [
                *messages,
                {"role": "assistant", "content": completion.content},
                {"role": "user", "content": self.task.repair(slot, parsed)},
            ]

    def _failed(
        self,
        slot: S,
        reason: str,
        replies: list[str],
        attempts: int,
        spent: tuple[int, int, int] | None = None,
    ) -> Outcome:
        raw = _joined(replies) if replies else None
        latency = prompt_tokens = completion_tokens = None
        if spent is not None and self.task.failures_cost:
            latency, prompt_tokens, completion_tokens = (n or None for n in spent)
        return Outcome(
            slot,
            None,
            None,
            raw,
            reason,
            attempts,
            len(replies) > 1,
            latency,
            prompt_tokens,
            completion_tokens,
        )

    async def _send(
        self, model: str, messages: list[dict[str, str]], params: dict[str, Any]
    ) -> tuple[Completion, int]:
        policy = self.limits.retry
        for attempt in range(1, policy.attempts + 1):
            await self._wait_turn()
            try:
                completion = await self.client.complete(model, messages, params)
            except ChatError as exc:
                self._answered = self._answered or not exc.connect
                if exc.fatal:
                    raise JudgeStoppedError(exc.reason) from None
                last = attempt == policy.attempts
                if not exc.retry or last:
                    if last and not self._answered:
                        raise JudgeStoppedError(
                            f"{exc.reason}; no request has reached the server yet"
                        ) from None
                    tries = f" (attempt {attempt} of {policy.attempts})" if exc.retry else ""
                    raise _SlotFailedError(exc.reason + tries, attempt) from None
                if exc.wait is not None and exc.wait > policy.longest_wait_s:
                    # The whole endpoint is closed for that long: failing slot after slot
                    # would only hammer it. Stop; the next run picks up from here.
                    raise JudgeStoppedError(
                        f"{exc.reason}; the server asks to wait {exc.wait:.0f} s (Retry-After),"
                        f" more than {policy.longest_wait_s:.0f} s: run again later"
                    ) from None
                if self.should_stop():
                    stopped = f"{exc.reason} (stopped before retrying)"
                    raise _SlotFailedError(stopped, attempt) from None
                self.tally.retries += 1
                self._progress()
                delay = policy.delay(attempt, exc.wait, self.rng)
                if exc.wait is not None:
                    # A rate limit speaks for the whole endpoint: every worker holds off.
                    loop = asyncio.get_running_loop()
                    self._paused_until = max(self._paused_until, loop.time() + exc.wait)
                await asyncio.sleep(delay)
                continue
            self._answered = True
            return completion, attempt
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _wait_turn(self) -> None:
        """Hold a request back while the endpoint asked for a pause, and space requests
        out under a requests-per-minute limit."""
        loop = asyncio.get_running_loop()
        async with self._gate:
            now = loop.time()
            start = max(now, self._next_send)
            if self._paused_until > now:
                # Spread out the workers a pause held, so they do not all knock at once.
                start = max(start, self._paused_until + self.rng.uniform(0, 0.5))
            rpm = self.limits.requests_per_minute
            if rpm:
                self._next_send = start + 60.0 / rpm
        wait = start - loop.time()
        if wait > 0:
            await asyncio.sleep(wait)

    def _progress(self) -> None:
        if self.on_progress is not None:
            self.on_progress(self.tally)


def _joined(replies: list[str]) -> str:
    # The repair's reply follows the first, so a reviewer sees both.
    return REPAIR_SEPARATOR.join(replies)
