"""Reading a judge's reply, strictly: each task's reply model in one place.

A passage or an answer criterion is graded by one JSON object with an integer grade in
1..5 and a reason (``parse_reply``). The chunks of an answer sample (``ctx_rank_prec``)
are graded by ``{"chunks": [{"position": int, "grade": int, "reason": str}, ...]}`` with
exactly one entry per chunk, positions 1..n, grades 1..5 and a reason for every grade
below 5 (``parse_chunks``). A prompt file with a header (``prompt_header.py``) asks for
a label of its own scale instead: in that JSON object (``parse_label``), or on the
reply's last line ``##final score: N`` (``parse_final_score``). Anything else (for chunks
also a missing, repeated or non-existent position, or a count that differs from the
chunks shown) is a problem described in a few words. The caller asks the model once to
repair it, and records a failure if the second answer is no better; a grade is never
guessed from prose.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from raglabel.judge.failures import EMPTY, NO_FINAL_SCORE, NOT_JSON, OUT_OF_RANGE, WRONG_SHAPE
from raglabel.judge.prompt_header import NO_HEADER, Scale
from raglabel.judge.work import ChunkGrade

MAX_REASON = 2000
#: What a final-score reply's score line says: ``##final score: N``, in any case, with
#: or without spaces around its words and colon; the line holds nothing else.
FINAL_SCORE_LINE = re.compile(r"##[ \t]*final[ \t]*score[ \t]*:(.*)", re.IGNORECASE)
_WHOLE_NUMBER = re.compile(r"[+-]?[0-9]+")
#: A line that only opens or closes a Markdown code fence (```, ~~~, with an info string).
_FENCE_LINE = re.compile(r"(?:`{3,}|~{3,})[\w+.-]*")


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


class LabelReply(BaseModel):
    """The JSON reply of a prompt file with a header: its grade is a label of the file's
    scale, made a grade by the file's map."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    grade: StrictInt
    reason: StrictStr


def parse_label(content: str, scale: Scale) -> tuple[int, str] | Problem:
    """The label and reason of a JSON reply to a prompt with a header."""
    data = load_object(content)
    if isinstance(data, Problem):
        return data
    try:
        reply = LabelReply.model_validate(data)
    except ValidationError as exc:
        return _describe(exc, data, scale)
    if reply.grade not in scale:
        return Problem(f"grade {reply.grade} is outside {scale.span}", OUT_OF_RANGE)
    return reply.grade, reply.reason[:MAX_REASON]


def parse_final_score(content: str, scale: Scale) -> tuple[int, str] | Problem:
    """The label a final-score reply gives on its last score line, and what it said
    before that line (white space folded; often nothing). A line that only mentions a
    final score is not a score line; a score line that does not hold a whole number on
    the scale is a problem, even when an earlier one did: the last one is the answer."""
    if not content.strip():
        return Problem("the reply was empty", EMPTY)
    lines = content.split("\n")
    found = [
        (at, match)
        for at, line in enumerate(lines)
        if (match := FINAL_SCORE_LINE.fullmatch(line.strip())) is not None
    ]
    if not found:
        return Problem(
            f'no line of it reads "##final score: N" with N the label ({scale.span})',
            NO_FINAL_SCORE,
        )
    at, match = found[-1]
    value = match.group(1).strip()
    if _WHOLE_NUMBER.fullmatch(value) is None:
        shown = json.dumps(value[:40]) if value else "nothing"
        return Problem(f"the final score must be a whole number ({scale.span}), got {shown}")
    label = int(value)
    if label not in scale:
        return Problem(f"final score {label} is outside {scale.span}", OUT_OF_RANGE)
    # A model that wraps its answer in a code fence leaves the fence's opening line
    # (and any fence it closed before the score line) among the words before it:
    # markup, not something it said.
    words = [line for line in lines[:at] if _FENCE_LINE.fullmatch(line.strip()) is None]
    said = " ".join(" ".join(words).split())
    return label, said[:MAX_REASON]


def unfence(body: str) -> str:
    """The inside of one Markdown code fence around the whole reply, which many models
    add even when told not to; the JSON inside must still be the entire content."""
    if body.startswith("```") and body.endswith("```") and len(body) >= 6:
        inner = body[3:-3]
        newline = inner.find("\n")
        if newline >= 0 and inner[:newline].strip().lower() in ("", "json"):
            return inner[newline + 1 :].strip()
    return body


def _describe(
    exc: ValidationError, data: dict[str, object], scale: Scale = NO_HEADER.scale
) -> Problem:
    first = exc.errors()[0]
    field = ".".join(str(part) for part in first["loc"]) or "reply"
    if first["type"] == "missing":
        return Problem(f'the field "{field}" is missing')
    value = data.get(field)
    if field == "grade" and _is_int(value):
        return Problem(f"grade {value} is outside {scale.span}", OUT_OF_RANGE)
    if field == "grade":
        return Problem(f"grade must be an {scale.wanted}, got {json.dumps(value)[:40]}")
    return Problem(f'the field "{field}" must be a string')


def parse_chunks(content: str, count: int) -> tuple[ChunkGrade, ...] | Problem:
    """One grade per chunk, in position order, or what is wrong with the reply."""
    data = load_object(content)
    if isinstance(data, Problem):
        return data
    entries = data.get("chunks")
    if entries is None:
        return Problem('the field "chunks" is missing')
    if not isinstance(entries, list):
        return Problem(f'"chunks" must be a list, got {json.dumps(entries)[:40]}')
    grades: dict[int, ChunkGrade] = {}
    for number, entry in enumerate(entries, 1):
        read = _entry(entry, number, count)
        if isinstance(read, Problem):
            return read
        if read.position in grades:
            return Problem(f"chunk {read.position} is graded twice")
        grades[read.position] = read
    missing = [p for p in range(1, count + 1) if p not in grades]
    if missing or len(entries) != count:
        shown = ", ".join(map(str, missing[:10])) + (", ..." if len(missing) > 10 else "")
        lacking = f"chunk {shown} has" if len(missing) == 1 else f"chunks {shown} have"
        return Problem(
            f"{count} chunks were shown but {len(entries)} were graded"
            + (f"; {lacking} no grade" if missing else "")
        )
    return tuple(grades[p] for p in range(1, count + 1))


def _entry(entry: object, number: int, count: int) -> ChunkGrade | Problem:
    where = f"entry {number} of chunks"
    if not isinstance(entry, dict):
        return Problem(f"{where} is not an object")
    position, grade, reason = entry.get("position"), entry.get("grade"), entry.get("reason")
    if not _is_int(position):
        return Problem(f'{where}: "position" must be an integer, got {_show(position)}')
    assert isinstance(position, int)
    if not 1 <= position <= count:
        return Problem(f"{where}: there is no chunk {position} (chunks are 1 to {count})")
    if not _is_int(grade):
        return Problem(
            f"chunk {position}: grade must be an integer from 1 to 5, got {_show(grade)}"
        )
    assert isinstance(grade, int)
    if not 1 <= grade <= 5:
        return Problem(f"chunk {position}: grade {grade} is outside 1..5", OUT_OF_RANGE)
    if reason is None:
        reason = ""
    if not isinstance(reason, str):
        return Problem(f'chunk {position}: "reason" must be a string')
    if grade < 5 and not reason.strip():
        return Problem(f"chunk {position} is graded {grade} without a reason")
    return ChunkGrade(position, grade, reason[:MAX_REASON])


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _show(value: object) -> str:
    return "nothing" if value is None else json.dumps(value)[:40]
