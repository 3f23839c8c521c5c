"""``raglabel progress``: the lead's view of the team, read while people grade."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from raglabel.cli.arguments import int_in, project_file
from raglabel.cli.options import DEFAULT_DEPTH, MAX_DEPTH

if TYPE_CHECKING:
    from raglabel.formats.progress_report import ProgressReport

#: Queries not yet done by all their annotators that the text lists by name; the rest
#: are counted, so that 1,000 assigned queries do not print 1,000 lines.
LISTED_QUERIES = 10


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "progress",
        help="each annotator's assigned and done queries, pace and agreement so far",
        description=(
            "Per annotator: queries assigned (raglabel assign) and done, standing grades,"
            " grades per hour and the median seconds a grade takes at the keys (a gap over"
            " 300 s between two grades is a break, not work), and Krippendorff's alpha"
            " (ordinal) with each other annotator on the pairs both graded; per assigned"
            " query, how many of its annotators are done; and the pairs whose annotators"
            " differ by more than one grade that wait for the lead. A query is done for an"
            " annotator when they graded every passage a stored run ranks within its top"
            " --depth. Reads the file read-only, so it never holds up anyone grading."
        ),
        epilog=(
            "examples:\n"
            "  raglabel progress project.db\n"
            "  raglabel progress project.db --format json"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("db", metavar="DB", type=project_file, help="the project file")
    parser.add_argument(
        "--depth",
        metavar="K",
        type=int_in(1, MAX_DEPTH),
        default=DEFAULT_DEPTH,
        help="a query is done when every passage a stored run ranks within its top K has"
        f" the annotator's grade (default: {DEFAULT_DEPTH}, the grading app's deepest default"
        " cutoff, as for raglabel audit)",
    )
    parser.add_argument(
        "--format", choices=("text", "json"), default="text", help="output (default: text)"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from raglabel.analysis.progress import progress
    from raglabel.cli.reading import open_to_read

    with open_to_read(args.db, "progress") as project:
        found = progress(project, args.depth)
    for note in found.notes:
        print(f"raglabel progress: warning: {note}", file=sys.stderr)
    if args.format == "json":
        sys.stdout.write(found.report.model_dump_json() + "\n")
    else:
        from raglabel.cli.plain_table import console_width

        sys.stdout.write(
            "".join(f"{line}\n" for line in as_text(found.report, args.depth, console_width()))
        )
    return 0


def _num(value: float | None, digits: int) -> str:
    return "NA" if value is None else f"{value:.{digits}f}"


def as_text(report: ProgressReport, depth: int, width: int | None = None) -> list[str]:
    """The report as lines: a table of annotators, the alpha of each two who share
    pairs, the pairs waiting for the lead, and the assigned queries not yet done by all
    their annotators (the first :data:`LISTED_QUERIES` by name); prose wrapped to a
    console ``width`` (None: not wrapped)."""
    from raglabel.analysis.progress import IDLE_LIMIT_S, MIN_SHARED_PAIRS
    from raglabel.cli.plain_table import wrapped

    out: list[str] = []

    def say(text: str) -> None:
        out.extend(wrapped(text, width))

    names = list(report.annotators)
    if not names:
        say("nobody is assigned a query or has graded one yet")
        return out
    say(
        f"a query is done for an annotator who graded every passage a stored run ranks"
        f" within its top {depth}; pace counts grades given at the keys, a gap over"
        f" {IDLE_LIMIT_S:.0f} s between two being a break"
    )
    headers = ("assigned", "done", "grades", "grades/h", "median s")
    wide = max(len("annotator"), *(len(name) for name in names))
    out.append("  ".join([f"{'annotator':<{wide}}", *headers]))
    for name, a in report.annotators.items():
        cells = (
            str(a.assigned),
            str(a.done),
            str(a.grades),
            _num(a.grades_per_hour, 1),
            _num(a.median_active_s, 1),
        )
        out.append(
            "  ".join(
                [f"{name:<{wide}}", *(c.rjust(len(h)) for c, h in zip(cells, headers, strict=True))]
            )
        )
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    defined = [
        (a, b, alpha) for a, b in pairs if (alpha := report.annotators[a].alpha_with[b]) is not None
    ]
    if pairs:
        shown = ", ".join(f"{a}-{b} {alpha:.3f}" for a, b, alpha in defined) or "none yet"
        rest = len(pairs) - len(defined)
        tail = (
            f"; NA for the other {rest} pair{'' if rest == 1 else 's'} of annotators (fewer"
            f" than {MIN_SHARED_PAIRS} pairs graded by both, or one grade throughout)"
            if rest and defined
            else ""
        )
        say(f"alpha (ordinal) on the pairs both graded: {shown}{tail}")
    say(
        f"to adjudicate: {report.to_adjudicate} pair{'' if report.to_adjudicate == 1 else 's'}"
        " whose annotators differ by more than one grade (raglabel label DB --adjudicate"
        " settles them)"
    )
    queries = report.queries
    if not queries:
        say("no query is assigned: raglabel assign DB --annotators a,b,c --overlap 2 assigns them")
        return out
    open_ = [(qid, q) for qid, q in queries.items() if q.done < q.assigned]
    summary = (
        f"queries assigned: {len(queries)}; done by all their annotators:"
        f" {len(queries) - len(open_)}"
    )
    if open_:
        shown = ", ".join(f"{qid} {q.done}/{q.assigned}" for qid, q in open_[:LISTED_QUERIES])
        more = len(open_) - LISTED_QUERIES
        summary += f"; not yet (annotators done/assigned): {shown}"
        if more > 0:
            summary += f" and {more} more"
    say(summary)
    return out
