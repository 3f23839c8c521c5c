"""``raglabel export``: a project's labels as TREC qrels, JSONL or CSV."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import Any

from raglabel.cli.arguments import output_file, project_file, writes_over_project
from raglabel.cli.options import grade_map_option
from raglabel.errors import UsageError
from raglabel.storage.policies import POLICIES


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "export",
        help="export labels as TREC qrels, JSONL or CSV",
        description=(
            "Write a project's labels out. Qrels hold one resolved grade per pair, mapped back "
            "to labels through the grade map; JSONL and CSV hold each annotator's current "
            "grade, or with --history every event of the log."
        ),
    )
    parser.add_argument("db", metavar="DB", type=project_file, help="the project file")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument(
        "--qrels", metavar="F", type=output_file, help="TREC qrels of the resolved grades"
    )
    target.add_argument(
        "--jsonl", metavar="F", type=output_file, help="JSON Lines, one grade (or event) a line"
    )
    target.add_argument(
        "--csv", metavar="F", type=output_file, help="CSV with a header, one grade (or event) a row"
    )
    target.add_argument(
        "--answer-grades",
        metavar="F",
        type=output_file,
        help="JSON Lines of each annotator's current answer grades (system, sample, criterion)",
    )
    parser.add_argument(
        "--grade-map",
        metavar="MAP",
        help="label:grade pairs, used in reverse for qrels (default: 0:2,1:3,2:4,3:5, <0:1)",
    )
    parser.add_argument(
        "--history", action="store_true", help="JSONL/CSV: every event, not current grades"
    )
    parser.add_argument(
        "--suggestions",
        action="store_true",
        help="JSONL/CSV: the judge's suggestions (source judge), not human grades",
    )
    parser.add_argument(
        "--with-failures",
        action="store_true",
        help='with --suggestions --jsonl: also one line ("failed": true) per judge answer that'
        " failed, with its reason and the replies received",
    )
    parser.add_argument(
        "--policy",
        choices=POLICIES,
        help="qrels: how several annotators' grades resolve to one (default: median)",
    )
    parser.add_argument(
        "--annotator",
        metavar="NAME",
        help="qrels, JSONL, CSV: one annotator's grades (or events) only",
    )
    parser.add_argument(
        "--fill-with-judge",
        action="store_true",
        help="qrels: judge suggestions fill pairs no human graded",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from raglabel.cli.reading import open_to_read
    from raglabel.formats.maps import GradeMap
    from raglabel.storage.export import export_csv, export_jsonl, export_qrels, export_suggestions
    from raglabel.storage.labels import LabelChoice

    if args.suggestions and (args.qrels or args.history):
        raise UsageError("--suggestions goes with --jsonl or --csv, and not with --history")
    if args.with_failures and not (args.suggestions and args.jsonl):
        # A failure has other fields than a suggestion: they share a JSONL file, not
        # a CSV header.
        raise UsageError("--with-failures goes with --suggestions and --jsonl")
    if args.annotator is not None and not args.annotator.strip():
        raise UsageError("--annotator must not be empty")
    if args.answer_grades and (args.suggestions or args.history):
        raise UsageError("--answer-grades goes without --suggestions and --history")
    # Options of one kind of file, said rather than left unread beside another.
    if not args.qrels:
        for given, option in (
            (args.policy, "--policy"),
            (args.grade_map, "--grade-map"),
            (args.fill_with_judge, "--fill-with-judge"),
        ):
            if given:
                raise UsageError(f"{option} goes with --qrels")
    if args.annotator is not None and (args.suggestions or args.answer_grades):
        what = "--suggestions (the judge's)" if args.suggestions else "--answer-grades"
        raise UsageError(f"--annotator goes with --qrels, --jsonl or --csv grades, not {what}")
    option = (
        "answer-grades"
        if args.answer_grades
        else "qrels"
        if args.qrels
        else "jsonl"
        if args.jsonl
        else "csv"
    )
    output = getattr(args, option.replace("-", "_"))
    if writes_over_project(Path(output), Path(args.db)):
        raise UsageError(f"--{option} {output}: is the project file (or its WAL); name another")
    if args.answer_grades:
        from raglabel.storage.answers import export_answer_grades

        with open_to_read(args.db, "export") as project:
            count = export_answer_grades(project.conn, Path(args.answer_grades))
        print(f"wrote {count} answer grades to {args.answer_grades}")
        return 0
    with open_to_read(args.db, "export") as project:
        if args.qrels:
            choice = LabelChoice(annotator=args.annotator, fill_with_judge=args.fill_with_judge)
            if args.policy is not None:
                choice = replace(choice, policy=args.policy)
            grade_map = grade_map_option(args.grade_map) or GradeMap()
            exported = export_qrels(project.conn, Path(args.qrels), grade_map, choice)
            count, target, what = exported.pairs, args.qrels, "judged pairs"
            if args.fill_with_judge:
                # Judge labels in a qrels file look like anyone's: the count says so here.
                what += f" ({exported.judge_filled} of them the judge's: {exported.source})"
        elif args.jsonl and args.suggestions:
            count, failures = export_suggestions(
                project.conn, Path(args.jsonl), with_failures=args.with_failures
            )
            target = args.jsonl
            if args.with_failures:
                what = f"suggestions and {failures} failed judge answers"
        elif args.jsonl:
            count = export_jsonl(
                project.conn, Path(args.jsonl), history=args.history, annotator=args.annotator
            )
            target = args.jsonl
        else:
            count = export_csv(
                project.conn,
                Path(args.csv),
                history=args.history,
                suggestions=args.suggestions,
                annotator=args.annotator,
            )
            target = args.csv
        if not (args.qrels or args.with_failures):
            what = "suggestions" if args.suggestions else "events" if args.history else "grades"
    print(f"wrote {count} {what} to {target}")
    return 0
