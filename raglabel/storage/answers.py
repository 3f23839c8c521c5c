"""Answer samples of RAG systems, and the human answer grades given on them.

A system's samples are written whole: importing a system again replaces its samples,
contexts and run (its grades stay: they name the sample by id, and the log is
append-only). Answer grades are events of ``answer_event``, events of the one model the
passage log has too (``events``), with an answer criterion as their target: the current
grade of (system, sample, criterion, annotator) is the last grade or clear that no undo
reverted.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from raglabel.errors import InputError
from raglabel.formats.answer_grades import AnswerGrade
from raglabel.formats.answers import AEGIS, AnswerFile, AnswerSample, ordered
from raglabel.formats.context_ids import ContextIds
from raglabel.formats.sentences import Span
from raglabel.formats.text import content_id, normalize
from raglabel.storage.annotators import person_id
from raglabel.storage.clock import now
from raglabel.storage.events import (
    ANSWER_LOG,
    AnswerTarget,
    Event,
    append,
    insert_sql,
    item_standing,
    last_undoable,
    undo_of,
    values,
)
from raglabel.storage.items import annotator_id, ensure_passages
from raglabel.storage.log import EventRow, replay
from raglabel.storage.matching import PassageIndex
from raglabel.storage.project import Project
from raglabel.storage.runs import Ranking, Run, store


@dataclass
class Written:
    samples: int = 0
    replaced: int = 0  # samples the system had before, now replaced
    queries_added: int = 0
    repeated_queries: list[str] = field(default_factory=list)
    matched_queries: Counter[str] = field(default_factory=Counter)
    #: Samples whose query id names another question in the project or file:
    #: (sample, the question that id already names).
    other_questions: list[tuple[AnswerSample, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


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
    questions: dict[str, str] = {}  # ext_id -> the query's text, where it has one
    for qid, ext_id, text in conn.execute("SELECT id, ext_id, text FROM query ORDER BY id"):
        known[ext_id] = qid
        if text:
            by_text.setdefault(normalize(text), ext_id)
            questions[ext_id] = text

    identity = ContextIds(
        ([(c.id, c.text) for c in sample.contexts] for sample in answers.samples),
        answers.ids,
        index,
    )
    seen: dict[str, int] = {}
    rankings: dict[str, Ranking] = {}
    texts: dict[str, str] = {}
    for sample in answers.samples:
        question = normalize(sample.question) if sample.question else ""
        # A query id names a project query only while both name the same question
        # (or one of them has none): an id that arrives with another question is a
        # numbering (RAGChecker numbers each file's from 0) or a mistake, and the
        # sample then goes by its question, with a warning.
        named = sample.query_id is not None and sample.query_id in known
        theirs = questions.get(sample.query_id or "") if named else None
        if named and theirs and question and normalize(theirs) != question:
            done.other_questions.append((sample, theirs))
            named = False
        if named:
            assert sample.query_id is not None
            query, how = sample.query_id, "id"
        elif question and question in by_text:
            query, how = by_text[question], "text"
        else:
            query, how = sample.query_id or content_id(sample.question or ""), "new"
            if query in known:  # the id is another question's: the question's own id
                query = content_id(sample.question or "")
            if query not in known:
                known[query] = int(
                    conn.execute(
                        "INSERT INTO query (ext_id, text) VALUES (?, ?)", (query, sample.question)
                    ).lastrowid
                    or 0
                )
                done.queries_added += 1
                if sample.question:
                    questions[query] = sample.question
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
        passages = identity.sample([(c.id, c.text) for c in sample.contexts])
        for passage, context in zip(passages, sample.contexts, strict=True):
            if context.text and passage not in texts:
                texts[passage] = context.text
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
    done.warnings.extend(identity.warnings(f"answers of {name!r}", answers.format))
    if done.other_questions:
        done.warnings.append(_other_questions(name, answers, done.other_questions))
    if answers.format == AEGIS:
        # The request names no question: raglabel chose what stands for it, so it says so.
        done.warnings.append(
            f"answers {name!r} ({AEGIS} requests): no question is given, so each sample's"
            " golden answer is its question as well as its reference, and it has no"
            " generated answer (faithfulness, answer_relevancy and context_recall are NA)"
        )
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


def _other_questions(
    name: str, answers: AnswerFile, clashes: list[tuple[AnswerSample, str]]
) -> str:
    """The warning for samples whose query id named another question."""
    sample, theirs = clashes[0]
    count = len(clashes)
    ids = "query id names" if count == 1 else "query ids name"
    why = (
        f"{answers.format}'s query_id numbers the questions of one file only"
        if answers.ids == "local"
        else "an id that names two questions cannot say which one is meant"
    )
    return (
        f"answers of {name!r}: {count} {ids} another question than the project's"
        f" query of that id (line {sample.line}: query_id {sample.query_id!r} is"
        f" {sample.question!r} here, {theirs!r} in the project); {why}, so these samples"
        " were matched by their question's text, or added as new queries"
    )


def write_answer_grades(
    conn: sqlite3.Connection, path: Path, lines: list[tuple[int, AnswerGrade]], origin: str
) -> tuple[int, int, int]:
    """Each line as a grade event of the answer log; how many were added, and how many
    left out: because the annotator's grade already stands as the line gives it (same
    grade, same unsupported spans), or because the line is an event of the log that no
    longer stands (same grade, spans and ``graded_at``: another copy of the project,
    exported, still held a grade given before the copies parted and since changed here).
    A line keeps its ``graded_at``; one without is stamped with the import's time. So a
    file exported by ``export --answer-grades`` and imported again adds nothing, and the
    copies' files may come back in any order. An unknown system or sample, a span past
    the end of the answer, or an event breaking the log's rules is an error naming the
    line (the caller's transaction then rolls back)."""
    samples = {(line.system, line.sample_id) for _, line in lines}
    standing = standing_answer_grades(conn, samples=samples)
    logged = _logged_grades(conn, samples)
    systems = dict(conn.execute("SELECT name, id FROM answer_system"))
    answers: dict[tuple[int, str], str | None] = {
        (system, sample): answer
        for system, sample, answer in conn.execute(
            "SELECT system_id, sample_id, answer FROM answer_sample"
        )
    }
    stamp = now()
    rows = []
    already = older = 0
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
        event = Event(
            AnswerTarget(line.system, line.sample_id, line.criterion),
            line.annotator,
            "grade",
            grade=line.grade,
            unsupported=None if line.unsupported is None else tuple(line.unsupported),
            origin=origin,
            graded_at=line.graded_at or stamp,
        )
        problem = event.problem()
        if problem is not None:
            raise InputError(path, problem, number)
        item = (line.system, line.sample_id, line.criterion, line.annotator)
        found = standing.get(item)
        if found is not None and found[:2] == (line.grade, event.unsupported):
            already += 1
            continue
        if line.graded_at is not None and (line.grade, event.unsupported, line.graded_at) in (
            logged.get(item, ())
        ):
            older += 1
            continue
        rows.append(
            values(ANSWER_LOG, event, (*key, line.criterion, person_id(conn, line.annotator)))
        )
    conn.executemany(insert_sql(ANSWER_LOG), rows)
    return len(rows), already, older


def _logged_grades(
    conn: sqlite3.Connection, samples: Collection[tuple[str, str]]
) -> dict[AnswerGradeKey, set[tuple[int, tuple[Span, ...] | None, str]]]:
    """Every human grade event of the log on ``samples``, standing or not: (grade,
    unsupported spans, graded_at) by (system, sample, criterion, annotator)."""
    out: dict[AnswerGradeKey, set[tuple[int, tuple[Span, ...] | None, str]]] = {}
    for system, sample, criterion, who, grade, unsupported, graded_at in conn.execute(
        "SELECT s.name, e.sample_id, e.criterion, a.name, e.grade, e.unsupported, e.graded_at"
        " FROM answer_event e JOIN answer_system s ON s.id = e.system_id"
        " JOIN annotator a ON a.id = e.annotator_id"
        " WHERE e.source = 'human' AND e.kind = 'grade' AND e.graded_at IS NOT NULL"
    ):
        if (system, sample) in samples:
            out.setdefault((system, sample, criterion, who), set()).add(
                (grade, _spans(unsupported), graded_at)
            )
    return out


#: One standing answer grade: (grade, unsupported spans or None, the grade event's id).
Standing = tuple[int, tuple[Span, ...] | None, int]
#: (system, sample id, criterion, annotator).
AnswerGradeKey = tuple[str, str, str, str]


def standing_answer_grades(
    conn: sqlite3.Connection,
    *,
    annotator: str | None = None,
    samples: Collection[tuple[str, str]] | None = None,
) -> dict[AnswerGradeKey, Standing]:
    """Every standing human answer grade by (system, sample, criterion, annotator): only
    ``annotator``'s when given, only those of ``samples`` ((system, sample id) pairs)
    when given."""
    sql = (
        "SELECT e.id, s.name, e.sample_id, e.criterion, a.name, e.kind, e.grade, e.target,"
        " e.unsupported FROM answer_event e JOIN answer_system s ON s.id = e.system_id"
        " JOIN annotator a ON a.id = e.annotator_id WHERE e.source = 'human'"
    )
    args: list[object] = []
    if annotator is not None:
        sql += " AND a.name = ?"
        args.append(annotator)
    wanted = sorted({sample for _, sample in samples or ()})
    if samples is not None and len(wanted) <= 900:
        # Narrowed in SQL while the ids stay under SQLite's limit of parameters; the
        # (system, sample) pairs are checked below either way.
        sql += f" AND e.sample_id IN ({', '.join('?' * len(wanted))})"
        args.extend(wanted)
    events: dict[AnswerGradeKey, list[EventRow]] = {}
    spans: dict[int, str | None] = {}
    for event_id, system, sample, criterion, who, kind, grade, target, unsupported in conn.execute(
        sql + " ORDER BY e.id", args
    ):
        if samples is not None and (system, sample) not in samples:
            continue
        events.setdefault((system, sample, criterion, who), []).append(
            (event_id, kind, grade, target)
        )
        spans[event_id] = unsupported
    out: dict[AnswerGradeKey, Standing] = {}
    for key, items in sorted(events.items()):
        standing = replay(items)
        if standing is not None:
            grade, event_id = standing
            out[key] = (grade, _spans(spans[event_id]), event_id)
    return out


def _spans(text: str | None) -> tuple[Span, ...] | None:
    if text is None:
        return None
    return tuple((int(start), int(end)) for start, end in json.loads(text))


def current_answer_grades(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every standing human answer grade, as the answer-grades JSONL writes it: with the
    time the grade was given."""
    standing = standing_answer_grades(conn)
    times = dict(
        conn.execute(
            "SELECT id, graded_at FROM answer_event WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps([event_id for _, _, event_id in standing.values()]),),
        )
    )
    out: list[dict[str, Any]] = []
    for (system, sample, criterion, who), (grade, spans, event_id) in standing.items():
        line: dict[str, Any] = {
            "system": system,
            "sample_id": sample,
            "criterion": criterion,
            "grade": grade,
            "annotator": who,
        }
        if spans is not None:
            line["unsupported"] = [list(span) for span in spans]
        if times[event_id] is not None:
            line["graded_at"] = times[event_id]
        out.append(line)
    return out


def answered_queries(conn: sqlite3.Connection) -> list[str]:
    """External ids of the queries some system answered, in the project's query order."""
    return [
        qid
        for (qid,) in conn.execute(
            "SELECT q.ext_id FROM query q WHERE EXISTS"
            " (SELECT 1 FROM answer_sample s WHERE s.query_id = q.id) ORDER BY q.id"
        )
    ]


# -- the app's writes --------------------------------------------------------------------


@dataclass(frozen=True)
class AnswerRecorded:
    """What the log holds after an event: its id, and the item's standing grade and spans."""

    event_id: int
    query: str  # the external id of the sample's query
    system: str
    sample_id: str
    criterion: str
    kind: str
    grade: int | None
    unsupported: tuple[Span, ...] | None


def record_answer(project: Project, event: Event) -> AnswerRecorded:
    """Append one answer event; it is committed to disk before this returns. Anything
    inconsistent is an error and writes nothing."""
    target = event.target
    if not isinstance(target, AnswerTarget):
        raise InputError(None, "a passage's event goes to the grade log (grades.record)")
    event.check()
    with project.write():
        conn = project.conn
        row = conn.execute(
            "SELECT y.id, s.answer, q.ext_id FROM answer_sample s JOIN answer_system y"
            " ON y.id = s.system_id JOIN query q ON q.id = s.query_id"
            " WHERE y.name = ? AND s.sample_id = ?",
            (target.system, target.sample_id),
        ).fetchone()
        if row is None:
            raise InputError(
                None, f"no sample {target.sample_id!r} of answer system {target.system!r}"
            )
        system, answer, query = int(row[0]), row[1] or "", str(row[2])
        event = replace(event, unsupported=_checked(event.unsupported, len(answer)))
        who = person_id if event.source == "human" else annotator_id
        item = (system, target.sample_id, target.criterion, who(conn, event.annotator))
        event_id = append(conn, event, item)
        standing = item_standing(conn, ANSWER_LOG, item)
        grade, marks = None, None
        if standing is not None:
            grade = standing[0]
            marks = _spans(
                conn.execute(
                    "SELECT unsupported FROM answer_event WHERE id = ?", (standing[1],)
                ).fetchone()[0]
            )
    return AnswerRecorded(
        event_id,
        query,
        target.system,
        target.sample_id,
        target.criterion,
        event.kind,
        grade,
        marks,
    )


def _checked(spans: tuple[Span, ...] | None, length: int) -> tuple[Span, ...] | None:
    if spans is None:
        return None
    for start, end in spans:
        if not 0 <= start < end <= length:
            raise InputError(
                None, f"unsupported span [{start}, {end}] is not inside the answer ({length} chars)"
            )
    return tuple(sorted(set(spans)))


def undo_last_answer(
    project: Project, annotator: str, *, origin: str | None = None
) -> AnswerRecorded | None:
    """Revert the annotator's latest answer action not yet reverted; None if there is none."""
    undoable = last_undoable(project.conn, "answer", annotator)
    if undoable is None:
        return None
    return record_answer(project, undo_of(undoable, annotator, origin))


def export_answer_grades(conn: sqlite3.Connection, target: Path) -> int:
    lines = current_answer_grades(conn)
    with target.open("w", encoding="utf-8") as handle:
        for line in lines:
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    return len(lines)
