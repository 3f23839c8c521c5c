"""One judge pipeline driven by a task: the runner runs any task (not only the passage and
answer tasks it ships with), the tasks share one placeholder filler and repair request,
and the refactor that made them tasks kept every prompt's text (their versions)."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

import httpx

from raglabel.judge.answer_prompt import answers_template
from raglabel.judge.backoff import RetryPolicy
from raglabel.judge.client import ChatClient
from raglabel.judge.prompt import Template, fill
from raglabel.judge.reply import Problem
from raglabel.judge.runner import JudgeRun
from raglabel.judge.task import AnswerTask, PassageTask, Reading, Task
from raglabel.judge.work import AnswerSlot, Outcome, Pair, RunLimits, Slot

from .conftest import BASE_URL, body_of, chat_response

ONE_TRY = RetryPolicy(attempts=1, base_s=0.0, cap_s=0.0)


@dataclass(frozen=True)
class CountingTask:
    """A task no raglabel run asks: name the passage's word count, as a bare number."""

    def prompt(self, slot: Slot) -> str:
        return f"How many words? {slot.pair.passage}"

    def read(self, slot: Slot, content: str) -> Reading | Problem:
        if not content.strip().isdigit():
            return Problem(f"{content!r} is not a number")
        return Reading(min(5, int(content)), "counted")

    def repair(self, slot: Slot, problem: Problem) -> str:
        return f"Only the number, please ({problem.text})."

    def params(self, slot: Slot, base: dict[str, Any]) -> dict[str, Any]:
        return {**base, "max_tokens": 3}

    @property
    def failures_cost(self) -> bool:
        return True

    @property
    def reply(self) -> str:
        return "json"


def slot(n: int, passage: str) -> Slot:
    pair = Pair(n, n, f"q{n}", f"p{n}", "query", passage, "")
    return Slot(pair, "m", 0, f"k{n}", f"t{n}")


async def test_the_runner_runs_any_task() -> None:
    bodies: list[dict[str, Any]] = []
    replies = iter(["two", "2", "3", "many", "lots"])

    async def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(body_of(request))
        return chat_response(next(replies))

    client = ChatClient(BASE_URL, None, transport=httpx.MockTransport(handler))
    outcomes: list[Outcome] = []
    runner = JudgeRun(
        client,
        CountingTask(),
        params={"temperature": 0},
        limits=RunLimits(concurrency=1, retry=ONE_TRY),
        on_outcome=outcomes.append,
        rng=random.Random(1),
    )
    try:
        tally = await runner.run([slot(1, "a b"), slot(2, "a b c"), slot(3, "a b c d")])
    finally:
        await client.aclose()
    assert (tally.ok, tally.failed, tally.repairs) == (2, 1, 2)
    assert [(o.grade, o.repaired) for o in outcomes] == [(2, True), (3, False), (None, True)]
    # The task's own prompt, parameters and repair request went out, unchanged by the pool.
    assert bodies[0]["messages"] == [{"role": "user", "content": "How many words? a b"}]
    assert all(body["max_tokens"] == 3 and body["temperature"] == 0 for body in bodies)
    assert (
        bodies[1]["messages"][-1]["content"] == "Only the number, please ('two' is not a number)."
    )
    # A failure of a task whose failures cost keeps what its two replies took.
    failed = outcomes[-1]
    assert failed.error is not None and failed.error.startswith("wrong shape after one repair")
    assert (failed.prompt_tokens, failed.completion_tokens) == (20, 10)


def test_the_shipped_tasks_are_tasks() -> None:
    passages: Task[Slot] = PassageTask(Template.builtin())
    answers: Task[AnswerSlot] = AnswerTask()
    # Passage failures have always stored no figures, answer failures what they cost.
    assert (passages.failures_cost, answers.failures_cost) == (False, True)


def test_placeholders_are_filled_in_one_pass() -> None:
    # Text put in is never searched again, and a brace name left unfilled stays as written.
    text = fill('{a} and {b}, {c}; {"grade": 1}', {"{a}": "{b}", "{b}": json.dumps("x")})
    assert text == '{b} and "x", {c}; {"grade": 1}'


def test_the_prompts_texts_are_those_files_were_judged_with() -> None:
    # A version names a prompt's exact text and is part of every cache key: a wording
    # change asks every pair and sample again. Change these only with the wording.
    assert Template.builtin().version == "builtin-9fb1af017383"
    assert answers_template().version == "answers-975d5ca06d12"
