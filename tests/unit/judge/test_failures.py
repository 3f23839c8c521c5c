"""Failures counted by kind, with an excerpt each, and the run that gives up early when
its first answers all fail the same way (against ``httpx.MockTransport``)."""

from __future__ import annotations

import random
from collections.abc import Callable, Coroutine

import httpx
import pytest

from raglabel.judge.backoff import RetryPolicy
from raglabel.judge.client import ChatClient, ChatError
from raglabel.judge.failures import (
    EARLY_STOP_AFTER,
    Failures,
    early_stop,
    excerpt,
    failure_kind,
    reply_failure,
)
from raglabel.judge.prompt import Template
from raglabel.judge.reply import Problem, parse_reply
from raglabel.judge.runner import JudgeRun
from raglabel.judge.task import PassageTask
from raglabel.judge.work import Outcome, RunLimits, Slot

from .conftest import BASE_URL, chat_response, grade_json
from .test_judge_runner import make_slot

ONE_TRY = RunLimits(concurrency=1, retry=RetryPolicy(attempts=1))


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        ("HTTP 501: Not Implemented", "HTTP 501"),
        ("HTTP 500: Simulated upstream error 500. (attempt 3 of 3)", "HTTP 500"),
        ("HTTP 503", "HTTP 503"),
        ("not JSON after one repair: it is not valid JSON: Expecting value", "not JSON"),
        ("empty reply after one repair: the reply was empty", "empty reply"),
        ('wrong shape after one repair: the field "grade" is missing', "wrong shape"),
        ("out of range after one repair: grade 7 is outside 1..5", "out of range"),
        ("timed out after 0.5 s (attempt 2 of 2)", "timeout"),
        ("cannot connect to http://127.0.0.1:9/v1: refused (attempt 6 of 6)", "cannot connect"),
        ("connection dropped (RemoteProtocolError: closed)", "connection dropped"),
        ("the server sent a body that is not JSON: <html>", "response not JSON"),
        ("the server's JSON has no choices[0].message.content", "no message in the response"),
        ("the reply is over 1 MiB; no judge answer is that long", "response too large"),
        ("unexpected error: ValueError: boom", "unexpected error"),
        # What older raglabel versions stored: counted the same way.
        ("unusable reply after one repair: it is not valid JSON: Expecting value", "not JSON"),
        ("unusable reply after one repair: the reply was empty", "empty reply"),
        ("unusable reply after one repair: chunk 1: grade 7 is outside 1..5", "out of range"),
        ("unusable reply after one repair: chunk 2 is graded twice", "wrong shape"),
    ],
)
def test_every_reason_written_is_counted_by_its_kind(error: str, kind: str) -> None:
    assert failure_kind(error) == kind


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        ("I would rate this a 3 because it helps.", "not JSON"),
        ("", "empty reply"),
        ("[1, 2]", "wrong shape"),
        ('{"score": 3}', "wrong shape"),
        ('{"grade": "3", "reason": "x"}', "wrong shape"),
        ('{"grade": 7, "reason": "x"}', "out of range"),
    ],
)
def test_each_unusable_reply_has_its_kind(reply: str, kind: str) -> None:
    problem = parse_reply(reply)
    assert isinstance(problem, Problem)
    assert problem.kind == kind
    assert failure_kind(reply_failure(problem.kind, problem.text)) == kind


async def test_each_client_error_reason_is_counted_by_its_kind() -> None:
    cases: list[tuple[httpx.Response | Exception, str]] = [
        (httpx.Response(501, json={"error": {"message": "Not Implemented"}}), "HTTP 501"),
        (httpx.Response(400, text="bad request"), "HTTP 400"),
        (httpx.Response(200, text="<html>Bad gateway</html>"), "response not JSON"),
        (httpx.Response(200, json={"choices": []}), "no message in the response"),
        (httpx.ConnectError("[Errno 111] Connection refused"), "cannot connect"),
        (httpx.ReadTimeout("read timed out"), "timeout"),
        (httpx.RemoteProtocolError("peer closed"), "connection dropped"),
    ]
    for answer, kind in cases:

        async def handler(request: httpx.Request, answer: object = answer) -> httpx.Response:
            if isinstance(answer, Exception):
                raise answer
            assert isinstance(answer, httpx.Response)
            return answer

        client = ChatClient(BASE_URL, None, transport=httpx.MockTransport(handler))
        try:
            with pytest.raises(ChatError) as raised:
                await client.complete("m", [{"role": "user", "content": "x"}], {})
        finally:
            await client.aclose()
        assert failure_kind(raised.value.reason) == kind, raised.value.reason


def test_a_body_that_is_not_json_is_quoted_in_the_reason() -> None:
    reason = "the server sent a body that is not JSON: <html><body><h1>502 Bad Gateway</h1>"
    assert failure_kind(reason) == "response not JSON"
    assert "502 Bad Gateway" in excerpt(reason, None)


def test_the_excerpt_is_the_failed_reply_or_the_reason() -> None:
    raw = "first prose\n\n--- repair ---\n\n" + "second   prose\n" * 20
    shown = excerpt("not JSON after one repair: it is not valid JSON", raw)
    assert shown.startswith("second prose second prose")
    assert len(shown) == 100 and shown.endswith("...")
    # No reply to show: the reason, which holds the server's own words.
    assert excerpt("HTTP 501: Not Implemented", None) == "HTTP 501: Not Implemented"
    # A first reply before a failed repair request is not what the HTTP status says.
    assert excerpt("HTTP 500: down", "some prose") == "HTTP 500: down"
    assert excerpt("empty reply after one repair: the reply was empty", "x\n\n--- repair ---\n\n")
    assert (
        excerpt("empty reply after one repair: the reply was empty", "\n\n--- repair ---\n\n ")
        == "(an empty reply)"
    )


def test_failures_count_by_kind_with_one_example_each() -> None:
    failures = Failures()
    for _ in range(3):
        failures.add("HTTP 501: Not Implemented", None)
    failures.add("not JSON after one repair: it is not valid JSON", "I think 4.")
    failures.add("not JSON after one repair: it is not valid JSON", "Maybe 2.")
    assert failures.brief() == "3 HTTP 501, 2 not JSON"
    assert failures.lines() == [
        "  3 HTTP 501, e.g. reason: HTTP 501: Not Implemented",
        "  2 not JSON, e.g. reply: I think 4.",
    ]


def test_early_stop_needs_the_first_answers_all_failed_the_same_way() -> None:
    same = Failures()
    for _ in range(EARLY_STOP_AFTER):
        same.add("HTTP 501: Not Implemented", None)
    why = early_stop(same, ok=0, done=EARLY_STOP_AFTER, planned=27)
    assert why is not None
    assert why.startswith("the first 5 answers all failed the same way (HTTP 501)")
    assert "(e.g. HTTP 501: Not Implemented)" in why and "--base-url" in why
    # A good answer among them, two kinds, fewer answers back, or none left: go on.
    assert early_stop(same, ok=1, done=EARLY_STOP_AFTER, planned=27) is None
    assert early_stop(same, ok=0, done=EARLY_STOP_AFTER - 1, planned=27) is None
    assert early_stop(same, ok=0, done=EARLY_STOP_AFTER, planned=EARLY_STOP_AFTER) is None
    mixed = Failures()
    for i in range(EARLY_STOP_AFTER):
        mixed.add("HTTP 501: x" if i else "timed out after 1 s", None)
    assert early_stop(mixed, ok=0, done=EARLY_STOP_AFTER, planned=27) is None


async def run_all(
    reply: Callable[[], httpx.Response] | None, slots: list[Slot], limits: RunLimits = ONE_TRY
) -> tuple[list[Outcome], JudgeRun[Slot], int]:
    sent = [0]

    async def handler(request: httpx.Request) -> httpx.Response:
        sent[0] += 1
        if reply is None:  # the first answer is good, every later one is prose
            if sent[0] == 1:
                return chat_response(grade_json(4))
            return chat_response("I would rate this a 4.")
        return reply()

    client = ChatClient(BASE_URL, None, transport=httpx.MockTransport(handler))
    outcomes: list[Outcome] = []
    runner = JudgeRun(
        client,
        PassageTask(Template.builtin()),
        params={},
        limits=limits,
        on_outcome=outcomes.append,
        rng=random.Random(1),
    )
    try:
        await runner.run(slots)
    finally:
        await client.aclose()
    return outcomes, runner, sent[0]


async def test_an_endpoint_answering_501_stops_the_run_after_five_answers() -> None:
    def reply() -> httpx.Response:
        return httpx.Response(501, json={"error": {"message": "Not Implemented"}})

    outcomes, runner, sent = await run_all(reply, [make_slot(i) for i in range(27)])
    assert len(outcomes) == EARLY_STOP_AFTER == sent
    assert all(o.error == "HTTP 501: Not Implemented" for o in outcomes)
    tally = runner.tally
    assert tally.failed == 5 and tally.ok == 0
    assert tally.stopped is not None and "(HTTP 501)" in tally.stopped
    assert tally.failures.brief() == "5 HTTP 501"
    assert "5 failed (5 HTTP 501)" in tally.describe()


async def test_prose_replies_stop_the_run_saying_so_with_a_reply() -> None:
    def reply() -> httpx.Response:
        return chat_response("I would rate this a 4 because it is on topic.")

    outcomes, runner, sent = await run_all(reply, [make_slot(i) for i in range(36)])
    assert len(outcomes) == 5 and sent == 10  # each asked once more to repair
    assert all(o.error and o.error.startswith("not JSON after one repair") for o in outcomes)
    stopped = runner.tally.stopped
    assert stopped is not None and "(not JSON)" in stopped
    assert "(e.g. I would rate this a 4 because it is on topic.)" in stopped
    assert "--with-failures" in stopped


async def test_a_good_first_answer_lets_the_run_go_on() -> None:
    outcomes, runner, _ = await run_all(None, [make_slot(i) for i in range(12)])
    assert len(outcomes) == 12
    assert runner.tally.stopped is None
    assert runner.tally.failures.brief() == "11 not JSON"


async def test_concurrent_workers_stop_too_and_keep_what_came_back() -> None:
    def reply() -> httpx.Response:
        return httpx.Response(400, json={"error": {"message": "response_format is not supported"}})

    limits = RunLimits(concurrency=4, retry=RetryPolicy(attempts=1))
    outcomes, runner, sent = await run_all(reply, [make_slot(i) for i in range(40)], limits)
    # The fifth answer back stops it; at most the three others in flight were sent too.
    assert len(outcomes) == 5 and sent <= 8
    assert runner.tally.stopped is not None and "(HTTP 400)" in runner.tally.stopped
    assert "response_format is not supported" in runner.tally.stopped


FINAL_SCORE_PROMPT = (
    '+++\nreply = "final-score"\n+++\nQuery: {query}\n\n{fence}\n{passage}\n{fence}\n'
    "End with the line ##final score: N, N from 0 to 3.\n"
)


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("wrong shape", "score line does not hold a whole number"),
        ("out of range", "not a label of the prompt file's scale"),
        ("empty reply", "replies are empty"),
    ],
)
def test_a_final_score_prompt_is_never_told_to_try_json_mode(kind: str, said: str) -> None:
    # --json-mode is refused with a final-score prompt: advice to use it could not be taken.
    same = Failures()
    for _ in range(EARLY_STOP_AFTER):
        same.add(f"{kind} after one repair: x", "##final score: 9")
    json_why = early_stop(same, ok=0, done=EARLY_STOP_AFTER, planned=9)
    assert json_why is not None and "--json-mode" in json_why
    why = early_stop(same, ok=0, done=EARLY_STOP_AFTER, planned=9, reply="final-score")
    assert why is not None and "--json-mode" not in why
    assert said in why and "##final score: N" in why and "--with-failures" in why
    # A run that stores no replies (a probe) does not point to the export.
    unkept = early_stop(
        same, ok=0, done=EARLY_STOP_AFTER, planned=9, reply="final-score", kept=False
    )
    assert unkept is not None and "export" not in unkept


def test_a_refused_final_score_request_names_only_options_it_can_take() -> None:
    same = Failures()
    for _ in range(EARLY_STOP_AFTER):
        same.add("HTTP 400: bad request", None)
    why = early_stop(same, ok=0, done=EARLY_STOP_AFTER, planned=9, reply="final-score")
    assert why is not None and "(--max-tokens)" in why and "--json-mode" not in why


async def test_a_final_score_run_stopping_on_bad_labels_fits_its_advice() -> None:
    def reply() -> httpx.Response:
        return chat_response("It helps.\n##final score: 7")

    client = ChatClient(BASE_URL, None, transport=httpx.MockTransport(_always(reply)))
    outcomes: list[Outcome] = []
    runner = JudgeRun(
        client,
        PassageTask(Template.from_text(FINAL_SCORE_PROMPT, "p.txt")),
        params={},
        limits=ONE_TRY,
        on_outcome=outcomes.append,
        rng=random.Random(1),
    )
    try:
        await runner.run([make_slot(i) for i in range(9)])
    finally:
        await client.aclose()
    stopped = runner.tally.stopped
    assert stopped is not None and "(out of range)" in stopped
    assert "--json-mode" not in stopped and "not a label of the prompt file's scale" in stopped


def _always(
    reply: Callable[[], httpx.Response],
) -> Callable[[httpx.Request], Coroutine[None, None, httpx.Response]]:
    async def handler(request: httpx.Request) -> httpx.Response:
        return reply()

    return handler
