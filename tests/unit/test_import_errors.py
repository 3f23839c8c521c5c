"""Every way ``raglabel import`` refuses input: exit 2, one line naming the file, the line
and the problem, and a project left exactly as it was.

Each case runs in a folder of its own, with relative paths, so the message is compared
whole: ``raglabel import: error: <file>:<line>: <problem>``. Errors about a whole file
(empty, missing, not a project) have no line to name and read ``<file>: <problem>``.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pytest

from raglabel.cli.main import main

BEIR_OK = {
    "beir/corpus.jsonl": '{"_id": "a", "title": "A", "text": "alpha"}\n'
    '{"_id": "b", "title": "B", "text": "beta"}\n',
    "beir/queries.jsonl": '{"_id": "q1", "text": "first"}\n',
    "beir/qrels/test.tsv": "query-id\tcorpus-id\tscore\nq1\ta\t1\n",
    "beir/qrels/train.tsv": "query-id\tcorpus-id\tscore\nq1\tb\t0\n",
}

GOOD_SAMPLE = {
    "id": "q1",
    "input": {"question": "first?"},
    "expected_output": {"a": 5},
    "actual_output": {"retrieved": [{"id": "a", "text": "alpha"}]},
}


def sample(**changes: object) -> str:
    return json.dumps(GOOD_SAMPLE | changes) + "\n"


def label(**fields: object) -> str:
    base: dict[str, object] = {"query": "q1", "passage": "a", "annotator": "x"}
    return json.dumps(base | fields) + "\n"


@dataclass(frozen=True)
class Case:
    id: str
    files: dict[str, str | bytes]
    args: list[str]
    message: str  # what follows "raglabel import: error: "
    db: str = "p.db"
    foreign_sqlite: bool = False  # make ``db`` a SQLite file of some other program


RUN_OK = "q1 Q0 a 1 0.9 t\n"
QRELS_LINE_ERRORS = [
    Case(
        "run-short-line",
        {"r.run": RUN_OK + "q1 Q0 b 2\n"},
        ["--run", "r.run"],
        "r.run:2: expected 6 fields (qid Q0 docid rank score tag), found 4",
    ),
    Case(
        "run-bad-score",
        {"r.run": RUN_OK + "q1 Q0 b 2 high t\n"},
        ["--run", "r.run"],
        "r.run:2: score 'high' is not a number",
    ),
    Case(
        "run-infinite-score",
        {"r.run": RUN_OK + "q1 Q0 b 2 inf t\n"},
        ["--run", "r.run"],
        "r.run:2: score 'inf' is not a finite number",
    ),
    Case(
        "run-invalid-utf8",
        {"r.run": RUN_OK.encode() + b"# fine\nq1 Q0 caf\xe9 2 0.8 t\n"},
        ["--run", "r.run"],
        "r.run:3: is not valid UTF-8 (byte 10 of the line)",
    ),
    Case(
        "run-tab-separated-bad-line",
        # Tabs send the file to the exact reader; the count must still be right.
        {"r.run": "q1\tQ0\ta\t1\t0.9\tt\n\n#c\nq1\tQ0\tb\t2\n"},
        ["--run", "r.run"],
        "r.run:4: expected 6 fields (qid Q0 docid rank score tag), found 4",
    ),
    Case(
        "qrels-non-integer-label",
        {"q.txt": "q1 0 a 1\nq1 0 b 2\nq1 0 c high\nq1 0 d 0\n"},
        ["--qrels", "q.txt"],
        "q.txt:3: relevance 'high' is not an integer",
    ),
    Case(
        "qrels-fractional-label",
        {"q.txt": "# judged by hand\n\nq1 0 a 1.5\n"},
        ["--qrels", "q.txt"],
        "q.txt:3: relevance '1.5' is not an integer",
    ),
    Case(
        "qrels-label-outside-default-map",
        {"q.txt": "q1 0 a 1\nq1 0 b 4\n"},
        ["--qrels", "q.txt"],
        "q.txt:2: relevance 4 is not covered by the grade map (0:2,1:3,2:4,3:5,<0:1); "
        "give one with --grade-map, e.g. --grade-map 0:2,1:5 for binary qrels",
    ),
    Case(
        "qrels-label-outside-given-map",
        {"q.txt": "q1 0 a 1\nq1 0 b -1\n"},
        ["--qrels", "q.txt", "--grade-map", "0:1,1:5"],
        "q.txt:2: relevance -1 is not covered by the grade map (0:1,1:5); "
        "add it to --grade-map: 0:1,1:5,-1:G with G its grade (1-5)",
    ),
    Case(
        "qrels-label-outside-a-given-trec-map",
        {"q.txt": "q1 0 a 1\nq1 0 b -1\n"},
        ["--qrels", "q.txt", "--grade-map", "0:2,1:3,2:4,3:5"],
        "q.txt:2: relevance -1 is not covered by the grade map (0:2,1:3,2:4,3:5); "
        "add it to --grade-map: 0:2,1:3,2:4,3:5,-1:G with G its grade (1-5)",
    ),
    Case(
        "qrels-pair-judged-twice",
        {"q.txt": "q1 0 a 1\nq1 0 b 2\nq1 0 a 2\n"},
        ["--qrels", "q.txt"],
        "q.txt:3: passage 'a' is judged twice for query 'q1' (lines 1 and 3); "
        "keep one judgment per pair",
    ),
    Case(
        "qrels-short-line",
        {"q.txt": "q1 0 a 1\nq1 0 b\n"},
        ["--qrels", "q.txt"],
        "q.txt:2: expected 4 fields (qid iteration docid relevance), found 3",
    ),
    Case(
        "qrels-invalid-utf8",
        {"q.txt": b"q1 0 a 1\nq1 0 \xff 1\n"},
        ["--qrels", "q.txt"],
        "q.txt:2: is not valid UTF-8 (byte 6 of the line)",
    ),
]

CORPUS_ERRORS = [
    Case(
        "queries-tsv-without-tab",
        {"queries.tsv": "q1\tfirst\nq2 second, no tab\n"},
        ["--queries", "queries.tsv"],
        "queries.tsv:2: expected query_id<TAB>text, found no tab",
    ),
    Case(
        "queries-tsv-invalid-utf8",
        {"queries.tsv": b"q1\tfirst\nq2\tcaf\xe9\n"},
        ["--queries", "queries.tsv"],
        "queries.tsv:2: is not valid UTF-8",
    ),
    Case(
        "queries-duplicate-id-jsonl",
        {
            "queries.jsonl": '{"id": "q1", "text": "a"}\n{"id": "q2", "text": "b"}\n'
            '{"id": "q1", "text": "c"}\n'
        },
        ["--queries", "queries.jsonl"],
        "queries.jsonl:3: query id 'q1' already used on line 1",
    ),
    Case(
        "queries-duplicate-id-tsv",
        {"queries.tsv": "id\ttext\nq1\ta\n\nq1\tb\n"},
        ["--queries", "queries.tsv"],
        "queries.tsv:4: query id 'q1' already used on line 2",
    ),
    Case(
        "queries-bad-json",
        {"queries.jsonl": '{"id": "q1", "text": "a"}\n{"id": "q2", "text": \n'},
        ["--queries", "queries.jsonl"],
        "queries.jsonl:2:22: not valid JSON (Expecting value)",
    ),
    Case(
        "queries-missing-text",
        {"queries.jsonl": '{"id": "q1", "text": "a"}\n{"id": "q2"}\n'},
        ["--queries", "queries.jsonl"],
        "queries.jsonl:2: field text: Field required",
    ),
    Case(
        "passages-missing-text",
        {"passages.jsonl": '{"id": "a", "text": "x"}\n\n{"id": "b", "title": "t"}\n'},
        ["--passages", "passages.jsonl"],
        "passages.jsonl:3: field text: Field required",
    ),
    Case(
        "passages-unknown-field",
        {"passages.jsonl": '{"id": "a", "text": "x", "url": "http://x"}\n'},
        ["--passages", "passages.jsonl"],
        "passages.jsonl:1: field url: Extra inputs are not permitted",
    ),
    Case(
        "passages-id-with-a-tab",
        {"passages.jsonl": '{"id": "a\\tb", "text": "x"}\n'},
        ["--passages", "passages.jsonl"],
        "passages.jsonl:1: field id: an id may not contain tabs, line breaks or NUL",
    ),
    Case(
        "passages-invalid-utf8",
        {"passages.jsonl": b'{"id": "a", "text": "x"}\n{"id": "b", "text": "caf\xe9"}\n'},
        ["--passages", "passages.jsonl"],
        "passages.jsonl:2: is not valid UTF-8",
    ),
    Case(
        "beir-missing-split",
        BEIR_OK,
        ["--beir", "beir", "--split", "dev"],
        "beir/qrels/dev.tsv: no such split (this folder has: test, train)",
    ),
    Case(
        "beir-not-a-folder",
        {"beir.txt": "x\n"},
        ["--beir", "beir.txt"],
        "beir.txt: is not a folder (a BEIR dataset folder was expected)",
    ),
    Case(
        "beir-corpus-without-id",
        BEIR_OK | {"beir/corpus.jsonl": '{"_id": "a", "text": "x"}\n{"text": "y"}\n'},
        ["--beir", "beir"],
        "beir/corpus.jsonl:2: field _id: Field required",
    ),
    Case(
        "beir-non-integer-score",
        BEIR_OK | {"beir/qrels/test.tsv": "query-id\tcorpus-id\tscore\nq1\ta\t1\nq1\tb\tyes\n"},
        ["--beir", "beir"],
        "beir/qrels/test.tsv:3: score 'yes' is not an integer",
    ),
]

SAMPLES_ERRORS = [
    Case(
        "samples-bad-json",
        {"s.jsonl": sample() + "not json\n"},
        ["--samples", "s.jsonl"],
        "s.jsonl:2:1: not valid JSON (Expecting value)",
    ),
    Case(
        "samples-missing-question",
        {"s.jsonl": sample(input={"query": "first?"})},
        ["--samples", "rag=s.jsonl"],
        "s.jsonl:1: field input.question: Field required",
    ),
    Case(
        "samples-retrieved-without-id-or-text",
        {
            "s.jsonl": sample(id="q0")
            + sample(actual_output={"retrieved": [{"id": "a"}, {"score": 0.3}]})
        },
        ["--samples", "s.jsonl"],
        "s.jsonl:2: field actual_output.ActualOutput.retrieved.1: "
        "a retrieved passage needs an id or a text",
    ),
    Case(
        "samples-line-not-an-object",
        {"s.jsonl": sample(id="q0") + "[1, 2]\n"},
        ["--samples", "s.jsonl"],
        "s.jsonl:2: each line must be a JSON object, not a list",
    ),
    Case(
        "samples-grade-outside-1-5",
        {"s.jsonl": sample(expected_output={"a": 5, "b": 7})},
        ["--samples", "s.jsonl"],
        "s.jsonl:1: field expected_output.b: grade 7 is outside 1-5 "
        "(give --grade-map to map other labels)",
    ),
    Case(
        "samples-label-outside-map",
        {"s.jsonl": sample(expected_output={"a": 1, "b": 2})},
        ["--samples", "s.jsonl", "--grade-map", "0:1,1:5"],
        "s.jsonl:1: field expected_output.b: label 2 is not covered by --grade-map (0:1,1:5)",
    ),
    Case(
        "samples-duplicate-id",
        {"s.jsonl": sample() + "\n" + sample()},
        ["--samples", "s.jsonl"],
        "s.jsonl:3: sample id 'q1' already used on line 1",
    ),
]

LABEL_ERRORS = [
    Case(
        "labels-undo-of-unknown-event",
        {"l.jsonl": label(event=1, grade=3) + label(event=2, kind="undo", target=7)},
        ["--labels", "l.jsonl"],
        "l.jsonl:2: undo of event 7, which no earlier line carries",
    ),
    Case(
        "labels-grade-out-of-range",
        {"l.jsonl": label(grade=3) + label(grade=9)},
        ["--labels", "l.jsonl"],
        "l.jsonl:2: field grade: Input should be less than or equal to 5",
    ),
    Case(
        "labels-csv-header",
        {"l.csv": "query,passage,grade\nq1,a,3\n"},
        ["--labels", "l.csv"],
        "l.csv:1: header lacks annotator",
    ),
    Case(
        "labels-csv-skip-without-reason",
        {"l.csv": "query,passage,annotator,kind,note\nq1,a,x,grade,\nq1,a,x,skip,\n"},
        ["--labels", "l.csv"],
        # The first data row is a grade event without a grade.
        "l.csv:2: a grade event needs a grade 1-5, and only a grade event has one",
    ),
    # Undos an export never writes: the app refuses each of these (grades.record), so
    # a file holding one was edited, and importing it would corrupt the log.
    Case(
        "labels-duplicate-event-id",
        {"l.jsonl": label(event=1, grade=3) + label(event=1, grade=4)},
        ["--labels", "l.jsonl"],
        "l.jsonl:2: event 1 already used on line 1",
    ),
    Case(
        "labels-undo-of-another-item",
        {"l.jsonl": label(event=1, grade=3) + label(event=2, passage="b", kind="undo", target=1)},
        ["--labels", "l.jsonl"],
        "l.jsonl:2: undo of event 1, which is another item's or annotator's (line 1)",
    ),
    Case(
        "labels-undo-of-an-undo",
        {
            "l.jsonl": label(event=1, grade=3)
            + label(event=2, kind="undo", target=1)
            + label(event=3, kind="undo", target=2)
        },
        ["--labels", "l.jsonl"],
        "l.jsonl:3: undo of event 2, which is itself an undo (line 2)",
    ),
    Case(
        "labels-undone-twice",
        {
            "l.jsonl": label(event=1, grade=3)
            + label(event=2, kind="undo", target=1)
            + label(event=3, kind="undo", target=1)
        },
        ["--labels", "l.jsonl"],
        "l.jsonl:3: undo of event 1, which was already undone on line 2",
    ),
]

EMPTY_FILES = [
    Case(
        "empty-qrels",
        {"q.txt": "# only a comment\n\n"},
        ["--qrels", "q.txt"],
        "q.txt: has no qrels lines (the file is empty or only comments)",
    ),
    Case(
        "empty-run",
        {"r.run": ""},
        ["--run", "r.run"],
        "r.run: has no run lines (the file is empty or only comments)",
    ),
    Case(
        "empty-queries",
        {"queries.jsonl": "\n\n"},
        ["--queries", "queries.jsonl"],
        "queries.jsonl: has no query lines (the file is empty)",
    ),
    Case(
        "empty-passages",
        {"passages.tsv": ""},
        ["--passages", "passages.tsv"],
        "passages.tsv: has no passage lines (the file is empty)",
    ),
    Case(
        "empty-samples",
        {"s.jsonl": "\n"},
        ["--samples", "s.jsonl"],
        "s.jsonl: has no samples (the file is empty)",
    ),
    Case(
        "empty-labels",
        {"l.jsonl": ""},
        ["--labels", "l.jsonl"],
        "l.jsonl: has no label lines (the file is empty)",
    ),
    Case(
        "empty-beir-qrels",
        BEIR_OK | {"beir/qrels/test.tsv": "query-id\tcorpus-id\tscore\n"},
        ["--beir", "beir"],
        "beir/qrels/test.tsv: has no judgments (only a header, or empty)",
    ),
    Case(
        "missing-input-file",
        {},
        ["--qrels", "nope.txt"],
        "argument --qrels: nope.txt: no such file",
    ),
]

PROJECT_ERRORS = [
    Case(
        "project-missing",
        {"queries.tsv": "q1\tx\n"},
        ["--queries", "queries.tsv"],
        "missing.db: no such project file (create one with raglabel init)",
        db="missing.db",
    ),
    Case(
        "project-not-sqlite",
        {"notes.db": "these are my notes, not a database\n" * 100, "queries.tsv": "q1\tx\n"},
        ["--queries", "queries.tsv"],
        "notes.db: is not a SQLite database (file is not a database)",
        db="notes.db",
    ),
    Case(
        "project-other-sqlite",
        {"queries.tsv": "q1\tx\n"},
        ["--queries", "queries.tsv"],
        "other.db: is a SQLite file but not a raglabel project",
        db="other.db",
        foreign_sqlite=True,
    ),
]

USAGE_ERRORS = [
    Case(
        "nothing-to-import",
        {},
        [],
        "nothing to import: give --queries, --passages, --qrels, --run, ...",
    ),
    Case(
        "depth-zero",
        {"r.run": RUN_OK},
        ["--run", "r.run", "--depth", "0"],
        "argument --depth: must be a whole number from 1 to 1,000,000, got 0",
    ),
    Case(
        "two-runs-one-name",
        {"r.run": RUN_OK, "s.run": RUN_OK},
        ["--run", "x=r.run", "x=s.run"],
        "two runs have the same name; name them with --run NAME=FILE",
    ),
    Case("run-name-without-file", {}, ["--run", "x="], "--run 'x=': no file after '='"),
    Case(
        "bad-grade-map",
        {"q.txt": "q1 0 a 1\n"},
        ["--qrels", "q.txt", "--grade-map", "0:2,1-3"],
        "--grade-map: '1-3' is not a from:to pair (e.g. 0:2,1:3,2:4,3:5)",
    ),
]

CASES = (
    QRELS_LINE_ERRORS
    + CORPUS_ERRORS
    + SAMPLES_ERRORS
    + LABEL_ERRORS
    + EMPTY_FILES
    + PROJECT_ERRORS
    + USAGE_ERRORS
)


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small project with queries, passages, grades and a run: something to damage."""
    folder = tmp_path_factory.mktemp("errors-master")
    db = folder / "p.db"
    (folder / "queries.tsv").write_text("q1\tfirst\nq2\tsecond\n")
    (folder / "passages.jsonl").write_text(
        '{"id": "a", "text": "alpha"}\n{"id": "b", "text": "beta"}\n'
    )
    (folder / "qrels.txt").write_text("q1 0 a 3\nq2 0 b 0\n")
    (folder / "base.run").write_text("q1 Q0 a 1 2 t\nq1 Q0 b 2 1 t\n")
    assert main(["init", str(db)]) == 0
    files = {"--queries": "queries.tsv", "--passages": "passages.jsonl", "--qrels": "qrels.txt"}
    args = [str(part) for option, name in files.items() for part in (option, folder / name)]
    assert main(["import", str(db), *args]) == 0
    assert main(["import", str(db), "--run", str(folder / "base.run")]) == 0
    return db


def fingerprint(path: Path) -> tuple[str, list[str]] | None:
    """File bytes and, for a SQLite file, every table's content; None if there is no file."""
    if not path.exists():
        return None
    data = hashlib.sha256(path.read_bytes()).hexdigest()
    try:
        conn = sqlite3.connect(path)
        try:
            return data, list(conn.iterdump())
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return data, []


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_import_error(
    case: Case,
    master: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copyfile(master, "p.db")
    if case.foreign_sqlite:
        conn = sqlite3.connect(case.db)
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.commit()
        conn.close()
    for name, content in case.files.items():
        Path(name).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            Path(name).write_bytes(content)
        else:
            Path(name).write_text(content, encoding="utf-8")
    before = fingerprint(Path(case.db))
    capsys.readouterr()
    try:
        code = main(["import", case.db, *case.args])
    except SystemExit as exc:  # usage errors leave through argparse
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    *usage, last = err.splitlines()
    assert last == f"raglabel import: error: {case.message}"
    # argparse's own checks show the usage first; nothing else may come before the error.
    assert all(line.startswith(("usage: ", " ")) for line in usage)
    assert fingerprint(Path(case.db)) == before


def test_beir_qrels_invalid_utf8_names_the_line(
    master: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copyfile(master, "p.db")
    for name, content in BEIR_OK.items():
        Path(name).parent.mkdir(parents=True, exist_ok=True)
        Path(name).write_text(content)
    Path("beir/qrels/test.tsv").write_bytes(b"query-id\tcorpus-id\tscore\nq1\tcaf\xe9\t1\n")
    assert main(["import", "p.db", "--beir", "beir"]) == 2
    assert capsys.readouterr().err == (
        "raglabel import: error: beir/qrels/test.tsv:2: is not valid UTF-8\n"
    )
