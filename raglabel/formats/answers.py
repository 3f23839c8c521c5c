"""Answer files: a RAG system's answers with the contexts it retrieved, in six layouts.

Each sample is recognised by its fields (see ``FORMATS``); a file holds one format.
A field whose value is empty (an empty answer, no contexts, no reference) is kept as
missing, so the criteria that need it are NA later; a line that has no question or no
answer field at all is not a sample and is refused with its line.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from raglabel.errors import InputError
from raglabel.formats.context_ids import IdScope
from raglabel.formats.jsonl import Identifier, JsonDocument, document_text, json_error, objects
from raglabel.formats.lines import check_readable

# What each format's ids name (``Layout.ids``, an IdScope), its context ids and its
# query_id alike. "global": raglabel's own ids; ragas' retrieved_context_ids, which its
# docs compare with reference ids as document ids. "local": RAGChecker's optional doc_id,
# which its metrics never read and its example numbers from 000 in every sample, and its
# query_id, which its example numbers from 0 in every file. None: the format has none.

#: The custom-run request of the ``ctx_rank_prec`` service (seed 003): no question and no
#: answer, a golden answer and the chunks, ``metric_args.ranks`` on the row or the metric.
AEGIS = "Aegis"
RANKING_METRIC = "ctx_rank_prec"


@dataclass(frozen=True)
class Layout:
    """Where one tool keeps each part of a sample."""

    name: str
    question: str
    answer: str | None  # None: the format carries no generated answer
    contexts: str
    references: tuple[str, ...]
    extra: tuple[str, ...] = ()  # further fields only this layout has
    ids: IdScope = None
    lone_string: bool = False  # a single string is one context

    def fields(self) -> set[str]:
        answer = () if self.answer is None else (self.answer,)
        return {self.question, *answer, self.contexts, *self.references, *self.extra}


FORMATS: tuple[Layout, ...] = (
    Layout("raglabel", "question", "answer", "contexts", ("reference",), ("query_id",), "global"),
    Layout(
        "ragas v2",
        "user_input",
        "response",
        "retrieved_contexts",
        ("reference",),
        ("retrieved_context_ids",),
        "global",
    ),
    Layout("ragas v1", "question", "answer", "contexts", ("ground_truth", "ground_truths")),
    Layout("DeepEval", "input", "actual_output", "retrieval_context", ("expected_output",)),
    Layout(
        "RAGChecker",
        "query",
        "response",
        "retrieved_context",
        ("gt_answer",),
        ("query_id",),
        "local",
    ),
    # The golden answer is the reference the chunks are graded against, and also the
    # only text there is to name the query by.
    Layout(
        AEGIS,
        "golden_answer",
        None,
        "context",
        ("golden_answer",),
        ("metric_args",),
        lone_string=True,
    ),
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
    ids: IdScope = None  # what the contexts' ids and query ids name (see IdScope)


@dataclass(frozen=True)
class _Record:
    """One sample as read, with the ranks its request gave every row (seed 003's
    ``metric_args`` on the metric) and the line they are on."""

    line: int
    value: Any
    shared_ranks: Any = None
    ranks_line: int | None = None
    #: Where the row is in its document (``evaluations.0.data.2``, ``3 of the list``): a
    #: request written on one line gives every row the same line number.
    row: str | None = None


def candidates(record: dict[str, Any]) -> list[str]:
    """The formats a record fits best: those that know the most of its fields."""
    keys = set(record)
    scores = {layout.name: len(keys & layout.fields()) for layout in FORMATS}
    best = max(scores.values())
    return [name for name, score in scores.items() if score == best and best > 0]


def read_answers(path: Path) -> AnswerFile:
    """Every sample of a JSONL file or JSON document, checked; the first bad line is an error."""
    records = _records(path)
    if not records:
        raise InputError(path, "has no samples (the file is empty)")
    possible: list[str] | None = None
    first_line = 0
    for record in records:
        number = record.line
        if not isinstance(record.value, dict):
            raise InputError(path, f"not an answer sample: {_kind(record.value)} in JSON", number)
        fits = candidates(record.value)
        if not fits:
            raise InputError(
                path,
                "no known answer format: expected the fields of raglabel, ragas v1 or v2,"
                f" DeepEval, RAGChecker or {AEGIS} (a question such as question, user_input,"
                " input, query or golden_answer)",
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
    samples = [_sample(path, record, layout) for record in records]
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
    return AnswerFile(layout.name, samples, layout.ids)


def _kind(value: Any) -> str:
    """What a JSON value is, with its article: "a list", "an object"."""
    kinds = {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    return "an object" if isinstance(value, dict) else kinds.get(type(value), "a number")


def _records(path: Path) -> list[_Record]:
    """Each sample with its line: JSONL lines, or the items of a JSON document (a list,
    RAGChecker's ``{"results": [...]}``, a ``ctx_rank_prec`` request, or one object)."""
    check_readable(path)
    with path.open("rb") as handle:
        head = handle.read(4096).lstrip()
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:].lstrip()
    if not head.startswith((b"[", b"{")):
        return [_Record(number, value) for number, value in objects(path)]
    text = document_text(path)
    try:
        doc = JsonDocument(path, text)
    except (ValueError, RecursionError) as exc:
        if head.startswith(b"{") and (
            _first_line_is_json(text) or path.suffix.lower() in JSON_LINES_SUFFIXES
        ):
            # JSON Lines: each line is a document of its own, and errors are by line
            # (a .jsonl file whose first line is broken is reported there, not where
            # reading the whole file as one document happened to fail).
            return [_Record(number, value) for number, value in objects(path)]
        if isinstance(exc, json.JSONDecodeError):
            raise json_error(path, exc) from None
        # Nested too deeply, or a number of more than 4300 digits: json gives no position.
        what = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise InputError(path, f"not valid JSON ({what})") from None
    value = doc.value
    if isinstance(value, list):
        return [
            _Record(doc.line(at), item, row=f"{i} of the list")
            for i, (at, item) in enumerate(doc.items(doc.start))
        ]
    if isinstance(value, dict) and "results" in value:
        return [
            _Record(line, item, row=f"results.{i}")
            for i, (line, item) in enumerate(_list_at(doc, doc.start, "results"))
        ]
    if isinstance(value, dict) and "evaluations" in value:
        return _request(doc)
    return [_Record(doc.line(doc.start), value)]


#: File names that say one JSON value per line, whatever the first line holds.
JSON_LINES_SUFFIXES = (".jsonl", ".ndjson")


def _first_line_is_json(text: str) -> bool:
    start = len(text) - len(text.lstrip())  # the first line that is not blank
    start = text.rfind("\n", 0, start) + 1
    end = text.find("\n", start)
    line = text[start:] if end < 0 else text[start:end]
    try:
        json.loads(line)
    except (ValueError, RecursionError):
        return False
    return True


def _list_at(doc: JsonDocument, offset: int, key: str, where: str = "") -> list[tuple[int, Any]]:
    """(line, item) of the list under ``key`` of the object at ``offset``."""
    at = doc.member(offset, key)
    assert at is not None  # json.loads found the key
    if not doc.text.startswith("[", at):
        raise InputError(doc.path, f"field {where}{key}: must be a list", doc.line(at))
    return [(doc.line(item_at), item) for item_at, item in doc.items(at)]


def _request(doc: JsonDocument) -> list[_Record]:
    """The rows of a ``ctx_rank_prec`` request: ``{"evaluations": [{"data": [...],
    "metrics": [{"metric": "ctx_rank_prec", "metric_args": {"ranks": [...]}}]}]}``.

    The ranks on the metric apply to every row of its evaluation that gives none; the
    request's other settings (threshold, model) are the service's and are not read."""
    at = doc.member(doc.start, "evaluations")
    assert at is not None
    if not doc.text.startswith("[", at):
        raise InputError(doc.path, "field evaluations: must be a list", doc.line(at))
    records: list[_Record] = []
    for i, (eval_at, evaluation) in enumerate(doc.items(at)):
        where = f"evaluations.{i}."
        if not isinstance(evaluation, dict):
            raise InputError(doc.path, f"field {where[:-1]}: must be an object", doc.line(eval_at))
        if "data" not in evaluation:
            raise InputError(doc.path, f"field {where}data: missing", doc.line(eval_at))
        ranks, ranks_line = None, None
        if "metrics" in evaluation:
            for line, metric in _list_at(doc, eval_at, "metrics", where):
                if not (isinstance(metric, dict) and metric.get("metric") == RANKING_METRIC):
                    continue
                args = metric.get("metric_args")
                if isinstance(args, dict) and args.get("ranks") is not None:
                    ranks, ranks_line = args["ranks"], line
        records.extend(
            _Record(line, row, ranks, ranks_line, f"{where}data.{j}")
            for j, (line, row) in enumerate(_list_at(doc, eval_at, "data", where))
        )
    return records


def _text(path: Path, number: int, record: dict[str, Any], name: str) -> str | None:
    value = record.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InputError(path, f"field {name}: must be a string, not {_kind(value)}", number)
    return value if value.strip() else None


def _sample(path: Path, record: _Record, layout: Layout) -> AnswerSample:
    number, value = record.line, record.value

    def need(name: str, what: str) -> None:
        if name not in value:
            raise InputError(path, f"missing {what} (field {name}, {layout.name} format)", number)

    need(layout.question, "the question")
    if layout.answer is not None:
        need(layout.answer, "the answer")
    question = _text(path, number, value, layout.question)
    query_id = _identifier(path, number, value, "query_id") if "query_id" in layout.extra else None
    if question is None and query_id is None:
        what = "golden answer" if layout.name == AEGIS else "question"
        raise InputError(path, f"field {layout.question}: the {what} is empty", number)
    sample = AnswerSample(
        line=number,
        format=layout.name,
        question=question,
        answer=None if layout.answer is None else _text(path, number, value, layout.answer),
        contexts=_contexts(path, number, value, layout),
        reference=_reference(path, number, value, layout),
        sample_id=_identifier(path, number, value, "id"),
        query_id=query_id,
    )
    sample.ranks = _ranks(path, number, value, len(sample.contexts))
    if layout.name == AEGIS:
        given = _metric_ranks(path, record, len(sample.contexts))
        if given is not None and sample.ranks is not None:
            raise InputError(path, "give ranks or metric_args.ranks, not both", number)
        if given is not None:
            sample.ranks = given
    metadata = value.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise InputError(path, f"field metadata: must be an object, not {_kind(metadata)}", number)
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
    if layout.lone_string and isinstance(value, str):
        value = [value] if value.strip() else []
    if not isinstance(value, list):
        raise InputError(path, f"field {name}: must be a list, not {_kind(value)}", number)
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
        if text is None and ident is not None and layout.ids == "local":
            # An id that names a chunk only within its sample cannot find a passage.
            raise InputError(
                path,
                f"field {where}.text: a {layout.name} context needs its text ({id_key} names"
                " a chunk only within its own sample)",
                number,
            )
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


def _metric_ranks(path: Path, record: _Record, count: int) -> list[int] | None:
    """``metric_args.ranks`` of a ``ctx_rank_prec`` row, else of its request's metric, as
    0-based distinct ranks: any numbers, chunks ordered by them, ties by position."""
    args = record.value.get("metric_args")
    if args is not None and not isinstance(args, dict):
        raise InputError(
            path, f"field metric_args: must be an object, not {_kind(args)}", record.line
        )
    given, where = None, "field metric_args.ranks"
    if args is not None and args.get("ranks") is not None:
        given = args["ranks"]
    elif record.shared_ranks is not None:
        given = record.shared_ranks
        where += f" of the {RANKING_METRIC} metric on line {record.ranks_line}"
    if given is None:
        return None
    if not (
        isinstance(given, list)
        and len(given) == count
        and all(
            (isinstance(r, int) and not isinstance(r, bool))
            or (isinstance(r, float) and math.isfinite(r))
            for r in given
        )
    ):
        row = "this row" if record.row is None else f"row {record.row}"
        chunks = f"{count} chunk" if count == 1 else f"{count} chunks"
        has = f"{row} (line {record.line}) has {chunks}"
        raise InputError(path, f"{where}: must be one number per chunk, and {has}", record.line)
    order = sorted(range(count), key=lambda i: (given[i], i))
    ranks = [0] * count
    for rank, position in enumerate(order):
        ranks[position] = rank
    return ranks


def ordered(sample: AnswerSample) -> list[int]:
    """Context positions in retrieval order: by ``ranks`` when given, else as listed."""
    positions = list(range(len(sample.contexts)))
    if sample.ranks is None:
        return positions
    ranks = sample.ranks
    return sorted(positions, key=lambda i: ranks[i])
