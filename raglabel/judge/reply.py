"""Reading a judge's reply: strictly one JSON object with an integer grade in 1..5.

Anything else is a problem described in a few words. The caller asks the model once to
repair it, and records a failure if the second answer is no better; a grade is never
guessed from prose.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from raglabel.judge.failures import EMPTY, NOT_JSON, OUT_OF_RANGE, WRONG_SHAPE

MAX_REASON = 2000


class JudgeReply(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    grade: StrictInt = Field(ge=1, le=5, description="The utility grade, 1 (junk) to 5.")
    reason: StrictStr = Field(description="One sentence on why.")


@dataclass(frozen=True)
class Problem:
    text: str
    kind: str = WRONG_SHAPE  # see raglabel.judge.failures: how failures are counted


def load_object(content: str) -> dict[str, object] | Problem:
    """The one JSON object a reply must be (a code fence around it tolerated)."""
    body = unfence(content.strip())
    if not body:
        return Problem("the reply was empty", EMPTY)
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        return Problem(f"it is not valid JSON: {exc.msg} (character {exc.pos})", NOT_JSON)
    except RecursionError:
        # A model stuck repeating "[" nests deeper than the parser can follow.
        return Problem("it is not valid JSON: nested too deeply", NOT_JSON)
    if not isinstance(data, dict):
        return Problem(f"it is JSON but not an object (got {type(data).__name__})")
    return data


def parse_reply(content: str) -> JudgeReply | Problem:
    data = load_object(content)
    if isinstance(data, Problem):
        return data
    try:
        reply = JudgeReply.model_validate(data)
    except ValidationError as exc:
        return _describe(exc, data)
    if len(reply.reason) > MAX_REASON:
        reply = JudgeReply(grade=reply.grade, reason=reply.reason[:MAX_REASON])
    return reply


def unfence(body: str) -> str:
    """The inside of one Markdown code fence around the whole reply, which many models
    add even when told not to; the JSON inside must still be the entire content."""
    if body.startswith("```") and body.endswith("```") and len(body) >= 6:
        inner = body[3:-3]
        newline = inner.find("\n")
        if newline >= 0 and inner[:newline].strip().lower() in ("", "json"):
            return inner[newline + 1 :].strip()
    return body


def _describe(exc: ValidationError, data: dict[str, object]) -> Problem:
    first = exc.errors()[0]
    field = ".".join(str(part) for part in first["loc"]) or "reply"
    if first["type"] == "missing":
        return Problem(f'the field "{field}" is missing')
    value = data.get(field)
    if field == "grade" and isinstance(value, int) and not isinstance(value, bool):
        return Problem(f"grade {value} is outside 1..5", OUT_OF_RANGE)
    if field == "grade":
        return Problem(f"grade must be an integer from 1 to 5, got {json.dumps(value)[:40]}")
    return Problem(f'the field "{field}" must be a string')
