"""Parsing the judge's reply: the JSON it must hold and the problems it can have."""

from __future__ import annotations

import json
import re

import pytest

from raglabel.judge.prompt import repair_request
from raglabel.judge.reply import MAX_REASON, JudgeReply, Problem, parse_reply


def test_valid_reply_parses() -> None:
    reply = parse_reply('{"grade": 4, "reason": "Directly useful."}')
    assert reply == JudgeReply(grade=4, reason="Directly useful.")


@pytest.mark.parametrize(
    "content",
    [
        '```json\n{"grade": 5, "reason": "ok"}\n```',
        '```\n{"grade": 5, "reason": "ok"}\n```',
        '```JSON\n{"grade": 5, "reason": "ok"}\n```',
        '  \n```json\n{"grade": 5, "reason": "ok"}\n```\n  ',
        '\n{"grade": 5, "reason": "ok"}\n',
    ],
)
def test_code_fenced_or_padded_json_is_accepted(content: str) -> None:
    assert parse_reply(content) == JudgeReply(grade=5, reason="ok")


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("The passage is quite relevant. Grade: 4.", "not valid JSON"),
        ('Sure! {"grade": 4, "reason": "ok"}', "not valid JSON"),
        ('```json\n{"grade": 4, "reason": "ok"}\n```\nHope that helps!', "not valid JSON"),
        ("", "the reply was empty"),
        ("   \n ", "the reply was empty"),
        ("```json\n```", "the reply was empty"),
        ('[{"grade": 4, "reason": "ok"}]', "not an object (got list)"),
        ('"grade 4"', "not an object (got str)"),
        ("4", "not an object (got int)"),
        ('{"grade": 4, "reason": "ok"', "not valid JSON"),
        ("{'grade': 4, 'reason': 'ok'}", "not valid JSON"),
        ('{"reason": "no grade here"}', 'the field "grade" is missing'),
        ('{"grade": 4}', 'the field "reason" is missing'),
        ('{"grade": "4", "reason": "ok"}', 'integer from 1 to 5, got "4"'),
        ('{"grade": 4.0, "reason": "ok"}', "integer from 1 to 5, got 4.0"),
        ('{"grade": 4.5, "reason": "ok"}', "integer from 1 to 5, got 4.5"),
        ('{"grade": true, "reason": "ok"}', "integer from 1 to 5, got true"),
        ('{"grade": null, "reason": "ok"}', "integer from 1 to 5, got null"),
        ('{"grade": 0, "reason": "ok"}', "grade 0 is outside 1..5"),
        ('{"grade": 7, "reason": "ok"}', "grade 7 is outside 1..5"),
        ('{"grade": -1, "reason": "ok"}', "grade -1 is outside 1..5"),
        ('{"grade": 3, "reason": 42}', 'the field "reason" must be a string'),
    ],
)
def test_unusable_replies_are_problems_with_a_helpful_text(content: str, expected: str) -> None:
    result = parse_reply(content)
    assert isinstance(result, Problem), result
    assert expected in result.text
    # The text goes straight into the repair request.
    assert expected in repair_request(result.text)


def test_broken_json_problem_says_where() -> None:
    result = parse_reply('{"grade": 4 "reason": "x"}')
    assert isinstance(result, Problem)
    assert re.search(r"\(character \d+\)", result.text)


def test_extra_keys_are_ignored() -> None:
    reply = parse_reply('{"grade": 2, "reason": "weak", "confidence": 0.3, "notes": [1]}')
    assert reply == JudgeReply(grade=2, reason="weak")


def test_long_reason_is_truncated() -> None:
    reply = parse_reply(json.dumps({"grade": 3, "reason": "x" * 5000}))
    assert isinstance(reply, JudgeReply)
    assert reply.reason == "x" * MAX_REASON
    assert MAX_REASON == 2000
    exact = parse_reply(json.dumps({"grade": 3, "reason": "y" * MAX_REASON}))
    assert isinstance(exact, JudgeReply)
    assert exact.reason == "y" * MAX_REASON


def test_deeply_nested_reply_is_a_problem() -> None:
    assert isinstance(parse_reply("[" * 1000), Problem)
