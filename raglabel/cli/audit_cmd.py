"""``raglabel audit``: draw queries at random for people to grade in full, and list the
draws with which drawn queries are complete."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from raglabel.cli.arguments import int_in, project_file
from raglabel.cli.options import DEFAULT_DEPTH, MAX_DEPTH
from raglabel.errors import UsageError

#: A seed chosen for a draw that was given none: 32 random bits from the OS, short
#: enough to copy from the output.
OS_SEED_BITS = 32


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "audit",
        help="draw queries at random for people to grade in full; list the draws",
        description=(
            "The audit sample: queries drawn uniformly at random, without replacement, from"
            " those a stored run covers, for people to grade every pooled pair of. A later"
            " draw extends the sample from the queries not drawn yet. Each draw is recorded"
            " in the project (seed, population, time, queries in draw order) and is"
            " reproducible from its seed. A drawn query is complete when a person graded"
            " every passage some stored run ranks within its top --depth for it: grades made"
            " in the app, adjudications and people's labels imported with --qrels, --beir or"
            " --samples count; a judge's labels never do."
        ),
        epilog=(
            "examples:\n"
            "  raglabel audit project.db --sample 40\n"
            "  raglabel audit project.db --sample 10 --seed 7 --format json\n"
            "  raglabel audit project.db --list"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("db", metavar="DB", type=project_file, help="the project file")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--sample",
        metavar="N",
        type=int_in(1, 1_000_000_000),
        help="draw N more queries from those not drawn yet (asking for more than are left"
        " is an error)",
    )
    what.add_argument(
        "--list",
        action="store_true",
        help="show every draw and which drawn queries are complete",
    )
    parser.add_argument(
        "--seed",
        type=int_in(0, 2**63 - 1),
        help="seed of the draw, 0 to 2**63 - 1 (default: one from the OS, printed so the"
        " draw can be made again)",
    )
    parser.add_argument(
        "--depth",
        metavar="K",
        type=int_in(1, MAX_DEPTH),
        help="with --list: a drawn query is complete when every passage a stored run ranks"
        f" within its top K has a person's grade (default: {DEFAULT_DEPTH}, the grading"
        " app's deepest default cutoff)",
    )
    parser.add_argument(
        "--format", choices=("text", "json"), default="text", help="output (default: text)"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.list:
        if args.seed is not None:
            raise UsageError("--seed goes with --sample, not --list")
        return _list(args)
    if args.depth is not None:
        raise UsageError("--depth goes with --list: a draw does not depend on it")
    return _sample(args)


def _sample(args: argparse.Namespace) -> int:
    # secrets loads hashlib and hmac; only a draw without a seed needs it.
    import secrets

    from raglabel.storage.audit import draw
    from raglabel.storage.project import Project

    seed = secrets.randbits(OS_SEED_BITS) if args.seed is None else args.seed
    with Project.open(args.db) as project:
        made = draw(project, args.sample, seed)
    new = made.draw
    if made.expected_population not in (None, new.population):
        print(
            f"raglabel audit: warning: the queries the stored runs cover changed since the"
            f" last draw ({made.expected_population} were left to draw then, {new.population}"
            " now): the draws together are no longer one uniform sample of the queries the"
            " runs cover",
            file=sys.stderr,
        )
    if args.format == "json":
        document = {"seed": new.seed, "population": new.population, "drawn": list(new.drawn)}
        print(json.dumps(document, ensure_ascii=False))
    else:
        noun = "query" if len(new.drawn) == 1 else "queries"
        print(f"drew {len(new.drawn)} {noun} (seed {new.seed}): {' '.join(new.drawn)}")
    return 0


def _list(args: argparse.Namespace) -> int:
    from raglabel.cli.reading import open_to_read
    from raglabel.storage.audit import audit

    depth = DEFAULT_DEPTH if args.depth is None else args.depth
    with open_to_read(args.db, "audit") as project:
        state = audit(project.conn, depth)
    if args.format == "json":
        document = {
            "draws": [
                {
                    "seed": d.seed,
                    "population": d.population,
                    "drawn": list(d.drawn),
                    "time": d.time,
                }
                for d in state.draws
            ],
            "depth": state.depth,
            "complete": list(state.complete),
            "incomplete": list(state.incomplete),
            "uncovered": list(state.uncovered),
            "accepted_only": state.accepted_only,
        }
        print(json.dumps(document, ensure_ascii=False))
        return 0
    if not state.draws:
        print(f"no draw yet in {args.db}: raglabel audit {args.db} --sample N draws one")
        return 0
    for number, d in enumerate(state.draws, 1):
        print(
            f"draw {number}: {len(d.drawn)} of {d.population} queries, seed {d.seed},"
            f" {d.time}: {' '.join(d.drawn)}"
        )
    print(
        f"audit {len(state.complete)}/{state.drawn} complete (every passage in a stored"
        f" run's top {depth} graded by a person)"
    )
    if state.incomplete:
        print(f"incomplete: {' '.join(state.incomplete)}")
    if state.accepted_only:
        print(
            f"{state.accepted_only} pairs of them graded only by accepting the judge's"
            " suggestion: a person's own grade completes them"
        )
    if state.uncovered:
        print(f"no longer covered by a stored run (left out): {' '.join(state.uncovered)}")
    return 0
