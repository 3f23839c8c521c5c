"""The judge run over answer slots, against the loopback chat server: every (answer,
criterion) ends with a grade (or chunk grades) or a failure with its reason, whatever
the server does; the passage task and the answer task run in one worker pool."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pytest

from raglabel.judge.backoff import RetryPolicy
from raglabel.judge.client import ChatClient
from raglabel.judge.prompt import Template
from raglabel.judge.runner import JudgeRun
from raglabel.judge.task import AnswerTask, PassageTask, Task
from raglabel.judge.work import (
    AnswerItem,
    AnswerSlot,
    Chunk,
    ChunkGrade,
    Outcome,
    Pair,
    RunLimits,
    Slot,
    Tally,
)
from raglabel.metrics.criteria import RANKING

if TYPE_CHECKING:
    from chat_server import ChatServer

FAST = RetryPolicy(attempts=3, base_s=0.001, cap_s=0.01)


@dataclass(frozen=True)
class Case:
    """One slot's script: the faults the server plays, and how the slot must end."""

    criterion: str
    faults: str
    grade: int | None  # the grade it ends with; None: a failure (or chunk grades)
    error: str | None = None  # a part of the failure's reason
    repaired: bool = False


CHUNK_GRADES = (5, 3, 1)
CASES: dict[str, Case] = {
    "good": Case("answer_relevancy", "", 4),
    "fenced": Case("faithfulness", "fenced", 4),
    "prose-once": Case("context_recall", "nonjson", 4, repaired=True),
    "prose-twice": Case("answer_relevancy", "nonjson,nonjson", None, "not valid JSON"),
    "range-once": Case("faithfulness", "range", 4, repaired=True),
    "range-twice": Case("context_recall", "range,range", None, "grade 7 is outside 1..5"),
    "cut-json": Case("answer_relevancy", "badjson,nonjson", None, "after one repair"),
    "rate-limit": Case("answer_relevancy", "429@0.2", 4),
    "errors": Case("faithfulness", "500,503", 4),
    "errors-out": Case("faithfulness", "500,502,503", None, "HTTP 503"),
    "dropped": Case("answer_relevancy", "drop,truncated", 4),
    "slow-once": Case("answer_relevancy", "slow@3", 4),
    "slow-always": Case("answer_relevancy", "slow@3,slow@3,slow@3", None, "timed out"),
    "chunks": Case(RANKING, "", None),
    "chunks-fenced": Case(RANKING, "fenced", None),
    "chunks-fewer-once": Case(RANKING, "fewer", None, repaired=True),
    "chunks-fewer": Case(RANKING, "fewer,fewer", None, "3 chunks were shown but 2 were graded"),
    "chunks-more": Case(RANKING, "more,more", None, "there is no chunk 4"),
    "chunks-repeat": Case(RANKING, "repeat,repeat", None, "chunk 1 is graded twice"),
    "chunks-noreason": Case(RANKING, "noreason,noreason", None, "without a reason"),
    "chunks-range": Case(RANKING, "range,range", None, "grade 7 is outside 1..5"),
    "chunks-prose": Case(RANKING, "nonjson,nonjson", None, "not valid JSON"),
    "chunks-429": Case(RANKING, "429@0.1,500", None),
}


def answer_item(name: str, case: Case) -> AnswerItem:
    marker = f" [[fault:{name}:{case.faults}]]" if case.faults else ""
    answer = f"Answer of {name}. [[grade=4]]" + ("" if case.criterion == RANKING else marker)
    contexts = [f"Context {i} of {name}." for i in range(3)]
    if case.criterion == RANKING:
        # The chunk prompt shows no answer: the script rides on the first chunk.
        contexts[0] += f" [[chunks={','.join(map(str, CHUNK_GRADES))}]]{marker}"
    chunks = tuple(Chunk(i, f"{name}-d{i}", text, None) for i, text in enumerate(contexts))
    return AnswerItem(
        1, "sys", name, 1, "q1", f"Question of {name}?", answer, "The reference.", chunks
    )


def answer_slot(name: str, case: Case) -> AnswerSlot:
    return AnswerSlot(answer_item(name, case), case.criterion, "m", 0, f"key-{name}", "texts")


@dataclass
class Result:
    tally: Tally
    outcomes: list[Outcome]


async def drive(
    server: ChatServer,
    slots: Sequence[Slot | AnswerSlot],
    *,
    concurrency: int = 8,
    timeout_s: float = 0.5,
    params: dict[str, object] | None = None,
    task: Task[Any] | None = None,
) -> Result:
    client = ChatClient(server.base_url, None, timeout_s=timeout_s)
    outcomes: list[Outcome] = []
    runner: JudgeRun[Any] = JudgeRun(
        client,
        task or AnswerTask(),
        params=params or {"temperature": 0},
        limits=RunLimits(concurrency=concurrency, retry=FAST, timeout_s=timeout_s),
        on_outcome=outcomes.append,
        rng=random.Random(7),
    )
    try:
        tally = await runner.run(slots)
    finally:
        await client.aclose()
    return Result(tally, outcomes)


@pytest.fixture
def server(chat_server: type[ChatServer]) -> Iterator[ChatServer]:
    with chat_server() as srv:
        yield srv


def by_name(outcomes: list[Outcome]) -> dict[str, Outcome]:
    found: dict[str, Outcome] = {}
    for outcome in outcomes:
        assert isinstance(outcome.slot, AnswerSlot)
        name = outcome.slot.item.sample_id
        assert name not in found, f"{name} ended twice"
        found[name] = outcome
    return found


def no_nan(outcome: Outcome) -> None:
    for value in (outcome.grade, outcome.latency_ms, outcome.prompt_tokens):
        assert value is None or (isinstance(value, int) and not math.isnan(value))


async def test_every_answer_slot_ends_graded_or_failed_with_its_reason(
    server: ChatServer,
) -> None:
    slots: list[Slot | AnswerSlot] = [answer_slot(name, case) for name, case in CASES.items()]
    result = await drive(server, slots)
    outcomes = by_name(result.outcomes)
    assert set(outcomes) == set(CASES)
    failures = {name for name, case in CASES.items() if case.error is not None}
    assert result.tally.failed == len(failures)
    assert result.tally.ok == len(CASES) - len(failures)
    for name, case in CASES.items():
        outcome = outcomes[name]
        no_nan(outcome)
        if case.error is not None:
            assert not outcome.ok, name
            assert outcome.error is not None and case.error in outcome.error, (name, outcome)
            assert outcome.grade is None and outcome.chunks is None
            continue
        assert outcome.ok, (name, outcome.error)
        assert outcome.repaired == case.repaired, name
        if case.criterion == RANKING:
            assert outcome.grade is None and outcome.reason is None
            assert outcome.chunks == tuple(
                ChunkGrade(i, g, f"Stub grade {g}.") for i, g in enumerate(CHUNK_GRADES, 1)
            )
        else:
            assert outcome.grade == case.grade and outcome.chunks is None
    # The rate-limited slot's retry waited for its Retry-After.
    first, second = [r.received_at for r in server.requests if "rate-limit" in r.keys][:2]
    assert second - first >= 0.2
    # A failure that got replies records what they cost, like a success.
    assert outcomes["prose-twice"].prompt_tokens is not None
    assert (
        outcomes["prose-twice"].raw is not None and "--- repair ---" in outcomes["prose-twice"].raw
    )


async def test_a_bad_chunk_reply_gets_a_chunk_shaped_repair_request(server: ChatServer) -> None:
    case = CASES["chunks-fewer-once"]
    result = await drive(server, [answer_slot("chunks-fewer-once", case)])
    assert result.tally.ok == 1 and result.tally.repairs == 1
    first, repair = (r.body for r in server.requests)
    assert len(first["messages"]) == 1
    follow_up = repair["messages"]
    assert [m["role"] for m in follow_up] == ["user", "assistant", "user"]
    assert json.loads(follow_up[1]["content"])["chunks"][-1]["position"] == 2
    assert "3 chunks were shown but 2 were graded" in follow_up[2]["content"]
    assert "numbered 1 to 3" in follow_up[2]["content"]


async def test_one_pool_runs_the_passage_task_and_the_answer_task(server: ChatServer) -> None:
    pair = Pair(1, 2, "q1", "p1", "what is it", "A passage. [[grade=2]]", "")
    passage = Slot(pair, "m", 0, "pk", "pt")
    answer = answer_slot("good", CASES["good"])
    chunks = answer_slot("chunks", CASES["chunks"])
    passages = await drive(server, [passage], task=PassageTask(Template.builtin()))
    answers = await drive(server, [answer, chunks])
    assert (passages.tally.ok, answers.tally.ok) == (1, 2)
    outcomes = passages.outcomes + answers.outcomes
    grades = {type(o.slot).__name__ + str(o.grade): o for o in outcomes}
    assert set(grades) == {"Slot2", "AnswerSlot4", "AnswerSlotNone"}
    prompts = [r.body["messages"][0]["content"] for r in server.requests]
    assert sum(p.startswith("You grade how useful one passage") for p in prompts) == 1
    assert sum("Criterion: answer_relevancy." in p for p in prompts) == 1
    assert sum("Chunk 3 of 3:" in p for p in prompts) == 1


async def test_concurrency_is_held_for_answer_slots(chat_server: type[ChatServer]) -> None:
    slots: list[Slot | AnswerSlot] = [
        answer_slot(f"s{i}", Case("answer_relevancy", "", 4)) for i in range(12)
    ]
    with chat_server(latency=0.05) as srv:
        result = await drive(srv, slots, concurrency=3)
        assert srv.max_in_flight <= 3
    assert result.tally.ok == 12


async def test_should_stop_leaves_the_rest_for_the_next_run(server: ChatServer) -> None:
    slots: list[AnswerSlot] = [
        answer_slot(f"s{i}", Case("answer_relevancy", "", 4)) for i in range(6)
    ]
    client = ChatClient(server.base_url, None)
    seen: list[Outcome] = []
    stop: Callable[[], bool] = lambda: len(seen) >= 2  # noqa: E731 -- read on each slot
    runner = JudgeRun(
        client,
        AnswerTask(),
        params={},
        limits=RunLimits(concurrency=1, retry=FAST),
        on_outcome=seen.append,
        should_stop=stop,
    )
    try:
        tally = await runner.run(slots)
    finally:
        await client.aclose()
    assert tally.done == 2 and len(seen) == 2


async def test_a_chunk_grading_gets_the_reply_room_its_chunks_need(server: ChatServer) -> None:
    many = answer_item("many", Case(RANKING, "", None))
    chunks = tuple(Chunk(i, f"d{i}", f"Chunk text {i}.", None) for i in range(10))
    wide = AnswerSlot(replace(many, contexts=chunks), RANKING, "m", 0, "k1", "t1")
    narrow = answer_slot("chunks", CASES["chunks"])
    plain = answer_slot("good", CASES["good"])
    result = await drive(server, [wide, narrow, plain], params={"max_tokens": 256})
    assert result.tally.ok == 3
    sent = sorted(r.body["max_tokens"] for r in server.requests)
    # 10 chunks need 64 + 48 x 10 = 544; 3 chunks fit in 256, as does one grade.
    assert sent == [256, 256, 544]
