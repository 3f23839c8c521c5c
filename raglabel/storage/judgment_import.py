"""Labels another judge wrote, into a project as that judge's suggestions, never as grades.

``raglabel import DB --judgments MODEL=FILE`` reads a TREC qrels file (``qid iter docid
label``, each label mapped by the grade map as human qrels are) or a JSON Lines file of
``{"query_id", "doc_id" | "passage_id", "relevance" | "grade", "reason"?}`` objects (so
one model's ``export --suggestions`` imports back), and stores one suggestion of model
MODEL per pair, marked ``imported`` and tied to a record of the file (its path, SHA-256
and the grade map that read it). Everything that reads suggestions
sees them: the grading app, ``agree``, ``--fill-with-judge`` and ``export --suggestions``.

What a demanding user expects of a second import:

- the same file (same bytes) under the same MODEL and grade map adds nothing and says so,
  unless a later file of MODEL replaced some of its labels: then its labels are stored
  again and stand again; under another grade map it is refused, since the two readings
  would disagree;
- another file under the same MODEL adds its labels; for a pair both name, the newer
  stands (every reader takes a model's latest suggestion for a pair);
- MODEL may not be a model ``raglabel judge`` asked in this project, nor an annotator's
  name: the two would be counted as one judge (or compared with themselves) with no word
  said. The judge refuses a model name imported labels use, for the same reason.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

from raglabel.errors import InputError, UsageError
from raglabel.formats.jsonl import Identifier, describe, objects
from raglabel.formats.lines import check_readable
from raglabel.formats.maps import GradeMap

# The one place this module names the TREC qrels reader, so it can be re-pointed at once.
from raglabel.formats.trec.arrays import read_qrels_table
from raglabel.formats.trec.rows import QrelsRows
from raglabel.judge.flags import flag_passage
from raglabel.storage.additions import Mark, new_queries_warning
from raglabel.storage.clock import now
from raglabel.storage.items import ensure_passages, ensure_queries, json_list

Format = Literal["qrels", "jsonl"]

#: How much of a file is read to tell JSON Lines from qrels.
_SNIFF_BYTES: Final = 4096


class JudgmentLine(BaseModel):
    """One line of a JSON Lines file of another judge's labels."""

    # Other fields (a score, the judge's raw reply) may travel along; they are not read.
    model_config = ConfigDict(frozen=True, extra="ignore")

    query_id: Identifier
    # The passage: ``doc_id`` as TREC names it, or ``passage_id`` as raglabel's own
    # ``export --suggestions`` writes it, so that an export imports back; one of the two.
    doc_id: Identifier | None = None
    passage_id: Identifier | None = None
    relevance: StrictInt | None = None  # a label, turned into a grade by the grade map
    grade: Annotated[StrictInt, Field(ge=1, le=5)] | None = None  # a grade 1-5, as it is
    reason: str | None = None
    # Read only to refuse what one model's labels cannot be: an export's lines of
    # several models, or its failed answers (``--with-failures``), which hold no label.
    model: str | None = None
    failed: bool | None = None


@dataclass(frozen=True)
class JudgmentFile:
    """One ``--judgments MODEL=FILE`` read and checked: a grade (and reason) per pair."""

    model: str
    path: Path
    sha256: str
    format: Format
    grade_map: str | None  # the map that read its labels; None when every line gave a grade
    qids: list[str]
    docids: list[str]
    grades: list[int]
    reasons: list[str | None]

    def __len__(self) -> int:
        return len(self.qids)


@dataclass
class Stored:
    """What storing one file did, for the import's summary."""

    suggestions: int = 0
    queries_added: int = 0
    passages_added: int = 0
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def read_judgment_files(
    specs: list[tuple[str, Path]], grade_map: GradeMap | None
) -> list[JudgmentFile]:
    """Every ``(MODEL, FILE)`` read and checked, before anything is written."""
    seen: set[str] = set()
    for model, _ in specs:
        if not model.strip() or model != model.strip() or any(c < " " for c in model):
            raise UsageError(f"--judgments {model!r}: a model name must be a plain, non-empty name")
        reserved = reserved_name(model)
        if reserved is not None:
            raise UsageError(f"--judgments {model}=FILE: {reserved}")
        twin = next((other for other in seen if other.casefold() == model.casefold()), None)
        if twin is not None:
            said = "named twice" if twin == model else f"named twice ({twin!r} and {model!r})"
            raise UsageError(f"--judgments: model {model!r} is {said}; one file per model")
        seen.add(model)
    return [read_judgments(model, path, grade_map) for model, path in specs]


def read_judgments(model: str, path: Path, grade_map: GradeMap | None = None) -> JudgmentFile:
    """One file of another judge's labels: TREC qrels, or JSON Lines when its first
    non-blank character is ``{``. Any bad line stops the import, naming the line."""
    check_readable(path)
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        head = handle.read(_SNIFF_BYTES)
        digest.update(head)
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    sha256 = digest.hexdigest()
    used = GradeMap() if grade_map is None else grade_map
    if head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):
        return _read_jsonl(model, path, sha256, used)
    rows: QrelsRows = read_qrels_table(path, used).rows()
    return JudgmentFile(
        model,
        path,
        sha256,
        "qrels",
        used.describe(),
        rows.qids,
        rows.docids,
        rows.grades,
        [None] * len(rows.qids),
    )


def _read_jsonl(model: str, path: Path, sha256: str, grade_map: GradeMap) -> JudgmentFile:
    out = JudgmentFile(model, path, sha256, "jsonl", None, [], [], [], [])
    first_line: dict[tuple[str, str], int] = {}
    models: dict[str, int] = {}  # each model a line names, and the first line naming it
    mapped = False
    for number, value in objects(path):
        try:
            line = JudgmentLine.model_validate(value)
        except ValidationError as exc:
            raise InputError(path, describe(exc), number) from None
        passage = _passage_of(path, number, line)
        if line.model is not None:
            models.setdefault(line.model, number)
            if len(models) > 1:
                first, at = next(iter(models.items()))
                raise InputError(
                    path,
                    f"this line names model {line.model!r}, line {at} named {first!r}:"
                    f" --judgments {model}=FILE takes one model's labels; split the file by"
                    " its model field and import each part under its own name",
                    number,
                )
        if (line.relevance is None) == (line.grade is None):
            said = "both" if line.grade is not None else "neither"
            raise InputError(
                path,
                f"give one of relevance (a label the grade map reads) or grade (1-5);"
                f" this line has {said}",
                number,
            )
        if line.grade is not None:
            grade = line.grade
        else:
            assert line.relevance is not None
            found = grade_map.grade_of(line.relevance)
            if found is None:
                raise InputError(path, grade_map.uncovered(line.relevance), number)
            grade, mapped = found, True
        pair = (line.query_id, passage)
        if pair in first_line:
            raise InputError(
                path,
                f"passage {pair[1]!r} is judged twice for query {pair[0]!r}"
                f" (lines {first_line[pair]} and {number}); keep one label per pair",
                number,
            )
        first_line[pair] = number
        out.qids.append(line.query_id)
        out.docids.append(passage)
        out.grades.append(grade)
        out.reasons.append(line.reason)
    if not out.qids:
        raise InputError(path, "has no labels (the file is empty or only blank lines)")
    # The map is recorded only when it read a label: a file of grades needs none.
    return replace(out, grade_map=grade_map.describe()) if mapped else out


def _passage_of(path: Path, number: int, line: JudgmentLine) -> str:
    """The line's passage id, from exactly one of ``doc_id`` and ``passage_id``."""
    if line.failed:
        raise InputError(
            path,
            "a failed judge answer (from export --suggestions --with-failures) holds no"
            " label; export without --with-failures, or drop the lines marked failed",
            number,
        )
    if line.doc_id is not None and line.passage_id is not None:
        raise InputError(
            path, "give the passage as doc_id or passage_id, not both; this line has both", number
        )
    passage = line.doc_id if line.doc_id is not None else line.passage_id
    if passage is None:
        raise InputError(
            path, "give the passage as doc_id or passage_id; this line has neither", number
        )
    return passage


def imported_models(conn: sqlite3.Connection) -> set[str]:
    """Every model name imported labels are stored under."""
    return {model for (model,) in conn.execute("SELECT DISTINCT model FROM judgment_import")}


def asked_models(conn: sqlite3.Connection) -> list[str]:
    """Every model name raglabel judge asked about passages in this project."""
    # A passage run's record names its models (a small table); files from before judge
    # runs were recorded hold suggestions alone.
    return [
        str(name)
        for (name,) in conn.execute(
            "SELECT m.value FROM judge_run r, json_each(r.models) m WHERE r.kind = 'passages'"
            " UNION SELECT DISTINCT model FROM suggestion WHERE source = 'judge'"
        )
    ]


def store(conn: sqlite3.Connection, labels: JudgmentFile) -> Stored:
    """``labels`` as suggestions of their model, inside the caller's transaction; pairs
    the project lacks become candidates (and their queries and passages rows)."""
    model, path = labels.model, labels.path
    _refuse_clashes(conn, labels)
    done = Stored()
    before = conn.execute(
        "SELECT id, file, grade_map, imported_at FROM judgment_import"
        " WHERE model = ? AND sha256 = ?",
        (model, labels.sha256),
    ).fetchone()
    # Set when this file was imported before and a later file of the same model replaced
    # some of its labels: a user importing it again wants its labels to stand again.
    again_as: tuple[int, str, int] | None = None
    if before is not None:
        import_id, file, grade_map, when = before
        if grade_map != labels.grade_map:
            raise InputError(
                path,
                f"the same file was imported as {model!r} on {when} ({file}) with grade map"
                f" {grade_map or 'none (grades as given)'}; read with"
                f" {labels.grade_map or 'none'} its grades would differ. Import it under"
                " another model name to keep both readings",
            )
        replaced = _replaced_since(conn, import_id)
        if not replaced:
            done.notes.append(
                f"judgments of {model!r} from {path}: the same file was imported as"
                f" {model!r} on {when} and all its labels stand; nothing new"
            )
            return done
        again_as = (import_id, when, replaced)
    for (other,) in conn.execute(
        "SELECT model FROM judgment_import WHERE sha256 = ? AND model != ? ORDER BY id",
        (labels.sha256, model),
    ):
        done.warnings.append(
            f"judgments of {model!r}: {path} holds the same bytes as the labels imported"
            f" as {other!r}; the two models will agree perfectly"
        )
    mark = Mark.of(conn)
    queries = ensure_queries(conn, labels.qids)
    passages = ensure_passages(conn, labels.docids)
    rows = [(queries[q], passages[d]) for q, d in zip(labels.qids, labels.docids, strict=True)]
    conn.executemany("INSERT OR IGNORE INTO candidate (query_id, passage_id) VALUES (?, ?)", rows)
    stamp = now()
    if again_as is None:
        earlier = _pairs_labelled(conn, model)
        import_id = conn.execute(
            "INSERT INTO judgment_import (model, file, sha256, format, grade_map, labels,"
            " imported_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (model, str(path), labels.sha256, labels.format, labels.grade_map, len(labels), stamp),
        ).lastrowid
    else:
        # The file keeps its one import record (one per model and bytes); its labels are
        # written anew, so each is its model's newest for its pair, one per pair and file.
        import_id = again_as[0]
        conn.execute("DELETE FROM suggestion WHERE import_id = ?", (import_id,))
    query_text = _texts(conn, "query", sorted(set(queries.values())))
    passage_text = _texts(conn, "passage", sorted(set(passages.values())))
    conn.executemany(
        "INSERT INTO suggestion (query_id, passage_id, model, grade, reason, created_at,"
        " answers, low, high, flagged, source, import_id)"
        " VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?, 'imported', ?)",
        (
            (
                q,
                p,
                model,
                grade,
                reason,
                stamp,
                grade,
                grade,
                _flag(query_text, passage_text, q, p),
                import_id,
            )
            for (q, p), grade, reason in zip(rows, labels.grades, labels.reasons, strict=True)
        ),
    )
    done.suggestions = len(rows)
    done.queries_added, done.passages_added = mark.added(conn)
    what = f"the judgments of {model!r}"
    warning = new_queries_warning(
        conn,
        mark,
        what=what,
        kind="label",
        named=len(set(labels.qids)),
        added=done.queries_added,
    )
    if warning is not None:
        done.warnings.append(warning)
    line = f"judgments of {model!r} from {path}: {len(rows):,} suggestions ({labels.format}"
    line += f", grade map {labels.grade_map})" if labels.grade_map else ", grades as given)"
    if again_as is not None:
        _, when, replaced = again_as
        line += (
            f"; the same file was imported as {model!r} on {when}, and a later file of"
            f" {model!r} replaced {replaced:,} of its labels: its labels stand again"
        )
    elif again := sum(1 for row in rows if row in earlier):
        line += f"; {again:,} of these pairs had a label of {model!r} already: the new ones stand"
    done.notes.append(line)
    return done


#: The names ``agree`` gives its own raters: people's resolved grade, and the models'
#: ensemble (``judge (median of a, b)``). A model or annotator so named would print a
#: row indistinguishable from, or compared with, one of these.
RESERVED_NAMES = ("humans", "judge")


def reserved_name(name: str) -> str | None:
    """Why ``name`` cannot name a model, said for a person; None when it can. Case is
    ignored: ``Humans`` beside ``humans`` reads as the same rater."""
    folded = name.casefold()
    if folded in RESERVED_NAMES or folded.startswith("judge ("):
        return (
            f"{name!r} is a name raglabel agree gives its own raters (humans: people's"
            " resolved grades; judge (median of ...): the models together); name the model"
            " another way"
        )
    return None


def _same_but_case(name: str, names: Sequence[str]) -> str | None:
    """The first of ``names`` that differs from ``name`` in case alone, if any."""
    folded = name.casefold()
    return next((other for other in names if other != name and other.casefold() == folded), None)


def _refuse_clashes(conn: sqlite3.Connection, labels: JudgmentFile) -> None:
    model = labels.model
    asked = asked_models(conn)
    if model in asked:
        raise InputError(
            labels.path,
            f"{model!r} is a model raglabel judge asked in this project; imported labels under"
            f" the same name would be counted as its answers. Name them another way, e.g."
            f" --judgments {model}-imported={labels.path}",
        )
    twin = _same_but_case(model, [*asked, *sorted(imported_models(conn))])
    if twin is not None:
        raise InputError(
            labels.path,
            f"{model!r} differs from the model {twin!r} of this project only in case; the"
            " two would read as one judge in agree's rows. Use the same name to add to its"
            " labels, or a name of its own",
        )
    people = [str(name) for (name,) in conn.execute("SELECT name FROM annotator")]
    person = model if model in people else _same_but_case(model, people)
    if person is not None:
        same = "" if person == model else f" (as {person!r}, in another case)"
        raise InputError(
            labels.path,
            f"{model!r} is an annotator of this project{same}; a judge of the same name would"
            " be compared with their grades as if with someone else's. Name the model another"
            " way",
        )


def refuse_reserved(models: Sequence[str]) -> None:
    """Stop a judge run whose model name is one ``agree`` gives its own raters."""
    for model in models:
        reserved = reserved_name(model)
        if reserved is not None:
            raise UsageError(f"--model {model!r}: {reserved}")


def refuse_imported(conn: sqlite3.Connection, models: Sequence[str]) -> None:
    """Stop a judge run whose model name is one imported labels are stored under, in
    any case."""
    imported = sorted(imported_models(conn))
    clash = sorted(set(models) & set(imported))
    if clash:
        raise UsageError(
            f"--model {clash[0]!r}: the project holds labels imported under that name"
            " (raglabel import --judgments); the judge's answers would be mixed with them."
            " Ask it under another name"
        )
    for model in models:
        twin = _same_but_case(model, imported)
        if twin is not None:
            raise UsageError(
                f"--model {model!r}: the project holds labels imported as {twin!r}, which"
                " differs only in case; the two would read as one judge in agree's rows."
                " Ask it under another name"
            )


def _replaced_since(conn: sqlite3.Connection, import_id: int) -> int:
    """How many of an import's labels a newer suggestion of the same model now overrides."""
    (count,) = conn.execute(
        "SELECT COUNT(*) FROM suggestion a WHERE a.import_id = ? AND EXISTS (SELECT 1"
        " FROM suggestion b WHERE b.query_id = a.query_id AND b.passage_id = a.passage_id"
        " AND b.model = a.model AND b.id > a.id)",
        (import_id,),
    ).fetchone()
    return int(count)


def _pairs_labelled(conn: sqlite3.Connection, model: str) -> set[tuple[int, int]]:
    return {
        (int(q), int(p))
        for q, p in conn.execute(
            "SELECT query_id, passage_id FROM suggestion WHERE model = ?", (model,)
        )
    }


def _texts(conn: sqlite3.Connection, table: str, rows: list[int]) -> dict[int, str]:
    """The text of each of ``rows`` of ``table`` that has one."""
    found: dict[int, str] = {}
    for start in range(0, len(rows), 10_000):
        found.update(
            conn.execute(
                f"SELECT t.id, t.text FROM json_each(?) j JOIN {table} t ON t.id = j.value"
                " WHERE t.text IS NOT NULL",
                (json_list(rows[start : start + 10_000]),),
            )
        )
    return found


def _flag(
    queries: dict[int, str], passages: dict[int, str], query: int, passage: int
) -> str | None:
    """Why a person should look at the passage before trusting any judge, when both texts
    are known (the same check the judge's own suggestions get)."""
    if query not in queries or passage not in passages:
        return None
    return flag_passage(queries[query], passages[passage])
