"""Answer samples of RAG systems, and the human answer grades given on them.

A system's samples are written whole: importing a system again replaces its samples,
contexts and run (its grades stay: they name the sample by id, and the log is
append-only). Answer grades are events of ``answer_event``, a log with the semantics of
the passage log (``grades.py``): the current grade of (system, sample, criterion,
annotator) is the last grade or clear that no undo reverted.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from raglabel.errors import InputError
from raglabel.formats.answer_grades import AnswerGrade
from raglabel.formats.answers import AnswerFile, ordered
from raglabel.formats.text import content_id, normalize
from raglabel.storage.grades import replay
from raglabel.storage.items import annotator_id, ensure_passages
from raglabel.storage.matching import PassageIndex
from raglabel.storage.project import now
from raglabel.storage.runs import Ranking, Run, store


@dataclass
class Written:
    samples: int = 0
    replaced: int = 0  # samples the system had before, now replaced
    queries_added: int = 0
    repeated_queries: list[str] = field(default_factory=list)
    matched_queries: Counter[str] = field(default_factory=Counter)


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)


def write_system(
    conn: sqlite3.Connection,
    name: str,
    path: Path,
    answers: AnswerFile,
    index: PassageIndex,
    *,
    depth: int,
    replace_run: bool,
) -> Written:
    """Store one system's samples and its run of contexts; its earlier samples go."""
    done = Written()
    row = conn.execute("SELECT id FROM answer_system WHERE name = ?", (name,)).fetchone()
    run_there = conn.execute("SELECT 1 FROM run WHERE name = ?", (name,)).fetchone() is not None
    if row is None and run_there and not replace_run:
        raise InputError(
            path,
            f"a run named {name!r} is already in the project and is not an answer system"
            " (name the system differently, or give --replace to overwrite the run)",
        )
    if row is None:
        system = int(
            conn.execute(
                "INSERT INTO answer_system (name, format, source, imported_at) VALUES (?, ?, ?, ?)",
                (name, answers.format, str(path), now()),
            ).lastrowid
            or 0
        )
    else:
        system = int(row[0])
        done.replaced = conn.execute(
            "SELECT count(*) FROM answer_sample WHERE system_id = ?", (system,)
        ).fetchone()[0]
        conn.execute(
            "DELETE FROM answer_context WHERE sample_id IN"
            " (SELECT id FROM answer_sample WHERE system_id = ?)",
            (system,),
        )
        conn.execute("DELETE FROM answer_sample WHERE system_id = ?", (system,))
        conn.execute(
            "UPDATE answer_system SET format = ?, source = ?, imported_at = ? WHERE id = ?",
            (answers.format, str(path), now(), system),
        )

    known: dict[str, int] = {}
    by_text: dict[str, str] = {}
    for qid, ext_id, text in conn.execute("SELECT id, ext_id, text FROM query ORDER BY id"):
        known[ext_id] = qid
        if text:
            by_text.setdefault(normalize(text), ext_id)

    seen: dict[str, int] = {}
    rankings: dict[str, Ranking] = {}
    texts: dict[str, str] = {}
    for sample in answers.samples:
        question = normalize(sample.question) if sample.question else ""
        if sample.query_id is not None and sample.query_id in known:
            query, how = sample.query_id, "id"
        elif question and question in by_text:
            query, how = by_text[question], "text"
        else:
            query, how = sample.query_id or content_id(sample.question or ""), "new"
            if query not in known:
                known[query] = int(
                    conn.execute(
                        "INSERT INTO query (ext_id, text) VALUES (?, ?)", (query, sample.question)
                    ).lastrowid
                    or 0
                )
                done.queries_added += 1
            if question:
                by_text.setdefault(question, query)
        done.matched_queries[how] += 1
        sample_id = sample.sample_id or query
        if sample_id in seen:
            raise InputError(
                path,
                f"sample id {sample_id!r} (of query {query!r}) already used on line"
                f" {seen[sample_id]}; give each sample its own id",
                sample.line,
            )
        seen[sample_id] = sample.line
        passages: list[str] = []
        for context in sample.contexts:
            if context.id is not None:
                index.note_id()
                passages.append(context.id)
            else:
                assert context.text is not None
                passages.append(index.match(context.text)[0])
            if context.text and passages[-1] not in texts:
                texts[passages[-1]] = context.text
        ids = ensure_passages(conn, passages)
        row_id = conn.execute(
            "INSERT INTO answer_sample (system_id, sample_id, query_id, question, answer,"
            " reference, metadata, line) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                system,
                sample_id,
                known[query],
                sample.question,
                sample.answer,
                _json(sample.reference),
                _json(sample.metadata),
                sample.line,
            ),
        ).lastrowid
        conn.executemany(
            "INSERT INTO answer_context (sample_id, position, passage_id, rank, text)"
            " VALUES (?, ?, ?, ?, ?)",
            (
                (
                    row_id,
                    i,
                    ids[passages[i]],
                    None if sample.ranks is None else sample.ranks[i],
                    context.text,
                )
                for i, context in enumerate(sample.contexts)
            ),
        )
        ranked: list[str] = []
        for i in ordered(sample):
            if passages[i] not in ranked:
                ranked.append(passages[i])
        if query in rankings:
            done.repeated_queries.append(query)
        else:
            rankings[query] = Ranking(query, ranked, None)
        done.samples += 1
    # Retrieved text fills passages that have none; it never overwrites a stored text.
    conn.executemany(
        "UPDATE passage SET text = ? WHERE ext_id = ? AND text IS NULL",
        ((text, ext_id) for ext_id, text in texts.items()),
    )
    store(
        conn,
        Run(name, str(path), list(rankings.values())),
        depth=depth,
        replace=row is not None or replace_run,
    )
    return done


def write_answer_grades(
    conn: sqlite3.Connection, path: Path, lines: list[tuple[int, AnswerGrade]], origin: str
) -> int:
    """Each line as a grade event; an unknown system or sample, or a span past the end of
    the answer, is an error naming the line (the caller's transaction then rolls back)."""
    systems = dict(conn.execute("SELECT name, id FROM answer_system"))
    answers: dict[tuple[int, str], str | None] = {
        (system, sample): answer
        for system, sample, answer in conn.execute(
            "SELECT system_id, sample_id, answer FROM answer_sample"
        )
    }
    stamp = now()
    rows = []
    for number, line in lines:
        system = systems.get(line.system)
        if system is None:
            raise InputError(path, f"no answer system {line.system!r} in the project", number)
        key = (system, line.sample_id)
        if key not in answers:
            raise InputError(
                path, f"system {line.system!r} has no sample {line.sample_id!r}", number
            )
        length = len(answers[key] or "")
        for start, end in line.unsupported or ():
            if end > length:
                raise InputError(
                    path,
                    f"unsupported span [{start}, {end}] ends past the answer ({length} characters)",
                    number,
                )
        spans = None if line.unsupported is None else [list(s) for s in line.unsupported]
        rows.append(
            (
                system,
                line.sample_id,
                line.criterion,
                annotator_id(conn, line.annotator),
                line.grade,
                _json(spans),
                origin,
                stamp,
            )
        )
    conn.executemany(
        "INSERT INTO answer_event (system_id, sample_id, criterion, annotator_id, kind, grade,"
        " unsupported, origin, graded_at) VALUES (?, ?, ?, ?, 'grade', ?, ?, ?, ?)",
        rows,
    )
    return len(rows)


def current_answer_grades(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every standing human answer grade, as the answer-grades JSONL writes it."""
    events: dict[tuple[str, str, str, str], list[tuple[int, str, int | None, int | None]]] = {}
    spans: dict[int, str | None] = {}
    for event_id, system, sample, criterion, who, kind, grade, target, unsupported in conn.execute(
        "SELECT e.id, s.name, e.sample_id, e.criterion, a.name, e.kind, e.grade, e.target,"
        " e.unsupported FROM answer_event e JOIN answer_system s ON s.id = e.system_id"
        " JOIN annotator a ON a.id = e.annotator_id WHERE e.source = 'human' ORDER BY e.id"
    ):
        events.setdefault((system, sample, criterion, who), []).append(
            (event_id, kind, grade, target)
        )
        spans[event_id] = unsupported
    out: list[dict[str, Any]] = []
    for (system, sample, criterion, who), items in sorted(events.items()):
        standing = replay(items)
        if standing is None:
            continue
        grade, event_id = standing
        line: dict[str, Any] = {
            "system": system,
            "sample_id": sample,
            "criterion": criterion,
            "grade": grade,
            "annotator": who,
        }
        if spans[event_id] is not None:
            line["unsupported"] = json.loads(spans[event_id] or "null")
        out.append(line)
    return out


def export_answer_grades(conn: sqlite3.Connection, target: Path) -> int:
    lines = current_answer_grades(conn)
    with target.open("w", encoding="utf-8") as handle:
        for line in lines:
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    return len(lines)
