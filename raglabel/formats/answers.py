"""Answer files: a RAG system's answers with the contexts it retrieved, in five layouts.

Each sample is recognised by its fields (see ``FORMATS``); a file holds one format.
A field whose value is empty (an empty answer, no contexts, no reference) is kept as
missing, so the criteria that need it are NA later; a line that has no question or no
answer field at all is not a sample and is refused with its line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from raglabel.errors import InputError
from raglabel.formats.jsonl import Identifier, objects
from raglabel.formats.limits import check_line
from raglabel.formats.lines import check_readable


@dataclass(frozen=True)
class Layout:
    """Where one tool keeps each part of a sample."""

    name: str
    question: str
    answer: str
    contexts: str
    references: tuple[str, ...]
    extra: tuple[str, ...] = ()  # further fields only this layout has

    def fields(self) -> set[str]:
        return {self.question, self.answer, self.contexts, *self.references, *self.extra}


FORMATS: tuple[Layout, ...] = (
    Layout("raglabel", "question", "answer", "contexts", ("reference",), ("query_id",)),
    Layout(
        "ragas v2",
        "user_input",
        "response",
        "retrieved_contexts",
        ("reference",),
        ("retrieved_context_ids",),
    ),
    Layout("ragas v1", "question", "answer", "contexts", ("ground_truth", "ground_truths")),
    Layout("DeepEval", "input", "actual_output", "retrieval_context", ("expected_output",)),
    Layout("RAGChecker", "query", "response", "retrieved_context", ("gt_answer",), ("query_id",)),
)
_BY_NAME = {layout.name: layout for layout in FORMATS}
_ID = TypeAdapter(Identifier)


@dataclass(frozen=True)
class Context:
    """A retrieved chunk: its passage id, its text, or both."""

    id: str | None
    text: str | None


@dataclass
class AnswerSample:
    line: int
    format: str
    question: str | None
    answer: str | None  # None when the file gave none or an empty one
    contexts: list[Context] = field(default_factory=list)
    reference: str | list[str] | None = None
    sample_id: str | None = None
    query_id: str | None = None
    ranks: list[int] | None = None
    metadata: dict[str, Any] | None = None

    def key(self) -> str:
        """What identifies the sample within its system before queries are matched."""
        return self.sample_id or self.query_id or (self.question or "")


@dataclass
class AnswerFile:
    format: str
    samples: list[AnswerSample]


def candidates(record: dict[str, Any]) -> list[str]:
    """The formats a record fits best: those that know the most of its fields."""
    keys = set(record)
    scores = {layout.name: len(keys & layout.fields()) for layout in FORMATS}
    best = max(scores.values())
    return [name for name, score in scores.items() if score == best and best > 0]


def read_answers(path: Path) -> AnswerFile:
    """Every sample of a JSONL file or JSON document, checked; the first bad line is an error."""
    records = list(_records(path))
    if not records:
        raise InputError(path, "has no samples (the file is empty)")
    possible: list[str] | None = None
    first_line = 0
    for number, record in records:
        if not isinstance(record, dict):
            raise InputError(path, f"not an answer sample: a JSON {_kind(record)}", number)
        fits = candidates(record)
        if not fits:
            raise InputError(
                path,
                "no known answer format: expected the fields of raglabel, ragas v1 or v2,"
                " DeepEval or RAGChecker (a question such as question, user_input, input or"
                " query)",
                number,
            )
        if possible is None:
            possible, first_line = fits, number
            continue
        common = [name for name in possible if name in fits]
        if not common:
            raise InputError(
                path,
                f"this sample is {' or '.join(fits)} but line {first_line} is"
                f" {' or '.join(possible)}: a file holds one format",
                number,
            )
        possible = common
    assert possible is not None
    layout = _BY_NAME[possible[0]]
    samples = [_sample(path, number, record, layout) for number, record in records]
    seen: dict[str, int] = {}
    for sample in samples:
        if sample.sample_id is None:
            continue
        if sample.sample_id in seen:
            raise InputError(
                path,
                f"sample id {sample.sample_id!r} already used on line {seen[sample.sample_id]}",
                sample.line,
            )
        seen[sample.sample_id] = sample.line
    return AnswerFile(layout.name, samples)


def _kind(value: Any) -> str:
    return {list: "list", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number"
    )


def _records(path: Path) -> Iterator[tuple[int, Any]]:
    """(line, value) of each sample: JSONL lines, or the items of a JSON document."""
    check_readable(path)
    with path.open("rb") as handle:
        head = handle.read(4096).lstrip()
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:].lstrip()
    if head.startswith(b"["):
        yield from _document(path)
        return
    if head.startswith(b"{"):
        whole = _whole(path)
        if whole is not None:
            yield from whole
            return
    yield from objects(path)


def _text_of(path: Path) -> str:
    raw = path.read_bytes()
    for number, line in enumerate(raw.split(b"\n"), start=1):
        check_line(path, line, number)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        number = raw.count(b"\n", 0, exc.start) + 1
        raise InputError(path, "is not valid UTF-8", number) from None


def _whole(path: Path) -> list[tuple[int, Any]] | None:
    """A RAGChecker ``{"results": [...]}`` document, or None for JSONL (objects by line)."""
    text = _text_of(path)
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None
    if not (isinstance(value, dict) and "results" in value):
        return None
    if not isinstance(value["results"], list):
        raise InputError(path, "field results: must be a list of samples", 1)
    return _items(path, text, _array_start(text))[0]


def _document(path: Path) -> list[tuple[int, Any]]:
    text = _text_of(path)
    start = len(text) - len(text.lstrip())
    items, end = _items(path, text, start)
    if text[end:].strip():
        raise InputError(path, "not valid JSON (extra data after the list)", _line(text, end))
    return items


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


_DECODER = json.JSONDecoder()


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _bad(path: Path, text: str, pos: int, what: str) -> InputError:
    return InputError(path, f"not valid JSON ({what})", _line(text, min(pos, len(text))))


def _items(path: Path, text: str, start: int) -> tuple[list[tuple[int, Any]], int]:
    """The values of the JSON array at ``start``, each with the line it starts on, and
    the offset just past the array."""
    items: list[tuple[int, Any]] = []
    pos = _skip(text, start + 1)
    if pos < len(text) and text[pos] == "]":
        return items, pos + 1
    while True:
        try:
            value, end = _DECODER.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise _bad(path, text, exc.pos, exc.msg) from None
        except RecursionError:
            raise _bad(path, text, pos, "nested too deeply") from None
        items.append((_line(text, pos), value))
        pos = _skip(text, end)
        if pos < len(text) and text[pos] == ",":
            pos = _skip(text, pos + 1)
            continue
        if pos < len(text) and text[pos] == "]":
            return items, pos + 1
        raise _bad(path, text, pos, "expecting ',' or ']' between samples")


def _array_start(text: str) -> int:
    """Where the ``results`` array of a top-level object begins."""
    pos = _skip(text, _skip(text, 0) + 1)
    while pos < len(text):
        key, pos = _DECODER.raw_decode(text, pos)
        pos = _skip(text, pos) + 1  # past ':'
        pos = _skip(text, pos)
        if key == "results":
            return pos
        _, pos = _DECODER.raw_decode(text, pos)
        pos = _skip(text, _skip(text, pos) + 1)  # past ','
    raise AssertionError("results was found by json.loads")


def _text(path: Path, number: int, record: dict[str, Any], name: str) -> str | None:
    value = record.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InputError(path, f"field {name}: must be a string, not a {_kind(value)}", number)
    return value if value.strip() else None


def _sample(path: Path, number: int, record: dict[str, Any], layout: Layout) -> AnswerSample:
    def need(name: str, what: str) -> None:
        if name not in record:
            raise InputError(path, f"missing {what} (field {name}, {layout.name} format)", number)

    need(layout.question, "the question")
    need(layout.answer, "the answer")
    question = _text(path, number, record, layout.question)
    query_id = _identifier(path, number, record, "query_id") if "query_id" in layout.extra else None
    if question is None and query_id is None:
        raise InputError(path, f"field {layout.question}: the question is empty", number)
    sample = AnswerSample(
        line=number,
        format=layout.name,
        question=question,
        answer=_text(path, number, record, layout.answer),
        contexts=_contexts(path, number, record, layout),
        reference=_reference(path, number, record, layout),
        sample_id=_identifier(path, number, record, "id"),
        query_id=query_id,
    )
    sample.ranks = _ranks(path, number, record, len(sample.contexts))
    metadata = record.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise InputError(
            path, f"field metadata: must be an object, not a {_kind(metadata)}", number
        )
    sample.metadata = metadata
    return sample


def _identifier(path: Path, number: int, record: dict[str, Any], name: str) -> str | None:
    value = record.get(name)
    if value is None:
        return None
    try:
        return str(_ID.validate_python(value))
    except ValidationError as exc:
        raise InputError(path, f"field {name}: {exc.errors()[0]['msg']}", number) from None


def _contexts(path: Path, number: int, record: dict[str, Any], layout: Layout) -> list[Context]:
    name = layout.contexts
    value = record.get(name)
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError(path, f"field {name}: must be a list, not a {_kind(value)}", number)
    ids: list[Any] | None = None
    if "retrieved_context_ids" in layout.extra and record.get("retrieved_context_ids") is not None:
        ids = record["retrieved_context_ids"]
        if not isinstance(ids, list) or len(ids) != len(value):
            raise InputError(
                path,
                f"field retrieved_context_ids: must be a list of one id per context ({len(value)})",
                number,
            )
    id_key = "doc_id" if layout.name == "RAGChecker" else "id"
    contexts: list[Context] = []
    for i, item in enumerate(value):
        where = f"{name}.{i}"
        text: str | None
        ident: str | None
        if isinstance(item, str):
            text, ident = item, None
        elif isinstance(item, dict) and layout.name in ("raglabel", "RAGChecker"):
            text = item.get("text")
            if text is not None and not isinstance(text, str):
                raise InputError(path, f"field {where}.text: must be a string", number)
            ident = _identifier(path, number, item, id_key)
        else:
            expected = (
                "strings"
                if layout.name not in ("raglabel", "RAGChecker")
                else (f'strings or {{"{id_key}", "text"}} objects')
            )
            raise InputError(path, f"field {where}: contexts are {expected}", number)
        if ids is not None:
            ident = _identifier(path, number, {"id": ids[i]}, "id")
        if not (text and text.strip()):
            text = None
        if ident is None and text is None:
            raise InputError(path, f"field {where}: a context needs a text or an id", number)
        contexts.append(Context(ident, text))
    return contexts


def _reference(
    path: Path, number: int, record: dict[str, Any], layout: Layout
) -> str | list[str] | None:
    for name in layout.references:
        value = record.get(name)
        if value is None:
            continue
        if isinstance(value, str):
            return value if value.strip() else None
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            facts = [v for v in value if v.strip()]
            return facts or None
        raise InputError(
            path, f"field {name}: must be a string or a list of strings (key facts)", number
        )
    return None


def _ranks(path: Path, number: int, record: dict[str, Any], count: int) -> list[int] | None:
    value = record.get("ranks")
    if value is None:
        return None
    if (
        not isinstance(value, list)
        or len(value) != count
        or not all(isinstance(r, int) and not isinstance(r, bool) and r >= 0 for r in value)
        or len(set(value)) != len(value)
    ):
        raise InputError(
            path,
            f"field ranks: must be one distinct rank (0 = first) per context ({count})",
            number,
        )
    return list(value)


def ordered(sample: AnswerSample) -> list[int]:
    """Context positions in retrieval order: by ``ranks`` when given, else as listed."""
    positions = list(range(len(sample.contexts)))
    if sample.ranks is None:
        return positions
    ranks = sample.ranks
    return sorted(positions, key=lambda i: ranks[i])
