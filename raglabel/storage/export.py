"""``raglabel export``: labels out as TREC qrels, JSONL or CSV."""

from __future__ import annotations

import csv
import json
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from raglabel.errors import UsageError
from raglabel.formats.maps import GradeMap
from raglabel.formats.output import atomic_text
from raglabel.storage.labels import LabelChoice, refuse_unknown_annotator, resolved_labels

# The JSONL and CSV exports import their pydantic models when called: a lead's `export
# --qrels`, run every few seconds beside a serving host, then starts in half the CPU.


def reverse_map(grade_map: GradeMap) -> dict[int, int]:
    """Grade -> label; each grade used must come from exactly one label of the map."""
    reverse: dict[int, list[int]] = {}
    for label, grade in grade_map.mapping.items():
        reverse.setdefault(grade, []).append(label)
    if grade_map.negative is not None and grade_map.negative not in reverse:
        reverse[grade_map.negative] = [-1]
    for grade, labels in reverse.items():
        if len(labels) > 1:
            shown = " and ".join(str(label) for label in sorted(labels))
            raise UsageError(
                f"--grade-map: grade {grade} comes from labels {shown}; to write qrels, "
                "each grade needs one label"
            )
    return {grade: labels[0] for grade, labels in reverse.items()}


class QrelsExport(NamedTuple):
    """What :func:`export_qrels` wrote: how many pairs (``pairs``), and of them how many a judge's
    label filled (``--fill-with-judge``), with the labels' source in words."""

    pairs: int
    judge_filled: int
    source: str


def export_qrels(
    conn: sqlite3.Connection, path: Path, grade_map: GradeMap, choice: LabelChoice
) -> QrelsExport:
    """Resolved grades as ``qid 0 docid label`` lines, sorted, labels via the reversed map."""
    labels = reverse_map(grade_map)
    resolved = resolved_labels(conn, choice)
    rows = sorted(
        zip(resolved.qrels.qids, resolved.qrels.docids, resolved.qrels.grades, strict=True)
    )
    missing = sorted({grade for _, _, grade in rows} - set(labels))
    if missing:
        raise UsageError(
            f"--grade-map ({grade_map.describe()}) gives no label for grade "
            f"{', '.join(map(str, missing))}; name one for every grade in the project"
        )
    with atomic_text(path) as handle:
        for qid, docid, grade in rows:
            handle.write(f"{qid} 0 {docid} {labels[grade]}\n")
    return QrelsExport(len(rows), resolved.judge_filled, resolved.source)


_EVENT_COLUMNS = (
    "e.id, q.ext_id, p.ext_id, a.name, e.kind, e.grade, e.target, e.note, e.source, e.model,"
    " e.origin, e.shown_at, e.graded_at, e.active_ms, e.accepted_suggestion"
)
_EVENT_JOINS = (
    " JOIN query q ON q.id = e.query_id JOIN passage p ON p.id = e.passage_id"
    " JOIN annotator a ON a.id = e.annotator_id"
)


def _records(
    conn: sqlite3.Connection, history: bool, annotator: str | None = None
) -> Iterator[dict[str, Any]]:
    """Every standing grade, or with ``history`` every event; ``annotator``'s alone
    when named: someone of the project, or a usage error here, before any file is made."""
    where: tuple[str, tuple[str, ...]] = ("", ())
    if annotator is not None:
        refuse_unknown_annotator(conn, annotator)
        where = (" WHERE a.name = ?", (annotator,))
    if history:
        sql = f"SELECT {_EVENT_COLUMNS} FROM event e {_EVENT_JOINS}{where[0]} ORDER BY e.id"
    else:
        # Each standing grade with the event that set it, so times and source travel along.
        sql = (
            f"SELECT {_EVENT_COLUMNS} FROM current_grade c JOIN event e ON e.id = c.event_id"
            f" {_EVENT_JOINS}{where[0]} ORDER BY q.ext_id, p.ext_id, a.name"
        )
    return _record_rows(conn.execute(sql, where[1]), history)


def _record_rows(rows: Iterable[tuple[Any, ...]], history: bool) -> Iterator[dict[str, Any]]:
    from raglabel.storage.labelfile import FIELDS

    for row in rows:
        record = dict(zip(FIELDS, row, strict=True))
        if record["accepted_suggestion"] is not None:
            record["accepted_suggestion"] = bool(record["accepted_suggestion"])
        if not history:
            record["event"] = None
        yield record


def _suggestion_records(conn: sqlite3.Connection) -> Iterator[dict[str, Any]]:
    """Every stored suggestion; ``source`` is "judge" or "imported", never "human", so a
    file of suggestions can never be mistaken for human grades when merged with an export
    of grades."""
    from raglabel.formats.suggestion_line import SuggestionLine

    rows = conn.execute(
        "SELECT q.ext_id, p.ext_id, s.grade, s.model, s.reason, s.flagged, s.low, s.high,"
        " s.answers, s.endpoint, s.prompt_version, s.params, s.created_at, s.source, i.sha256"
        " FROM suggestion s JOIN query q ON q.id = s.query_id"
        " JOIN passage p ON p.id = s.passage_id"
        " LEFT JOIN judgment_import i ON i.id = s.import_id"
        " ORDER BY q.ext_id, p.ext_id, s.model, s.id"
    )
    for qid, pid, grade, model, reason, flagged, low, high, answers, *rest in rows:
        endpoint, version, params, created, source, sha256 = rest
        line = SuggestionLine(
            query_id=qid,
            passage_id=pid,
            grade=grade,
            model=model,
            reason=reason,
            flagged=flagged is not None,
            flag_reason=flagged,
            low=grade if low is None else low,
            high=grade if high is None else high,
            answers=answers or 1,
            endpoint=endpoint,
            prompt_version=version,
            params=None if params is None else json.loads(params),
            created_at=created,
            source=source,
            file_sha256=sha256,
        )
        yield line.model_dump(mode="json")


_FAILED_PASSAGES = (
    "SELECT j.id, q.ext_id, p.ext_id, j.model, j.repeat, j.error, j.raw, j.attempts,"
    " j.run_id, r.endpoint, r.prompt_version, r.params, j.created_at,"
    " EXISTS (SELECT 1 FROM judgment k WHERE k.cache_key = j.cache_key AND k.status = 'ok'"
    " AND k.id > j.id)"
    " FROM judgment j JOIN judge_run r ON r.id = j.run_id"
    " JOIN query q ON q.id = j.query_id JOIN passage p ON p.id = j.passage_id"
    " WHERE j.status = 'failed'"
)
_FAILED_ANSWERS = (
    "SELECT j.id, q.ext_id, y.name, j.sample_id, j.criterion, j.model, j.repeat, j.error,"
    " j.raw, j.attempts, j.run_id, r.endpoint, r.prompt_version, r.params, j.created_at,"
    " EXISTS (SELECT 1 FROM answer_judgment k WHERE k.cache_key = j.cache_key"
    " AND k.status = 'ok' AND k.id > j.id)"
    " FROM answer_judgment j JOIN judge_run r ON r.id = j.run_id"
    " JOIN answer_system y ON y.id = j.system_id"
    " JOIN answer_sample s ON s.system_id = j.system_id AND s.sample_id = j.sample_id"
    " JOIN query q ON q.id = s.query_id WHERE j.status = 'failed'"
)


def _failure_records(conn: sqlite3.Connection) -> Iterator[dict[str, Any]]:
    """Every judge answer that failed, passage runs' then answer runs', each oldest
    first: ``failed`` true, the failure's kind and reason, and every reply received
    (the repair's too), for whoever debugs the prompt or the endpoint."""
    for _, qid, pid, *rest in conn.execute(_FAILED_PASSAGES + " ORDER BY j.id"):
        yield _failure_line({"query_id": qid, "passage_id": pid}, rest)
    for _, qid, system, sample, criterion, *rest in conn.execute(
        _FAILED_ANSWERS + " ORDER BY j.id"
    ):
        about = {"query_id": qid, "system": system, "sample_id": sample, "criterion": criterion}
        yield _failure_line(about, rest)


def _failure_line(about: dict[str, Any], row: list[Any]) -> dict[str, Any]:
    """``row``: the columns both queries end with, from the model on."""
    from raglabel.judge.failures import failure_kind

    model, repeat, error, raw, attempts, run, endpoint, version, params, created, later = row
    return {
        **about,
        "model": model,
        "source": "judge",
        "failed": True,
        "failure": failure_kind(error),
        "error": error,
        "replies": raw,
        "repeat": repeat,
        "attempts": attempts,
        # A good answer for the same slot came in a later run: this failure is history.
        "answered_later": bool(later),
        "run": run,
        "endpoint": endpoint,
        "prompt_version": version,
        "params": json.loads(params),
        "created_at": created,
    }


def export_suggestions(
    conn: sqlite3.Connection, path: Path, *, with_failures: bool = False
) -> tuple[int, int]:
    """The judge's suggestions as JSON Lines, then (``with_failures``) one line per
    failed answer; returns how many of each were written."""
    suggestions = failures = 0
    with atomic_text(path) as handle:
        for record in _suggestion_records(conn):
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            suggestions += 1
        if with_failures:
            for record in _failure_records(conn):
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
                failures += 1
    return suggestions, failures


def export_jsonl(
    conn: sqlite3.Connection, path: Path, *, history: bool, annotator: str | None = None
) -> int:
    count = 0
    records = _records(conn, history, annotator)
    with atomic_text(path) as handle:
        for record in records:
            compact = {key: value for key, value in record.items() if value is not None}
            handle.write(json.dumps(compact, ensure_ascii=False) + "\n")
            count += 1
    return count


def export_csv(
    conn: sqlite3.Connection,
    path: Path,
    *,
    history: bool,
    suggestions: bool = False,
    annotator: str | None = None,
) -> int:
    from raglabel.formats.suggestion_line import SuggestionLine
    from raglabel.storage.labelfile import FIELDS

    count = 0
    fields = tuple(SuggestionLine.model_fields) if suggestions else FIELDS
    records = _suggestion_records(conn) if suggestions else _records(conn, history, annotator)
    with atomic_text(path, newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        for record in records:
            if suggestions and record["params"] is not None:
                record["params"] = json.dumps(record["params"], sort_keys=True)
            writer.writerow(record)
            count += 1
    return count
