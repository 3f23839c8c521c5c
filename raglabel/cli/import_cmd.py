"""``raglabel import``: corpora, labels and runs into a project, all or nothing."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from raglabel.cli.arguments import input_file, int_in, is_sqlite, project_file
from raglabel.cli.options import MAX_DEPTH, grade_map_option, named_file
from raglabel.errors import UsageError

_SPLIT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "import",
        help="import queries, passages, labels and runs into a project",
        description=(
            "Import into a project. Everything given is read and checked first, then written "
            "in one transaction: a bad line anywhere leaves the project exactly as it was."
        ),
        epilog=(
            "examples:\n"
            "  raglabel import project.db --queries queries.tsv --passages passages.jsonl\n"
            "  raglabel import project.db --qrels qrels.txt --annotator alice "
            "--run bm25=bm25.run\n"
            "  raglabel import project.db --beir scifact --split test\n"
            "  raglabel import project.db --samples rag=samples.jsonl\n"
            "  raglabel import project.db --judgments gpt-4o=gpt4o.qrels"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "db",
        metavar="DB",
        nargs="?",
        type=project_file,
        help="the project file (see raglabel init); it may also come last, after the --run files",
    )
    parser.add_argument(
        "--queries", metavar="F", type=input_file, help="queries: TSV qid<TAB>text, or JSONL"
    )
    parser.add_argument(
        "--passages",
        metavar="F",
        type=input_file,
        help="passages: JSONL (id, text, title, metadata), or TSV",
    )
    parser.add_argument(
        "--qrels", metavar="F", type=input_file, help="TREC qrels: qid iteration docid relevance"
    )
    parser.add_argument(
        "--grade-map",
        metavar="MAP",
        help="label:grade pairs for qrels and --judgments (default: 0:2,1:3,2:4,3:5,"
        " negative labels 1)",
    )
    parser.add_argument(
        "--annotator",
        metavar="NAME",
        help="whose grades the --qrels, --beir or --samples labels are (default: the label"
        " file's name); each line of --labels and --answer-grades names its own",
    )
    parser.add_argument(
        "--run",
        metavar="NAME=F",
        action="extend",
        nargs="+",
        default=[],
        help="TREC runs, one or more per --run; NAME defaults to the file's stem",
    )
    parser.add_argument("--beir", metavar="DIR", help="a BEIR folder: corpus, queries and qrels")
    parser.add_argument(
        "--split", default="test", metavar="NAME", help="the BEIR qrels split (default: test)"
    )
    parser.add_argument(
        "--samples", metavar="[NAME=]F", help="samples JSONL: queries, gold grades and one run"
    )
    parser.add_argument(
        "--labels",
        metavar="F",
        type=input_file,
        help="a label file raglabel export wrote (JSONL or CSV)",
    )
    parser.add_argument(
        "--answers",
        metavar="NAME=F",
        action="append",
        default=[],
        help="a system's answer file (raglabel, ragas, DeepEval or RAGChecker JSONL/JSON);"
        " repeatable; re-importing NAME replaces its samples",
    )
    parser.add_argument(
        "--answer-grades",
        metavar="F",
        type=input_file,
        help="human answer grades JSONL (raglabel export --answer-grades)",
    )
    parser.add_argument(
        "--judgments",
        metavar="MODEL=F",
        action="append",
        default=[],
        help="labels another judge (MODEL) wrote: TREC qrels, or JSONL of query_id, doc_id,"
        " relevance or grade, reason; stored as MODEL's suggestions, never as grades;"
        " repeatable",
    )
    parser.add_argument(
        "--depth",
        type=int_in(1, MAX_DEPTH),
        default=20,
        metavar="N",
        help=f"pool depth: each run's top N passages per query become candidates, 1 to"
        f" {MAX_DEPTH:,} (default: 20)",
    )
    parser.add_argument(
        "--replace", action="store_true", help="replace runs that already have the same name"
    )
    parser.set_defaults(handler=run, settle=settle_db)


def settle_db(args: argparse.Namespace) -> None:
    """DB given after ``--run a.run b.run``: argparse hands it to --run, which takes every
    word up to the next option. The last of those words is the project when it is not a
    run: a SQLite file, or a path that names no file and is not ``NAME=FILE``."""
    if args.db is not None:
        return
    if not args.run:
        raise UsageError("the following arguments are required: DB")
    last = args.run[-1]
    path = Path(last)
    if path.is_dir():
        raise UsageError(f"{last}: is a folder, not a project file")
    if is_sqlite(path) or (not path.exists() and "=" not in last):
        args.db = args.run.pop()
        return
    raise UsageError(
        f"the project file DB is missing ({last!r}, the last word after --run, is a run);"
        " give it first: raglabel import DB --run ..."
    )


@contextmanager
def _progress(total: int) -> Iterator[Any]:
    """A step bar on a terminal; plain silence otherwise (CI logs stay clean)."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    with bar:
        yield bar, bar.add_task("importing", total=total)


def run(args: argparse.Namespace) -> int:
    from raglabel.storage.importer import ImportRequest, run_import
    from raglabel.storage.project import Project

    if args.annotator is not None and not args.annotator.strip():
        raise UsageError("--annotator must not be empty")
    if args.annotator is not None and not (args.qrels or args.beir or args.samples):
        # Said, not ignored: a lead who meant to file a copy's labels under another name
        # would otherwise see them imported as their own annotators' without a word.
        raise UsageError(
            "--annotator names whose --qrels, --beir or --samples labels they are;"
            " each line of --labels and --answer-grades names its own annotator"
        )
    if not _SPLIT.fullmatch(args.split):
        raise UsageError(
            f"--split {args.split!r}: a split is a plain name such as test, dev or train"
        )
    runs = [_checked(named_file(spec, "--run"), "--run") for spec in args.run]
    samples = _checked(named_file(args.samples, "--samples"), "--samples") if args.samples else None
    request = ImportRequest(
        queries=_path(args.queries),
        passages=_path(args.passages),
        qrels=_path(args.qrels),
        grade_map=grade_map_option(args.grade_map),
        annotator=args.annotator,
        runs=runs,
        beir=_path(args.beir),
        split=args.split,
        samples=samples,
        labels=_path(args.labels),
        depth=args.depth,
        replace=args.replace,
        answers=[_checked(named_file(spec, "--answers"), "--answers") for spec in args.answers],
        answer_grades=_path(args.answer_grades),
        judgments=[
            _checked(named_file(spec, "--judgments"), "--judgments") for spec in args.judgments
        ],
    )
    names = [name for name, _ in request.runs] + ([request.samples[0]] if request.samples else [])
    names += [name for name, _ in request.answers]
    if len(set(names)) != len(names):
        raise UsageError("two runs have the same name; name them with --run NAME=FILE")
    steps = sum(bool(x) for x in (args.queries, args.passages, args.qrels, args.beir, args.samples))
    steps += 2 * len(request.runs) + bool(args.labels) + 1
    steps += len(request.answers) + bool(args.answer_grades) + bool(args.judgments)
    if steps == 1:
        raise UsageError("nothing to import: give --queries, --passages, --qrels, --run, ...")
    with Project.open(args.db) as project, _progress(steps) as bar:

        def advance(description: str) -> None:
            if bar is not None:
                progress, task = bar
                progress.update(task, description=description, advance=1)

        summary = run_import(project, request, advance)
    for warning in summary.warnings:
        print(f"raglabel import: warning: {warning}", file=sys.stderr)
    parts = [f"{what}: {count}" for what, count in summary.counts.items() if count]
    print(f"imported into {args.db}: {', '.join(parts) or 'nothing new'}")
    for note in summary.notes:
        print(note)
    if summary.matched:
        how = ", ".join(f"{count} {kind}" for kind, count in sorted(summary.matched.items()))
        print(f"retrieved passages matched by: {how}")
    return 0


def _checked(named: tuple[str, Path], option: str) -> tuple[str, Path]:
    """A ``NAME=FILE`` whose file is there and is not a folder, checked before the import
    reads anything."""
    path = named[1]
    if path.is_dir():
        raise UsageError(f"{option} {path}: is a folder, not a file")
    if not path.exists():
        raise UsageError(f"{option} {path}: no such file")
    return named


def _path(value: str | None) -> Path | None:
    return None if value is None else Path(value)
