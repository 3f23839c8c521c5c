"""Queries and passages from TSV or JSONL files, and BEIR dataset folders."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from raglabel.errors import InputError
from raglabel.formats.jsonl import Identifier, describe, objects, validated
from raglabel.formats.limits import check_line, id_problem
from raglabel.formats.lines import check_readable
from raglabel.formats.maps import GradeMap
from raglabel.formats.trec.rows import QrelsRows


class QueryRecord(BaseModel):
    """A query: its id and text; any other fields are kept as metadata."""

    model_config = ConfigDict(extra="allow")

    id: Identifier
    text: str = Field(min_length=1)
    expected_answer: str | None = None

    def metadata(self) -> dict[str, Any] | None:
        return dict(self.model_extra) if self.model_extra else None


class PassageRecord(BaseModel):
    """A passage: id and text, an optional title and free-form metadata."""

    model_config = ConfigDict(extra="forbid")

    id: Identifier
    text: str = Field(min_length=1)
    title: str | None = None
    metadata: dict[str, Any] | None = None


class _BeirRecord(BaseModel):
    # BEIR names the id "_id" and may carry extra fields; those become metadata.
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    id: Identifier = Field(alias="_id")
    text: str
    title: str | None = None

    @model_validator(mode="after")
    def _has_text(self) -> _BeirRecord:
        if not self.text.strip() and not (self.title or "").strip():
            raise ValueError("both title and text are empty")
        return self

    def extras(self) -> dict[str, Any] | None:
        extra = dict(self.model_extra or {})
        nested = extra.pop("metadata", None)
        if isinstance(nested, dict):
            extra.update(nested)
        elif nested:
            extra["metadata"] = nested
        return extra or None


def _is_jsonl(path: Path) -> bool:
    if path.suffix.lower() in {".jsonl", ".json", ".ndjson"}:
        return True
    if path.suffix.lower() in {".tsv", ".txt", ".tab"}:
        return False
    with path.open("rb") as handle:
        for raw in handle:
            if raw.strip():
                return raw.lstrip().startswith(b"{")
    return False


def _tsv_pairs(path: Path, what: str) -> list[tuple[int, str, str]]:
    """(line, id, text) from ``id<TAB>text`` lines; a header line ``id<TAB>text`` is skipped."""
    check_readable(path)
    rows: list[tuple[int, str, str]] = []
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            check_line(path, raw, number)
            try:
                line = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError:
                raise InputError(path, "is not valid UTF-8", number) from None
            if not line.strip():
                continue
            ident, tab, text = line.partition("\t")
            if not tab:
                raise InputError(path, f"expected {what}_id<TAB>text, found no tab", number)
            if number == 1 and ident.strip().lower() in {"id", "qid", "_id", "query-id", "docid"}:
                continue
            if not ident.strip() or ident != ident.strip():
                raise InputError(path, "the id is empty or has white space around it", number)
            problem = id_problem(ident)
            if problem:
                raise InputError(path, problem, number)
            if not text.strip():
                raise InputError(path, f"{what} {ident!r} has no text", number)
            rows.append((number, ident, text))
    return rows


def _no_repeats(path: Path, ids: list[tuple[int, str]], what: str) -> None:
    first: dict[str, int] = {}
    for number, ident in ids:
        if ident in first:
            raise InputError(
                path, f"{what} id {ident!r} already used on line {first[ident]}", number
            )
        first[ident] = number


R = TypeVar("R", QueryRecord, PassageRecord)


def read_queries(path: str | Path) -> list[QueryRecord]:
    return _read_records(Path(path), QueryRecord, "query")


def read_passages(path: str | Path) -> list[PassageRecord]:
    return _read_records(Path(path), PassageRecord, "passage")


def _read_records(path: Path, model: type[R], what: str) -> list[R]:
    """JSONL records, or ``id<TAB>text`` lines, checked for repeated ids."""
    check_readable(path)
    if _is_jsonl(path):
        numbered = list(validated(path, model))
    else:
        numbered = [
            (number, model(id=ident, text=text)) for number, ident, text in _tsv_pairs(path, what)
        ]
    return _checked(path, numbered, what)


def _checked(path: Path, numbered: list[tuple[int, R]], what: str) -> list[R]:
    if not numbered:
        raise InputError(path, f"has no {what} lines (the file is empty)")
    _no_repeats(path, [(number, record.id) for number, record in numbered], what)
    return [record for _, record in numbered]


@dataclass(frozen=True)
class BeirSet:
    queries: list[QueryRecord]
    passages: list[PassageRecord]
    qrels: QrelsRows
    qrels_path: Path


def read_beir(
    folder: str | Path, split: str = "test", grade_map: GradeMap | None = None
) -> BeirSet:
    """A BEIR folder: corpus.jsonl, queries.jsonl and qrels/<split>.tsv (with a header)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(folder, "is not a folder (a BEIR dataset folder was expected)")
    corpus_path, queries_path = folder / "corpus.jsonl", folder / "queries.jsonl"
    qrels_path = folder / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        splits = sorted(p.stem for p in (folder / "qrels").glob("*.tsv"))
        raise InputError(
            qrels_path, f"no such split (this folder has: {', '.join(splits) or 'none'})"
        )
    passages: list[tuple[int, PassageRecord]] = []
    for number, record in validated(corpus_path, _BeirRecord):
        passages.append(
            (
                number,
                PassageRecord(
                    id=record.id,
                    text=record.text or (record.title or ""),
                    title=record.title or None,
                    metadata=record.extras(),
                ),
            )
        )
    queries: list[tuple[int, QueryRecord]] = []
    for number, value in objects(queries_path):
        try:
            record = _BeirRecord.model_validate(value)
            queries.append(
                (number, QueryRecord(id=record.id, text=record.text, **(record.extras() or {})))
            )
        except ValidationError as exc:
            raise InputError(queries_path, describe(exc), number) from None
    return BeirSet(
        queries=_checked(queries_path, queries, "query"),
        passages=_checked(corpus_path, passages, "passage"),
        qrels=_beir_qrels(qrels_path, grade_map or GradeMap()),
        qrels_path=qrels_path,
    )


def _beir_qrels(path: Path, grade_map: GradeMap) -> QrelsRows:
    rows = QrelsRows([], [], [])
    seen: dict[tuple[str, str], int] = {}
    lines: list[list[str]] = []
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            check_line(path, raw, number)
            try:
                lines.append(raw.decode("utf-8").rstrip("\r\n").split("\t"))
            except UnicodeDecodeError:
                raise InputError(path, "is not valid UTF-8", number) from None
    for number, fields in enumerate(lines, start=1):
        if number == 1 or not fields or not "".join(fields).strip():
            continue  # the header: query-id, corpus-id, score
        if len(fields) < 3:
            raise InputError(path, "expected query-id<TAB>corpus-id<TAB>score", number)
        qid, docid, label_text = fields[0], fields[1], fields[2]
        for ident in (qid, docid):
            problem = id_problem(ident)
            if problem:
                raise InputError(path, problem, number)
        try:
            label = int(label_text)
        except ValueError:
            raise InputError(path, f"score {label_text!r} is not an integer", number) from None
        grade = grade_map.grade_of(label)
        if grade is None:
            raise InputError(
                path,
                f"score {label} is not covered by the grade map ({grade_map.describe()}); "
                "give one with --grade-map",
                number,
            )
        if (qid, docid) in seen:
            raise InputError(
                path, f"pair ({qid!r}, {docid!r}) already judged on line {seen[qid, docid]}", number
            )
        seen[(qid, docid)] = number
        rows.qids.append(qid)
        rows.docids.append(docid)
        rows.grades.append(grade)
    if not rows.qids:
        raise InputError(path, "has no judgments (only a header, or empty)")
    return rows
