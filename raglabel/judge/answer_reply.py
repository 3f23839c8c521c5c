"""Reading the judge's reply about the chunks of an answer sample (``ctx_rank_prec``).

Strictly ``{"chunks": [{"position": int, "grade": int, "reason": str}, ...]}`` with
exactly one entry per chunk, positions 1..n, grades 1..5 and a reason for every grade
below 5. A missing, repeated or non-existent position, or a count that differs from the
chunks shown, is a problem to repair once and then a recorded failure: a chunk's grade
is never guessed. (A criterion's reply is the passage reply, read by ``reply.py``.)
"""

from __future__ import annotations

import json

from raglabel.judge.failures import OUT_OF_RANGE
from raglabel.judge.reply import MAX_REASON, Problem, load_object
from raglabel.judge.work import ChunkGrade


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
