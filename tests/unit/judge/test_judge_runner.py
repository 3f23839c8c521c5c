"""The judge run: repairs, retries, rate limits, concurrency, stopping and cancelling.

Everything runs against ``httpx.MockTransport``; no socket is opened and the slowest
test sleeps a fraction of a second.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import re
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from raglabel.judge.backoff import RetryPolicy
from raglabel.judge.client import ChatClient
from raglabel.judge.prompt import Template
from raglabel.judge.runner import JudgeRun
from raglabel.judge.task import PassageTask
from raglabel.judge.work import Outcome, Pair, RunLimits, Slot, Tally

from .conftest import BASE_URL, FENCE_RE, Handler, body_of, chat_response, grade_json

FAST = RetryPolicy(base_s=0.001, cap_s=0.01)


def make_slot(i: int, *, query: str = "", passage: str = "", title: str = "") -> Slot:
    pair = Pair(
        query_row=i,
        passage_row=100 + i,
        qid=f"q{i}",
        pid=f"p{i}",
        query=query or f"what is item {i}",
        passage=passage or f"Passage number {i} describes item {i} in some detail.",
        title=title,
    )
    return Slot(
        pair=pair,
        model="judge-model",
        repeat=0,
        cache_key=f"key-{i}",
        text_key=f"text-{i}",
    )


def prompt_of(request: httpx.Request) -> str:
    content = body_of(request)["messages"][0]["content"]
    assert isinstance(content, str)
    return content


def slot_number(request: httpx.Request) -> int:
    found = re.search(r"Passage number (\d+)", prompt_of(request))
    assert found is not None
    return int(found.group(1))


def now() -> float:
    return asyncio.get_running_loop().time()


@dataclass
class Recorder:
    """What a mock server saw: request bodies and the loop time each one arrived."""

    bodies: list[dict[str, Any]] = field(default_factory=list)
    starts: list[float] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0

    def arrive(self, request: httpx.Request) -> None:
        self.bodies.append(body_of(request))
        self.starts.append(now())

    @property
    def count(self) -> int:
        return len(self.bodies)


@dataclass
class Result:
    tally: Tally
    outcomes: list[Outcome]
    progress: list[Tally]


async def drive(
    handler: Handler,
    slots: list[Slot],
    *,
    limits: RunLimits | None = None,
    cached: int = 0,
) -> Result:
    client = ChatClient(BASE_URL, "sk-test", transport=httpx.MockTransport(handler))
    outcomes: list[Outcome] = []
    progress: list[Tally] = []
    runner = JudgeRun(
        client,
        PassageTask(Template.builtin()),
        params={"temperature": 0},
        limits=limits or RunLimits(concurrency=4, retry=FAST),
        on_outcome=outcomes.append,
        on_progress=progress.append,
        rng=random.Random(7),
    )
    try:
        tally = await runner.run(slots, cached=cached)
    finally:
        await client.aclose()
    return Result(tally, outcomes, progress)


async def test_all_ok_run_gives_one_outcome_per_slot() -> None:
    seen = Recorder()

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.arrive(request)
        n = slot_number(request)
        return chat_response(grade_json(n % 5 + 1, f"slot {n}"))

    slots = [make_slot(i) for i in range(7)]
    result = await drive(handler, slots, cached=3)
    assert len(result.outcomes) == 7
    by_key = {o.slot.cache_key: o for o in result.outcomes}
    assert set(by_key) == {s.cache_key for s in slots}
    for i, slot in enumerate(slots):
        outcome = by_key[slot.cache_key]
        assert outcome.slot == slot
        assert outcome.ok
        assert outcome.grade == i % 5 + 1
        assert outcome.reason == f"slot {i}"
        assert outcome.raw == grade_json(i % 5 + 1, f"slot {i}")
        assert outcome.error is None
        assert outcome.attempts == 1
        assert outcome.repaired is False
        assert (outcome.prompt_tokens, outcome.completion_tokens) == (10, 5)
        assert outcome.latency_ms is not None
    tally = result.tally
    assert (tally.planned, tally.cached, tally.ok, tally.failed) == (7, 3, 7, 0)
    assert (tally.retries, tally.repairs, tally.in_flight, tally.stopped) == (0, 0, 0, None)
    assert result.progress
    assert result.progress[-1].done == 7
    assert seen.count == 7
    for body in seen.bodies:
        assert body["model"] == "judge-model"
        assert body["temperature"] == 0
        assert len(body["messages"]) == 1
        assert body["messages"][0]["role"] == "user"


async def test_prompt_sent_holds_query_passage_and_title() -> None:
    seen = Recorder()

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.arrive(request)
        return chat_response(grade_json(3))

    slot = make_slot(0, query="who built it", passage="Passage number 0 says Eiffel.", title="T")
    await drive(handler, [slot])
    content = seen.bodies[0]["messages"][0]["content"]
    assert content == Template.builtin().render(
        "who built it", "Passage number 0 says Eiffel.", "T", fence=FENCE_RE.findall(content)[0]
    )


async def test_empty_run_sends_nothing() -> None:
    seen = Recorder()

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.arrive(request)
        return chat_response(grade_json(3))

    result = await drive(handler, [])
    assert seen.count == 0
    assert result.outcomes == []
    assert (result.tally.planned, result.tally.done, result.tally.stopped) == (0, 0, None)


async def test_prose_then_json_is_repaired() -> None:
    seen = Recorder()
    prose = "This passage is fairly relevant, I would say a 4."

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.arrive(request)
        if seen.count == 1:
            return chat_response(prose)
        return chat_response(grade_json(4, "Mostly answers it."))

    result = await drive(handler, [make_slot(0)])
    (outcome,) = result.outcomes
    assert outcome.ok
    assert outcome.grade == 4
    assert outcome.reason == "Mostly answers it."
    assert outcome.repaired is True
    assert outcome.attempts == 2
    assert outcome.error is None
    assert outcome.raw == prose + "\n\n--- repair ---\n\n" + grade_json(4, "Mostly answers it.")
    assert (outcome.prompt_tokens, outcome.completion_tokens) == (20, 10)
    assert result.tally.repairs == 1
    assert result.tally.ok == 1
    first, second = seen.bodies
    assert second["model"] == first["model"]
    messages = second["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[0] == first["messages"][0]
    assert messages[1]["content"] == prose
    assert "not valid JSON" in messages[2]["content"]
    assert messages[2]["content"].startswith("That answer could not be used:")


async def test_two_bad_replies_fail_the_slot() -> None:
    seen = Recorder()

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.arrive(request)
        if seen.count == 1:
            return chat_response("I think it is relevant.")
        return chat_response('{"grade": 9, "reason": "very"}')

    result = await drive(handler, [make_slot(0)])
    (outcome,) = result.outcomes
    assert not outcome.ok
    assert outcome.grade is None
    assert outcome.reason is None
    assert outcome.error is not None
    assert "after one repair" in outcome.error
    assert "grade 9 is outside 1..5" in outcome.error
    assert outcome.repaired is True
    assert outcome.attempts == 2
    assert outcome.raw is not None
    assert "I think it is relevant." in outcome.raw
    assert '"grade": 9' in outcome.raw
    assert seen.count == 2
    assert (result.tally.ok, result.tally.failed, result.tally.repairs) == (0, 1, 1)


async def test_429_then_ok_waits_for_retry_after() -> None:
    seen = Recorder()

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.arrive(request)
        if seen.count == 1:
            return httpx.Response(429, json={"error": "slow down"}, headers={"Retry-After": "0.05"})
        return chat_response(grade_json(5))

    result = await drive(handler, [make_slot(0)])
    (outcome,) = result.outcomes
    assert outcome.ok
    assert outcome.grade == 5
    assert outcome.attempts == 2
    assert result.tally.retries == 1
    assert seen.count == 2
    assert seen.starts[1] - seen.starts[0] >= 0.05


async def test_retry_after_pauses_every_worker() -> None:
    seen = Recorder()
    told: list[float] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.arrive(request)
        if seen.count == 1:
            told.append(now())
            return httpx.Response(429, headers={"Retry-After": "0.08"})
        await asyncio.sleep(0.005)
        return chat_response(grade_json(3))

    result = await drive(handler, [make_slot(i) for i in range(6)], limits=RunLimits(2, None, FAST))
    assert result.tally.ok == 6
    later = [start for start in seen.starts if start > told[0]]
    assert later
    assert min(later) >= told[0] + 0.08 - 1e-3


async def test_retry_after_beyond_the_longest_wait_stops_the_run() -> None:
    # Closed for an hour: failing slot after slot would hit the server once per slot.
    seen = Recorder()

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.arrive(request)
        return httpx.Response(429, headers={"Retry-After": "3600"})

    policy = RetryPolicy(base_s=0.001, cap_s=0.01, longest_wait_s=60)
    slots = [make_slot(i) for i in range(50)]
    result = await drive(handler, slots, limits=RunLimits(4, None, policy))
    assert result.outcomes == []
    assert result.tally.stopped is not None
    assert "asks to wait 3600 s (Retry-After), more than 60 s" in result.tally.stopped
    assert seen.count <= 4  # one request per worker at most, not one per slot


async def test_repeated_500_fails_with_the_reason() -> None:
    seen = Recorder()

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.arrive(request)
        return httpx.Response(500, json={"error": {"message": "model overloaded"}})

    policy = RetryPolicy(attempts=3, base_s=0.001, cap_s=0.01)
    result = await drive(handler, [make_slot(0), make_slot(1)], limits=RunLimits(1, None, policy))
    assert len(result.outcomes) == 2
    for outcome in result.outcomes:
        assert not outcome.ok
        assert outcome.grade is None
        assert outcome.raw is None
        assert outcome.attempts == 3
        assert outcome.error == "HTTP 500: model overloaded (attempt 3 of 3)"
    assert seen.count == 6
    assert result.tally.retries == 4
    assert (result.tally.failed, result.tally.stopped) == (2, None)


async def test_400_fails_only_that_slot_without_retrying() -> None:
    seen = Recorder()

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.arrive(request)
        if slot_number(request) == 1:
            return httpx.Response(400, json={"error": {"message": "context too long"}})
        return chat_response(grade_json(2))

    limits = RunLimits(1, None, FAST)
    result = await drive(handler, [make_slot(i) for i in range(3)], limits=limits)
    by_number = {o.slot.pair.qid: o for o in result.outcomes}
    assert by_number["q1"].error == "HTTP 400: context too long"
    assert by_number["q1"].attempts == 1
    assert by_number["q0"].ok
    assert by_number["q2"].ok
    assert seen.count == 3
    assert result.tally.retries == 0
    assert result.tally.stopped is None


async def test_401_stops_the_run_and_sends_nothing_more() -> None:
    seen = Recorder()

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.arrive(request)
        return httpx.Response(401, json={"error": {"message": "Invalid API key"}})

    limits = RunLimits(1, None, FAST)
    result = await drive(handler, [make_slot(i) for i in range(5)], limits=limits)
    assert seen.count == 1
    assert result.outcomes == []
    assert result.tally.stopped is not None
    assert "HTTP 401" in result.tally.stopped
    assert "refused the API key" in result.tally.stopped
    assert result.tally.in_flight == 0


async def test_401_with_several_workers_stops_them_all() -> None:
    seen = Recorder()

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.arrive(request)
        await asyncio.sleep(0.01)
        return httpx.Response(403)

    result = await drive(handler, [make_slot(i) for i in range(20)])
    assert seen.count <= 4
    assert result.outcomes == []
    assert result.tally.stopped is not None
    assert "HTTP 403" in result.tally.stopped
    await asyncio.sleep(0.03)
    assert seen.count <= 4


async def test_unreachable_server_stops_the_run() -> None:
    seen = Recorder()

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.arrive(request)
        raise httpx.ConnectError("[Errno 111] Connection refused")

    policy = RetryPolicy(attempts=3, base_s=0.001, cap_s=0.01)
    result = await drive(
        handler, [make_slot(i) for i in range(5)], limits=RunLimits(1, None, policy)
    )
    assert seen.count == 3
    assert result.outcomes == []
    assert result.tally.stopped is not None
    assert "no request has reached the server yet" in result.tally.stopped
    assert "cannot connect to http://judge.test/v1/chat/completions" in result.tally.stopped


async def test_connect_errors_after_a_reply_fail_slots_but_do_not_stop() -> None:
    seen = Recorder()

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.arrive(request)
        if seen.count == 1:
            return chat_response(grade_json(4))
        raise httpx.ConnectError("[Errno 111] Connection refused")

    policy = RetryPolicy(attempts=2, base_s=0.001, cap_s=0.01)
    result = await drive(
        handler, [make_slot(i) for i in range(3)], limits=RunLimits(1, None, policy)
    )
    assert [o.ok for o in result.outcomes] == [True, False, False]
    assert result.tally.stopped is None
    assert seen.count == 5


async def test_connect_error_then_success_is_retried() -> None:
    seen = Recorder()

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.arrive(request)
        if seen.count == 1:
            raise httpx.ConnectError("refused")
        return chat_response(grade_json(4))

    result = await drive(handler, [make_slot(0)])
    (outcome,) = result.outcomes
    assert outcome.ok
    assert outcome.attempts == 2
    assert result.tally.retries == 1


async def test_connect_timeouts_with_no_reply_stop_the_run() -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectTimeout("connect timed out")

    policy = RetryPolicy(attempts=2, base_s=0.001, cap_s=0.01)
    result = await drive(
        handler, [make_slot(i) for i in range(3)], limits=RunLimits(1, None, policy)
    )
    assert result.tally.stopped is not None
    assert result.outcomes == []


async def test_degenerate_reply_fails_the_slot_not_the_run() -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        return chat_response("[" * 2000)

    result = await drive(handler, [make_slot(0), make_slot(1)])
    assert [o.ok for o in result.outcomes] == [False, False]


async def test_concurrency_limit_is_respected() -> None:
    seen = Recorder()

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.arrive(request)
        seen.in_flight += 1
        seen.max_in_flight = max(seen.max_in_flight, seen.in_flight)
        try:
            await asyncio.sleep(0.01)
        finally:
            seen.in_flight -= 1
        return chat_response(grade_json(3))

    result = await drive(
        handler, [make_slot(i) for i in range(12)], limits=RunLimits(3, None, FAST)
    )
    assert result.tally.ok == 12
    assert seen.max_in_flight == 3
    assert max(t.in_flight for t in result.progress) <= 3
    assert result.tally.in_flight == 0


async def test_requests_per_minute_spaces_request_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = Recorder()

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.arrive(request)
        return chat_response(grade_json(3))

    # The limiter's own schedule, read where it sleeps: when the requests arrive depends
    # also on how busy the machine is, which a spacing check must not (a loaded CI host
    # once delivered the first request late and the second on time: a 0.0449 s gap).
    planned: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(delay: float) -> None:
        planned.append(asyncio.get_running_loop().time() + delay)
        await real_sleep(delay)

    limits = RunLimits(4, 1200, FAST)  # one request every 0.05 s
    monkeypatch.setattr("raglabel.judge.runner.asyncio.sleep", sleep)
    result = await drive(handler, [make_slot(i) for i in range(4)], limits=limits)
    assert result.tally.ok == 4
    # The first goes at once; each later one is planned a whole interval after the last.
    assert len(planned) == 3
    gaps = [b - a for a, b in itertools.pairwise(planned)]
    assert gaps == pytest.approx([0.05, 0.05], abs=1e-4)
    # And none arrived before its planned time.
    starts = sorted(seen.starts)
    assert all(start >= plan - 1e-4 for start, plan in zip(starts[1:], planned, strict=True))


def runner_on(
    handler: Callable[[httpx.Request], Coroutine[None, None, httpx.Response]],
    concurrency: int,
    outcomes: list[Outcome],
) -> tuple[ChatClient, JudgeRun[Slot]]:
    client = ChatClient(BASE_URL, None, transport=httpx.MockTransport(handler))
    runner = JudgeRun(
        client,
        PassageTask(Template.builtin()),
        params={"temperature": 0},
        limits=RunLimits(concurrency, None, FAST),
        on_outcome=outcomes.append,
    )
    return client, runner


async def test_cancelled_run_keeps_finished_outcomes() -> None:
    outcomes: list[Outcome] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(0.02)
        return chat_response(grade_json(4))

    client, runner = runner_on(handler, 2, outcomes)
    slots = [make_slot(i) for i in range(40)]
    try:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(runner.run(slots), timeout=0.09)
    finally:
        await client.aclose()
    handed = list(outcomes)
    assert 2 <= len(handed) < 40
    assert all(o.ok and o.grade == 4 for o in handed)
    assert len({o.slot.cache_key for o in handed}) == len(handed)
    assert runner.tally.in_flight == 0
    assert runner.tally.ok == len(handed)
    await asyncio.sleep(0.05)
    assert outcomes == handed


async def test_task_cancel_stops_promptly() -> None:
    outcomes: list[Outcome] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(0.02)
        return chat_response(grade_json(2))

    client, runner = runner_on(handler, 3, outcomes)
    task = asyncio.create_task(runner.run([make_slot(i) for i in range(60)]))
    await asyncio.sleep(0.07)
    task.cancel()
    try:
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, timeout=1.0)
    finally:
        await client.aclose()
    handed = list(outcomes)
    assert 3 <= len(handed) < 60
    assert all(o.grade == 2 for o in handed)
    await asyncio.sleep(0.05)
    assert outcomes == handed


async def test_should_stop_keeps_requests_in_flight_and_takes_no_new_slot() -> None:
    seen = Recorder()
    outcomes: list[Outcome] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.arrive(request)
        await asyncio.sleep(0.01)
        return chat_response(grade_json(3))

    client = ChatClient(BASE_URL, None, transport=httpx.MockTransport(handler))
    runner = JudgeRun(
        client,
        PassageTask(Template.builtin()),
        params={"temperature": 0},
        limits=RunLimits(2, None, FAST),
        on_outcome=outcomes.append,
        should_stop=lambda: len(outcomes) >= 2,
    )
    try:
        tally = await asyncio.wait_for(runner.run([make_slot(i) for i in range(10)]), 2.0)
    finally:
        await client.aclose()
    # Every request sent became an outcome: nothing in flight was dropped.
    assert 2 <= len(outcomes) <= 3
    assert seen.count == len(outcomes)
    assert all(o.ok for o in outcomes)
    assert (tally.done, tally.in_flight) == (len(outcomes), 0)
