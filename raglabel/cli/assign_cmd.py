"""``raglabel assign``: give each query to a number of annotators, balanced by the pairs
they grade, and list who has which queries and which of them they have done."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from raglabel.cli.arguments import int_in, project_file
from raglabel.cli.options import DEFAULT_DEPTH, MAX_DEPTH, person_name
from raglabel.errors import UsageError

if TYPE_CHECKING:
    from raglabel.analysis.assignment import Plan, Share

#: A seed chosen for a plan that was given none: 32 random bits from the OS, short
#: enough to copy from the output.
OS_SEED_BITS = 32


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "assign",
        help="give each query to several annotators, balanced by pairs to grade; list shares",
        description=(
            "Assignments: each query goes to --overlap annotators of --annotators, balanced"
            " by the pairs they have to grade (a query's pool: every passage some stored run"
            " ranks within its top --depth), largest query first onto the least-loaded"
            " annotators, ties broken by --seed. The queries are every query a stored run"
            " covers, --queries N of them, or the audit sample's (--audit). An annotator's"
            " queue serves their assignment first; queries nobody is assigned stay open to"
            " anyone. Assigning again builds on the stored assignment: a share the annotator"
            " has started (graded any passage of) stays theirs, and the rest is planned"
            " anew; a query of the assign that one of --annotators graded with no share of"
            " it (before the first assign, say) becomes their started share too. The output"
            " says what was kept, taken and given, and why. Names new to the project become"
            " annotators."
        ),
        epilog=(
            "examples:\n"
            "  raglabel assign project.db --annotators alice,bob,carol --overlap 2\n"
            "  raglabel assign project.db --annotators alice,bob --overlap 2 --audit\n"
            "  raglabel assign project.db --annotators alice,bob,carol --overlap 2"
            " --queries 30 --seed 7\n"
            "  raglabel assign project.db --list --format json"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("db", metavar="DB", type=project_file, help="the project file")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--annotators",
        metavar="A,B,...",
        help="the annotators to share the queries among, comma-separated",
    )
    what.add_argument(
        "--list",
        action="store_true",
        help="show each annotator's assigned queries and which of them they have done",
    )
    parser.add_argument(
        "--overlap",
        metavar="K",
        type=int_in(1, 1_000_000),
        help="with --annotators (required there): how many annotators grade each query,"
        " 1 to the number of --annotators",
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--queries",
        metavar="N",
        type=int_in(1, 1_000_000_000),
        help="assign N of the queries the stored runs cover: those assigned before first,"
        " then others drawn at random with --seed (default: every covered query)",
    )
    which.add_argument(
        "--audit",
        action="store_true",
        help="assign the audit sample's queries (raglabel audit DB --sample N draws them)",
    )
    parser.add_argument(
        "--seed",
        type=int_in(0, 2**63 - 1),
        help="seed of the plan's draws and ties, 0 to 2**63 - 1 (default: one from the OS,"
        " printed so the plan can be made again)",
    )
    parser.add_argument(
        "--depth",
        metavar="K",
        type=int_in(1, MAX_DEPTH),
        help="a query's pool: every passage a stored run ranks within its top K; an assign"
        " balances these pairs, and --list calls a query done when the annotator graded all"
        f" of them (default: {DEFAULT_DEPTH}, the grading app's deepest default cutoff)",
    )
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="with --list: output (default: text)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="with --annotators: print the plan and what it would change, record nothing",
    )
    parser.set_defaults(handler=run)


def annotator_list(text: str) -> list[str]:
    """``--annotators``' names, each checked as ``serve --add-annotator`` checks one."""
    names = [person_name(part, "--annotators") for part in text.split(",")]
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise UsageError(f"--annotators: {name!r} is named twice")
        seen.add(name)
    return names


def run(args: argparse.Namespace) -> int:
    depth = DEFAULT_DEPTH if args.depth is None else args.depth
    if args.list:
        for option, given in (
            ("--overlap", args.overlap is not None),
            ("--queries", args.queries is not None),
            ("--audit", args.audit),
            ("--seed", args.seed is not None),
            ("--dry-run", args.dry_run),
        ):
            if given:
                raise UsageError(f"{option} goes with --annotators, not --list")
        return _list(args, depth)
    if args.overlap is None:
        raise UsageError("--annotators needs --overlap K: how many of them grade each query")
    if args.format != "text":
        raise UsageError("--format goes with --list; an assign prints text")
    return _assign(args, depth)


def _assign(args: argparse.Namespace, depth: int) -> int:
    # secrets loads hashlib and hmac; only a plan without a seed needs it.
    import secrets

    from raglabel.analysis.assignment import Request, plan
    from raglabel.storage.assignments import record
    from raglabel.storage.project import Project

    seed = secrets.randbits(OS_SEED_BITS) if args.seed is None else args.seed
    request = Request(
        annotators=tuple(annotator_list(args.annotators)),
        overlap=args.overlap,
        seed=seed,
        depth=depth,
        queries=args.queries,
        audit=args.audit,
    )
    if args.dry_run:
        from raglabel.cli.reading import open_to_read

        with open_to_read(args.db, "assign") as reader:
            made = plan(reader.conn, request)
        for line in describe(made, str(args.db), recorded=False):
            print(line)
        return 0
    with Project.open(args.db) as project:
        made = plan(project.conn, request)
        record(
            project,
            made.shares,
            overlap=request.overlap,
            seed=seed,
            audit=request.audit,
            annotators=request.annotators,
            queries=made.queries,
        )
    for line in describe(made, str(args.db)):
        print(line)
    return 0


def describe(made: Plan, db: str, *, recorded: bool = True) -> list[str]:
    """The lines an assign prints: what it did, each share's size, and every change; or,
    not ``recorded`` (``--dry-run``), what it would do, said as such first and last."""
    from raglabel.analysis.assignment import HELD, STARTED

    request = made.request
    source = (
        "the audit sample's queries"
        if request.audit
        else f"{len(made.queries)} of the queries the stored runs cover"
        if request.queries is not None
        else "every query the stored runs cover"
    )
    chosen = set(made.queries)
    # Started shares stay whatever the assign asks: some may be of queries outside it.
    beyond = sorted({q for qids in made.shares.values() for q in qids} - chosen)
    total = len(chosen) + len(beyond)
    lines = [
        f"{'assigned' if recorded else 'would assign'} {_count(total, 'query', 'queries')}"
        + (f": {len(made.queries)} ({source})" if beyond else f" ({source})")
        + f", each to {request.overlap} of {len(request.annotators)} annotators, balanced by"
        f" the pairs each query pools to depth {request.depth}"
        + (
            f", and {_count(len(beyond), 'started query', 'started queries')} outside them,"
            f" kept (an assign never takes begun work away): {' '.join(beyond)}"
            if beyond
            else ""
        )
        + f"; seed {request.seed} (--seed {request.seed} makes the same plan from {db} as it"
        " was)"
    ]
    if not recorded:
        lines.insert(0, "dry run: this plan is not recorded")
    if made.created:
        done = "created" if recorded else "would be created"
        lines.append(f"new annotators, {done}: {', '.join(made.created)}")
    width = max(len("annotator"), *(len(name) for name in made.shares))
    wide = max(len("pairs"), *(len(str(pairs)) for pairs in made.pairs.values()))
    lines.append(f"{'annotator':<{width}}  queries  {'pairs':>{wide}}")
    for name, qids in made.shares.items():
        lines.append(f"{name:<{width}}  {len(qids):>7}  {made.pairs[name]:>{wide}}")
    started = [s for s in made.kept if s.why == STARTED]
    held = [s for s in made.kept if s.why == HELD]
    if started:
        lines.append(
            f"kept {_count(len(started), 'started share', 'started shares')} (an assign never"
            f" takes begun work away): {_by_annotator(started)}"
        )
    if held:
        lines.append(
            f"kept {_count(len(held), 'share', 'shares')} not started, still with their"
            f" annotator: {_by_annotator(held)}"
        )
    reasons: dict[str, list[Share]] = {}
    for share in made.taken:
        reasons.setdefault(share.why, []).append(share)
    for why, shares in reasons.items():
        lines.append(
            f"took {_count(len(shares), 'share', 'shares')} ({why}): {_by_annotator(shares)}"
        )
    if made.adopted:
        lines.append(
            f"kept {_count(len(made.adopted), 'share', 'shares')} (started before assigning:"
            f" the annotator graded some of the query with no share of it):"
            f" {_by_annotator(made.adopted)}"
        )
    fresh = len(made.added) - len(made.adopted)
    if fresh:
        lines.append(f"gave {_count(fresh, 'new share', 'new shares')}")
    if made.above:
        lines.append(
            f"above the overlap of {request.overlap} (started by more annotators; nobody's"
            f" begun work is taken): {' '.join(made.above)}"
        )
    if not recorded:
        lines.append(
            f"dry run: nothing was recorded; --seed {request.seed} without --dry-run records"
            " this plan, as long as no grade or assign lands in between"
        )
    return lines


def _list(args: argparse.Namespace, depth: int) -> int:
    from raglabel.cli.reading import open_to_read
    from raglabel.formats.assign_report import AnnotatorShare, AssignList
    from raglabel.storage.assignments import assigned, done_by_annotator, overlap

    with open_to_read(args.db, "assign") as project, project.snapshot():
        conn = project.conn
        shares = assigned(conn)
        done = done_by_annotator(conn, depth)
        last = overlap(conn)
    document = AssignList(
        overlap=last,
        annotators={
            name: AnnotatorShare(assigned=qids, done=[q for q in qids if q in done[name]])
            for name, qids in shares.items()
        },
    )
    if args.format == "json":
        print(json.dumps(document.model_dump(mode="json"), ensure_ascii=False))
        return 0
    if not shares:
        print(
            f"nothing is assigned in {args.db}: raglabel assign {args.db} --annotators A,B"
            " --overlap K assigns queries"
        )
        return 0
    print(
        f"overlap {last} (the last assign's); a query is done when its annotator graded every"
        f" passage a stored run ranks within its top {depth}"
    )
    width = max(len("annotator"), *(len(name) for name in shares))
    print(f"{'annotator':<{width}}  assigned  done")
    for name, share in document.annotators.items():
        print(f"{name:<{width}}  {len(share.assigned):>8}  {len(share.done):>4}")
    return 0


def _count(number: int, one: str, many: str) -> str:
    return f"{number} {one if number == 1 else many}"


def _by_annotator(shares: Sequence[Share]) -> str:
    grouped: dict[str, list[str]] = {}
    for share in shares:
        grouped.setdefault(share.annotator, []).append(share.query)
    return "; ".join(f"{name}: {' '.join(qids)}" for name, qids in sorted(grouped.items()))
