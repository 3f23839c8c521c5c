"""The demo project: the bundled Northwind Vault corpus, half graded, for ``raglabel demo``.

Besides the passages and runs, it holds the answers of two RAG systems (``answers/``),
with the human grades two annotators gave them: the first annotator's become the demo
user's own, as the first queries' passage grades do.

The corpus's source of truth is ``fixtures/demo`` in the repository; the wheel installs
that folder as the package ``raglabel.demo_corpus`` (see ``package-dir`` in
pyproject.toml). A source checkout whose editable install predates that mapping still
finds the folder beside the package.
"""

from __future__ import annotations

import json
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass
from importlib.resources import as_file, files
from importlib.resources.abc import Traversable
from pathlib import Path

from raglabel.errors import InputError
from raglabel.formats.corpus import read_queries
from raglabel.storage.answers import standing_answer_grades
from raglabel.storage.importer import ImportRequest, run_import
from raglabel.storage.project import Project

CORPUS_PACKAGE = "raglabel.demo_corpus"
#: The queries (in file order) whose grades the demo starts with; the rest are the user's.
GRADED_QUERIES = 20
#: The answer systems (their files are ``answers/<name>.jsonl``) and the grades file.
SYSTEMS = ("grounded", "embellished")
GRADES_FILE = "answers/grades.jsonl"
#: In the grades file: the annotator whose grades become the demo user's, and a colleague
#: who graded an overlapping set (so agreement among people has something to measure).
FIRST_ANNOTATOR = "lena"
_FILES = (
    "queries.jsonl",
    "passages.jsonl",
    "qrels.txt",
    *(f"answers/{name}.jsonl" for name in SYSTEMS),
    GRADES_FILE,
)


@dataclass(frozen=True)
class DemoSummary:
    path: Path
    queries: int
    graded_queries: int
    passages: int
    runs: int
    grades: int
    candidates: int
    answer_systems: int
    answer_samples: int
    answer_grades: int  # standing human answer grades, every annotator's


def _checkout_corpus() -> Path:
    return Path(__file__).resolve().parents[2] / "fixtures" / "demo"


def demo_corpus() -> Traversable:
    """The corpus folder, checked to hold every file the demo imports."""
    try:
        corpus: Traversable = files(CORPUS_PACKAGE)
    except ModuleNotFoundError:
        corpus = _checkout_corpus()
    missing = [name for name in _FILES if not _member(corpus, name).is_file()]
    runs = corpus.joinpath("runs")
    if not runs.is_dir() or not any(run.name.endswith(".run") for run in runs.iterdir()):
        missing.append("runs/*.run")
    if missing:
        raise InputError(
            None,
            f"the demo corpus is missing from this installation ({', '.join(missing)} not "
            f"found in {corpus}); reinstall raglabel",
        )
    return corpus


def _member(corpus: Traversable, name: str) -> Traversable:
    """``name`` (with ``/`` between folders) inside the corpus, one step at a time: not
    every Traversable takes a path with separators."""
    for part in name.split("/"):
        corpus = corpus.joinpath(part)
    return corpus


def _first_queries_qrels(queries: Path, qrels: Path, target: Path) -> None:
    """Copy the qrels lines of the first ``GRADED_QUERIES`` queries to ``target``."""
    kept = {record.id for record in read_queries(queries)[:GRADED_QUERIES]}
    with qrels.open(encoding="utf-8") as source, target.open("w", encoding="utf-8") as out:
        for line in source:
            fields = line.split(maxsplit=1)
            if fields and fields[0] in kept:
                out.write(line)


def _user_answer_grades(grades: Path, annotator: str, target: Path) -> None:
    """Copy the answer grades to ``target`` with the first annotator's given to
    ``annotator``; should the user take the colleague's name, the colleague's grades are
    left out, so each criterion keeps one grade per annotator."""
    with grades.open(encoding="utf-8") as source, target.open("w", encoding="utf-8") as out:
        for line in source:
            if not line.strip():
                continue
            record = json.loads(line)
            if record["annotator"] == FIRST_ANNOTATOR:
                record["annotator"] = annotator
            elif record["annotator"] == annotator:
                continue
            out.write(json.dumps(record, ensure_ascii=False) + "\n")


def build_demo(path: Path, annotator: str, *, answers: bool = True) -> DemoSummary:
    """A new project at ``path``: the corpus, all its runs, the first queries' grades as
    ``annotator``'s own, and two systems' answers with some graded (the first annotator's
    grades as ``annotator``'s), so the app opens on a half-done job with holes to fill.

    ``answers=False`` leaves the answer systems (and so their two runs) out: the passage
    side alone, as the demo was before it had answers."""
    corpus = demo_corpus()
    project = Project.create(path)
    try:
        with project, ExitStack() as stack, tempfile.TemporaryDirectory() as scratch:
            # as_file gives real paths even if the package data sits in a zip.
            queries = stack.enter_context(as_file(corpus.joinpath("queries.jsonl")))
            qrels = Path(scratch) / "qrels.txt"
            _first_queries_qrels(
                queries, stack.enter_context(as_file(corpus.joinpath("qrels.txt"))), qrels
            )
            runs = sorted(
                (run.name.removesuffix(".run"), stack.enter_context(as_file(run)))
                for run in corpus.joinpath("runs").iterdir()
                if run.name.endswith(".run")
            )
            systems = [
                (name, stack.enter_context(as_file(_member(corpus, f"answers/{name}.jsonl"))))
                for name in SYSTEMS
                if answers
            ]
            grades = None
            if answers:
                grades = Path(scratch) / "grades.jsonl"
                _user_answer_grades(
                    stack.enter_context(as_file(_member(corpus, GRADES_FILE))), annotator, grades
                )
            request = ImportRequest(
                queries=queries,
                passages=stack.enter_context(as_file(corpus.joinpath("passages.jsonl"))),
                qrels=qrels,
                annotator=annotator,
                runs=runs,
                answers=systems,
                answer_grades=grades,
            )
            run_import(project, request)
            return _summary(project, path)
    except BaseException:
        for leftover in (
            path,
            path.with_name(path.name + "-wal"),
            path.with_name(path.name + "-shm"),
        ):
            leftover.unlink(missing_ok=True)
        raise


def _summary(project: Project, path: Path) -> DemoSummary:
    def count(sql: str) -> int:
        return int(project.conn.execute(sql).fetchone()[0])

    return DemoSummary(
        path=path,
        queries=count("SELECT count(*) FROM query"),
        graded_queries=count("SELECT count(DISTINCT query_id) FROM current_grade"),
        passages=count("SELECT count(*) FROM passage"),
        runs=count("SELECT count(*) FROM run"),
        grades=count("SELECT count(*) FROM current_grade"),
        candidates=count("SELECT count(*) FROM candidate"),
        answer_systems=count("SELECT count(*) FROM answer_system"),
        answer_samples=count("SELECT count(*) FROM answer_sample"),
        answer_grades=len(standing_answer_grades(project.conn)),
    )
