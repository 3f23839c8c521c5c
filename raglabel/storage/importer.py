"""``raglabel import``: every input read and checked first, then written in one transaction.

Reading first means a bad line anywhere stops the import before the database is
touched; writing in one transaction means a failure while writing (a disk error, a run
name already taken) leaves the file exactly as it was too.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from raglabel.formats.maps import GradeMap
from raglabel.formats.notices import repeated_passages
from raglabel.formats.trec.arrays import read_qrels_table
from raglabel.formats.trec.rows import QrelsRows
from raglabel.formats.trec.table import QrelsTable
from raglabel.storage.additions import Mark, new_queries_warning
from raglabel.storage.annotators import person_id
from raglabel.storage.background import in_background
from raglabel.storage.clock import now
from raglabel.storage.items import (
    annotator_id,
    ensure_passages,
    ensure_queries,
    plan_ids,
    plan_name_ids,
)
from raglabel.storage.log import ImportedGrades, append_grades
from raglabel.storage.project import Project

# What only some imports need loads when they do: the modules behind answers, samples,
# corpora and label files (pydantic among them) were half of a qrels import's start-up.
if TYPE_CHECKING:
    from raglabel.formats.answer_grades import AnswerGrade
    from raglabel.formats.answers import AnswerFile
    from raglabel.formats.corpus import PassageRecord, QueryRecord
    from raglabel.formats.samples import Sample
    from raglabel.storage.judgment_import import JudgmentFile
    from raglabel.storage.labelfile import LabelLine
    from raglabel.storage.runs import RunColumns

#: Default pool depth: how many of each run's top passages per query become candidates.
DEFAULT_DEPTH = 20


@dataclass
class ImportRequest:
    queries: Path | None = None
    passages: Path | None = None
    qrels: Path | None = None
    grade_map: GradeMap | None = None
    annotator: str | None = None
    runs: Sequence[tuple[str, Path]] = ()
    beir: Path | None = None
    split: str = "test"
    samples: tuple[str, Path] | None = None
    labels: Path | None = None
    depth: int = DEFAULT_DEPTH
    replace: bool = False
    answers: Sequence[tuple[str, Path]] = ()  # (system, answer file)
    answer_grades: Path | None = None
    judgments: Sequence[tuple[str, Path]] = ()  # (model, file of its labels)


@dataclass
class ImportSummary:
    counts: Counter[str] = field(default_factory=Counter)
    matched: Counter[str] = field(default_factory=Counter)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # one line each, printed after the counts


@dataclass
class _Parsed:
    queries: list[QueryRecord] = field(default_factory=list)
    passages: list[PassageRecord] = field(default_factory=list)
    # (rows, annotator)
    qrels: list[tuple[QrelsRows | QrelsTable, str]] = field(default_factory=list)
    runs: list[RunColumns] = field(default_factory=list)
    samples: list[tuple[int, Sample]] = field(default_factory=list)
    sample_warnings: list[str] = field(default_factory=list)
    labels: list[LabelLine] = field(default_factory=list)
    answers: list[tuple[str, Path, AnswerFile]] = field(default_factory=list)
    answer_grades: list[tuple[int, AnswerGrade]] = field(default_factory=list)
    judgments: list[JudgmentFile] = field(default_factory=list)


Progress = Callable[[str], None]

# SQLite's page cache while importing, in KiB.
IMPORT_CACHE_KIB = 256 * 1024


def run_import(
    project: Project, request: ImportRequest, progress: Progress | None = None
) -> ImportSummary:
    step = progress or (lambda _: None)
    parsed = _parse(request, step)
    summary = ImportSummary()
    step("writing to the project")
    # A bulk write touches every page of the indexes it grows: with SQLite's default 2 MB
    # cache most of them would be read back and written out again. Staging tables stay
    # in memory. Both settings belong to this connection only.
    project.conn.execute(f"PRAGMA cache_size = -{IMPORT_CACHE_KIB}")
    project.conn.execute("PRAGMA temp_store = MEMORY")
    # Foreign keys are checked by lookups, six a label (event, candidate, current
    # grade): a sixth of a large qrels import. An import of corpus and grades alone
    # refers only to rows it has just found or made in this same transaction, and
    # deletes nothing that a foreign key's action would follow, so it goes without;
    # anything else (runs and answers cascade when replaced) keeps them. The setting
    # is this connection's and changes only outside a transaction.
    unchecked = _grades_only(request)
    if unchecked:
        project.conn.execute("PRAGMA foreign_keys = OFF")
    try:
        with project.write():
            conn = project.conn
            _write_corpus(conn, parsed, summary)
            for rows, annotator in parsed.qrels:
                _write_qrels(conn, rows, annotator, summary)
            if parsed.judgments:
                _write_judgments(conn, parsed.judgments, summary)
            if parsed.runs:
                from raglabel.storage.runs import store
            for run in parsed.runs:
                step(f"storing run {run.name!r}")
                before = Mark.of(conn)
                counts = store(conn, run, depth=request.depth, replace=request.replace)
                summary.counts["runs"] += 1
                summary.counts["run entries"] += counts["entries"]
                what = f"run {run.name!r}"
                _count_additions(
                    conn, before, summary, what=what, kind="run", named=counts["queries"]
                )
                if run.repeats:
                    summary.warnings.append(repeated_passages(run.name, run.repeats))
            if request.samples is not None:
                _write_samples(conn, request, parsed.samples, summary)
                summary.warnings += parsed.sample_warnings
            if parsed.labels:
                assert request.labels is not None
                what = f"the label file {request.labels.name!r}"
                _write_labels(conn, parsed.labels, summary, what)
            if parsed.answers:
                _write_answers(conn, request, parsed, summary)
            if request.answer_grades is not None:
                from raglabel.storage.answers import write_answer_grades

                added, already, older = write_answer_grades(
                    conn,
                    request.answer_grades,
                    parsed.answer_grades,
                    f"answer-grades:{request.answer_grades.name}",
                )
                summary.counts["answer grades"] += added
                if already:
                    summary.counts["answer grades already standing"] += already
                if older:
                    summary.counts["answer grades since changed here"] += older
            if parsed.passages or parsed.samples or parsed.answers:
                # In the same transaction: the search index never lags the passages.
                from raglabel.storage.search import reindex

                step("indexing passages for search")
                reindex(conn)
    finally:
        if unchecked:
            project.conn.execute("PRAGMA foreign_keys = ON")
    return summary


def _grades_only(request: ImportRequest) -> bool:
    """Whether the request imports nothing but queries, passages and qrels."""
    others = (request.runs, request.samples, request.labels, request.answers, request.judgments)
    return not any(others) and request.answer_grades is None


def _parse(request: ImportRequest, step: Progress) -> _Parsed:
    parsed = _Parsed()
    if request.queries or request.passages or request.beir:
        from raglabel.formats.corpus import read_beir, read_passages, read_queries
    if request.queries:
        step(f"reading {request.queries}")
        parsed.queries += read_queries(request.queries)
    if request.passages:
        step(f"reading {request.passages}")
        parsed.passages += read_passages(request.passages)
    if request.beir:
        step(f"reading {request.beir}")
        beir = read_beir(request.beir, request.split, request.grade_map)
        parsed.queries += beir.queries
        parsed.passages += beir.passages
        who = request.annotator or f"{request.beir.name}/{request.split}"
        parsed.qrels.append((beir.qrels, who))
    if request.qrels:
        step(f"reading {request.qrels}")
        rows = read_qrels_table(request.qrels, request.grade_map)
        parsed.qrels.append((rows, request.annotator or request.qrels.name))
    if request.runs:
        from raglabel.storage.runs import rank_trec_file
    for name, path in request.runs:
        step(f"reading run {name!r} from {path}")
        parsed.runs.append(rank_trec_file(name, path))
    if request.samples:
        from raglabel.formats.samples import check_gold, samples_in

        step(f"reading {request.samples[1]}")
        parsed.samples = list(samples_in(request.samples[1]))
        # Gold grades are checked now, so a bad one (or maps that cannot be grades)
        # fails before anything is written; the warnings come with the summary.
        parsed.sample_warnings = check_gold(request.samples[1], parsed.samples, request.grade_map)
    if request.labels:
        from raglabel.storage.labelfile import read_label_file

        step(f"reading {request.labels}")
        parsed.labels = [line for _, line in read_label_file(request.labels)]
    if request.answers:
        from raglabel.formats.answers import read_answers
    for name, path in request.answers:
        step(f"reading answers of {name!r} from {path}")
        parsed.answers.append((name, path, read_answers(path)))
    if request.answer_grades:
        from raglabel.formats.answer_grades import read_answer_grades

        step(f"reading {request.answer_grades}")
        parsed.answer_grades = list(read_answer_grades(request.answer_grades))
    if request.judgments:
        from raglabel.storage.judgment_import import read_judgment_files

        step("reading other judges' labels")
        parsed.judgments = read_judgment_files(list(request.judgments), request.grade_map)
    return parsed


def _write_judgments(
    conn: sqlite3.Connection, files: list[JudgmentFile], summary: ImportSummary
) -> None:
    from raglabel.storage.judgment_import import store

    for labels in files:
        stored = store(conn, labels)
        summary.counts["suggestions"] += stored.suggestions
        summary.counts["queries added"] += stored.queries_added
        summary.counts["passages added"] += stored.passages_added
        summary.warnings += stored.warnings
        summary.notes += stored.notes


def _write_answers(
    conn: sqlite3.Connection, request: ImportRequest, parsed: _Parsed, summary: ImportSummary
) -> None:
    from raglabel.storage.answers import write_system
    from raglabel.storage.matching import PassageIndex

    index = PassageIndex(conn.execute("SELECT ext_id, text FROM passage WHERE text IS NOT NULL"))
    for name, path, answers in parsed.answers:
        done = write_system(
            conn, name, path, answers, index, depth=request.depth, replace_run=request.replace
        )
        summary.counts["answer samples"] += done.samples
        summary.counts["queries added"] += done.queries_added
        summary.counts["runs"] += 1
        words = {"id": "by id", "text": "by text", "new": "added as new queries"}
        how = ", ".join(f"{n} {words[kind]}" for kind, n in sorted(done.matched_queries.items()))
        line = f"answers of {name!r}: {answers.format} format, {done.samples} samples"
        line += f" (questions matched: {how})"
        if done.replaced:
            line += f"; replaced the {done.replaced} samples imported before"
        summary.notes.append(line)
        summary.warnings.extend(done.warnings)
        if done.repeated_queries:
            summary.warnings.append(
                f"answers of {name!r}: {len(done.repeated_queries)} samples repeat a query"
                f" (first {done.repeated_queries[0]!r}); run {name!r} ranks each query's"
                " first sample's contexts"
            )
    summary.matched.update(index.counts)


def _json(value: dict[str, Any] | None) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _write_corpus(conn: sqlite3.Connection, parsed: _Parsed, summary: ImportSummary) -> None:
    if parsed.queries:
        before = conn.execute("SELECT count(*) FROM query").fetchone()[0]
        conn.executemany(
            "INSERT INTO query (ext_id, text, expected_answer, metadata) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (ext_id) DO UPDATE SET text = excluded.text,"
            " expected_answer = coalesce(excluded.expected_answer, expected_answer),"
            " metadata = coalesce(excluded.metadata, metadata)",
            ((q.id, q.text, q.expected_answer, _json(q.metadata())) for q in parsed.queries),
        )
        added = conn.execute("SELECT count(*) FROM query").fetchone()[0] - before
        summary.counts["queries added"] += added
        summary.counts["queries updated"] += len(parsed.queries) - added
    if parsed.passages:
        before = conn.execute("SELECT count(*) FROM passage").fetchone()[0]
        conn.executemany(
            "INSERT INTO passage (ext_id, title, text, metadata) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (ext_id) DO UPDATE SET title = excluded.title, text = excluded.text,"
            " metadata = excluded.metadata",
            ((p.id, p.title, p.text, _json(p.metadata)) for p in parsed.passages),
        )
        added = conn.execute("SELECT count(*) FROM passage").fetchone()[0] - before
        summary.counts["passages added"] += added
        summary.counts["passages updated"] += len(parsed.passages) - added


def _grade_events(
    conn: sqlite3.Connection, rows: QrelsRows | QrelsTable, annotator: str, origin: str
) -> int:
    """Imported grades as events by ``annotator``; their pairs become candidates.

    New queries take ids in order of first mention (the Queries table's order), new
    passages in order of their names. Names are random as far as SQLite's index on
    them goes: ids given in first-mention order left either the table or that index
    to grow at random places, 1.5 s of CPU for 400,000 new passages, where in name
    order both grow at their ends (a third of that). A passage's id is internal; it
    orders only passages that tie otherwise, by name now rather than by file line.
    """
    count = len(rows.grades)
    if isinstance(rows, QrelsTable):
        query_ids, insert_queries = plan_name_ids(conn, "query", rows.qids)
        insert_queries()
        passage_ids, insert_passages = plan_name_ids(conn, "passage", rows.docids, by_name=True)
        # SQLite lets go of the GIL while it stores the new passages, the slowest part
        # of the import: the events' arrays are packed meanwhile.
        stored = in_background(insert_passages)
        try:
            imported = ImportedGrades.of(query_ids, passage_ids, rows.grades.astype(np.int64))
        finally:
            stored()
    else:
        queries = ensure_queries(conn, rows.qids)
        passages, insert_passages = plan_ids(conn, "passage", sorted(set(rows.docids)))
        stored = in_background(insert_passages)
        try:
            imported = ImportedGrades.of(
                np.fromiter(map(queries.__getitem__, rows.qids), np.int64, count),
                np.fromiter(map(passages.__getitem__, rows.docids), np.int64, count),
                np.fromiter(rows.grades, np.int64, count),
            )
        finally:
            stored()
    append_grades(
        conn,
        imported,
        annotator_id=person_id(conn, annotator),
        origin=origin,
        graded_at=now(),
    )
    return count


def _write_qrels(
    conn: sqlite3.Connection,
    rows: QrelsRows | QrelsTable,
    annotator: str,
    summary: ImportSummary,
) -> None:
    before = Mark.of(conn)
    summary.counts["grades"] += _grade_events(conn, rows, annotator, f"qrels:{annotator}")
    named = len(np.unique(rows.qids)) if isinstance(rows, QrelsTable) else len(set(rows.qids))
    what = f"the labels of {annotator!r}"
    _count_additions(conn, before, summary, what=what, kind="label", named=named)


def _count_additions(
    conn: sqlite3.Connection,
    before: Mark,
    summary: ImportSummary,
    *,
    what: str,
    kind: str,
    named: int,
) -> None:
    """The queries and passages a run or a label file created, into the summary's counts,
    and the warning when most of its queries were new to a project that had queries."""
    queries, passages = before.added(conn)
    summary.counts["queries added"] += queries
    summary.counts["passages added"] += passages
    warning = new_queries_warning(conn, before, what=what, kind=kind, named=named, added=queries)
    if warning is not None:
        summary.warnings.append(warning)


def _write_samples(
    conn: sqlite3.Connection,
    request: ImportRequest,
    samples: list[tuple[int, Sample]],
    summary: ImportSummary,
) -> None:
    from raglabel.formats.samples import SampleKeys, gold_grades
    from raglabel.storage.matching import PassageIndex
    from raglabel.storage.runs import Ranking, Run, store

    assert request.samples is not None
    name, path = request.samples
    index = PassageIndex(conn.execute("SELECT ext_id, text FROM passage WHERE text IS NOT NULL"))
    known_queries = conn.execute("SELECT count(*) FROM query").fetchone()[0]
    # Keyed as eval --samples keys the file alone, the project's passages aside.
    keys = SampleKeys(path, [sample.carried() for _, sample in samples], index)
    triples: list[tuple[str, str, int]] = []
    rankings: list[Ranking] = []
    texts: dict[str, str] = {}
    for number, sample in samples:
        conn.execute(
            "INSERT INTO query (ext_id, text, expected_answer, k) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (ext_id) DO UPDATE SET text = excluded.text,"
            " expected_answer = excluded.expected_answer, k = excluded.k",
            (
                sample.id,
                sample.input.question,
                sample.expected_answer,
                sample.metadata.k if sample.metadata else None,
            ),
        )
        gold = gold_grades(path, number, sample, request.grade_map)
        retrieved, gold = keys.of(sample.carried(), gold)
        triples += [(sample.id, pid, grade) for pid, grade in gold.items()]
        ranked: list[str] = []
        for passage, ext_id in zip(sample.retrieved(), retrieved, strict=True):
            if passage.text and ext_id not in texts:
                texts[ext_id] = passage.text
            if ext_id not in ranked:
                ranked.append(ext_id)
        rankings.append(Ranking(sample.id, ranked, None))
    summary.counts["samples"] += len(samples)
    summary.counts["queries added"] += (
        conn.execute("SELECT count(*) FROM query").fetchone()[0] - known_queries
    )
    gold_rows = QrelsRows(
        [q for q, _, _ in triples], [p for _, p, _ in triples], [g for _, _, g in triples]
    )
    summary.counts["grades"] += _grade_events(
        conn, gold_rows, request.annotator or path.name, f"samples:{path.name}"
    )
    run = Run(name, str(path), rankings)
    counts = store(conn, run, depth=request.depth, replace=request.replace)
    summary.counts["runs"] += 1
    summary.counts["run entries"] += counts["entries"]
    # Retrieved text fills passages the corpus did not give text for; it never
    # overwrites a text the project already holds.
    ensure_passages(conn, texts)
    conn.executemany(
        "UPDATE passage SET text = ? WHERE ext_id = ? AND text IS NULL",
        ((text, ext_id) for ext_id, text in texts.items()),
    )
    summary.matched.update(index.counts)
    summary.warnings += keys.warnings()


def _known_events(conn: sqlite3.Connection, annotators: list[int]) -> dict[tuple[object, ...], int]:
    if not annotators:
        return {}
    marks = ",".join("?" * len(annotators))
    rows = conn.execute(
        "SELECT query_id, passage_id, annotator_id, kind, grade, note, graded_at, id"
        f" FROM event WHERE annotator_id IN ({marks})",
        annotators,
    )
    return {tuple(row[:7]): int(row[7]) for row in rows}


def _write_labels(
    conn: sqlite3.Connection, lines: list[LabelLine], summary: ImportSummary, what: str
) -> None:
    from raglabel.storage.grades import GradeEvent, append_many, event_row

    # Queries, passages and people the project lacks are added, and said: a label file
    # of another project, or a misspelt name, must not pass for this project's grades.
    before = Mark.of(conn)
    people = sorted({line.annotator for line in lines})
    stored_people = {
        name
        for (name,) in conn.execute(
            "SELECT name FROM annotator WHERE name IN (SELECT value FROM json_each(?))",
            (json.dumps(people),),
        )
    }
    queries = ensure_queries(conn, (line.query for line in lines))
    passages = ensure_passages(conn, (line.passage for line in lines))
    annotators = {name: annotator_id(conn, name) for name in people}
    # Copies of one project merge through their exported logs, which share the events
    # made before the copies parted: an event already in this log (same pair, person,
    # kind, grade, note and time to the millisecond) is that event, not a second one.
    known = _known_events(conn, sorted(annotators.values()))
    latest = _latest_times(known)
    first = conn.execute("SELECT coalesce(max(id), 0) FROM event").fetchone()[0] + 1
    # New events keep their order, so each gets first + its position among them as its
    # new id; undo targets are renumbered the same way, to a known event's own id too.
    renumber: dict[int, int] = {}
    fresh: list[tuple[LabelLine, tuple[int, int, int]]] = []
    # Items whose new events are older than one the project holds (by their first such line).
    overtaken: dict[tuple[int, int, int], LabelLine] = {}
    for line in lines:
        ids = (queries[line.query], passages[line.passage], annotators[line.annotator])
        key = (
            *ids,
            line.kind,
            line.grade,
            line.note,
            line.graded_at,
        )
        if line.graded_at is not None and key in known:
            if line.event is not None:
                renumber[line.event] = known[key]
            continue
        if line.event is not None:
            renumber[line.event] = first + len(fresh)
        fresh.append((line, ids))
        if line.graded_at is not None and latest.get(ids, "") > line.graded_at:
            overtaken.setdefault(ids, line)
    rows = []
    for line, ids in fresh:
        event = GradeEvent.model_validate(
            line.model_dump(exclude={"event"})
            | {"target": None if line.target is None else renumber[line.target]}
        )
        rows.append(event_row(event, *ids))
    conn.executemany(
        "INSERT OR IGNORE INTO candidate (query_id, passage_id) VALUES (?, ?)",
        {(queries[line.query], passages[line.passage]) for line in lines},
    )
    append_many(conn, rows)
    summary.counts["label events"] += len(rows)
    if len(rows) < len(lines):
        summary.counts["label events already in the log"] += len(lines) - len(rows)
    _count_additions(conn, before, summary, what=what, kind="label", named=len(queries))
    created = [name for name in people if name not in stored_people]
    if created:
        summary.notes.append(f"new annotators, created: {', '.join(created)}")
    if overtaken:
        line = next(iter(overtaken.values()))
        summary.warnings.append(
            f"{len(overtaken)} of the file's (pair, annotator) items already held events"
            f" newer than the file's on them (first: {line.annotator} on {line.query}"
            f" {line.passage}); the file's were added after them, and a current grade"
            " follows the order events were added, not their times: each person should"
            " grade a pair in one copy only"
        )


def _latest_times(known: dict[tuple[object, ...], int]) -> dict[tuple[object, ...], str]:
    """The time of each item's latest event among ``known`` (keys as ``_known_events``
    makes them: the item's ids first, the time last). Times are ISO 8601 in UTC with
    milliseconds (``storage.clock``), so they compare as text."""
    latest: dict[tuple[object, ...], str] = {}
    for key in known:
        item, at = key[:3], key[6]
        if isinstance(at, str) and at > latest.get(item, ""):
            latest[item] = at
    return latest
