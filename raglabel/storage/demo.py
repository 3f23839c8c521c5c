"""The demo project: the bundled Northwind Vault corpus, half graded, for ``raglabel demo``.

The corpus's source of truth is ``fixtures/demo`` in the repository; the wheel installs
that folder as the package ``raglabel.demo_corpus`` (see ``package-dir`` in
pyproject.toml). A source checkout whose editable install predates that mapping still
finds the folder beside the package.
"""

from __future__ import annotations

import tempfile
from contextlib import ExitStack
from dataclasses import dataclass
from importlib.resources import as_file, files
from importlib.resources.abc import Traversable
from pathlib import Path

from raglabel.errors import InputError
from raglabel.formats.corpus import read_queries
from raglabel.storage.importer import ImportRequest, run_import
from raglabel.storage.project import Project

CORPUS_PACKAGE = "raglabel.demo_corpus"
#: The queries (in file order) whose grades the demo starts with; the rest are the user's.
GRADED_QUERIES = 20
_FILES = ("queries.jsonl", "passages.jsonl", "qrels.txt")


@dataclass(frozen=True)
class DemoSummary:
    path: Path
    queries: int
    graded_queries: int
    passages: int
    runs: int
    grades: int
    candidates: int


def _checkout_corpus() -> Path:
    return Path(__file__).resolve().parents[2] / "fixtures" / "demo"


def demo_corpus() -> Traversable:
    """The corpus folder, checked to hold every file the demo imports."""
    try:
        corpus: Traversable = files(CORPUS_PACKAGE)
    except ModuleNotFoundError:
        corpus = _checkout_corpus()
    missing = [name for name in _FILES if not corpus.joinpath(name).is_file()]
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


def _first_queries_qrels(queries: Path, qrels: Path, target: Path) -> None:
    """Copy the qrels lines of the first ``GRADED_QUERIES`` queries to ``target``."""
    kept = {record.id for record in read_queries(queries)[:GRADED_QUERIES]}
    with qrels.open(encoding="utf-8") as source, target.open("w", encoding="utf-8") as out:
        for line in source:
            fields = line.split(maxsplit=1)
            if fields and fields[0] in kept:
                out.write(line)


def build_demo(path: Path, annotator: str) -> DemoSummary:
    """A new project at ``path``: the corpus, all its runs, and the first queries' grades
    as ``annotator``'s own, so the app opens on a half-done job with holes to fill."""
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
            request = ImportRequest(
                queries=queries,
                passages=stack.enter_context(as_file(corpus.joinpath("passages.jsonl"))),
                qrels=qrels,
                annotator=annotator,
                runs=runs,
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
    )
