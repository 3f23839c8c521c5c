"""``raglabel eval``: metrics for runs, straight from files (as trec_eval and ranx work)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from raglabel.analysis.bounds import MAX_PERMUTATIONS, MAX_RESAMPLES
from raglabel.cli.arguments import LazyWidthRawDescription, is_sqlite
from raglabel.cli.blas import spare_blas_threads
from raglabel.cli.options import add_convention_options
from raglabel.errors import UsageError
from raglabel.storage.policies import POLICIES

if TYPE_CHECKING:
    from raglabel.formats.report import Report
    from raglabel.metrics.labels import LabelSet

FORMATS = ("table", "json", "csv", "markdown")
#: ``--estimate``: people's grades (the ordinary report), the judge's, or judge-corrected.
ESTIMATES = ("human", "judge", "corrected")
#: The resampling options' defaults: a value other than these was asked for.
RESAMPLING_DEFAULTS = {"resamples": 1000, "permutations": 10_000, "seed": 42}


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "eval",
        help="evaluate runs against graded labels",
        description=(
            "Evaluate retrieval runs against graded labels: set-based metrics (RA-nWG, PROC, "
            "%PROC, N-Recall, Precision4+, Harm, Judged) beside classic ones (hit, recall, "
            "recall_all, precision, MRR, nDCG, AP, R-precision, bpref, containment) and "
            "ctx_rank_prec."
        ),
        epilog=(
            "examples:\n"
            "  raglabel eval --qrels qrels.txt --run bm25=bm25.run --run dense=dense.run -k 5,10\n"
            "  raglabel eval --qrels qrels.txt --run *.run --metrics set --ci --compare\n"
            "  raglabel eval --qrels qrels.txt --run x.run --metrics map,P_10 --na zero\n"
            "  raglabel eval --samples samples.jsonl --format json --per-query\n"
            "  raglabel eval project.db --ci --compare --policy median\n"
            "  raglabel eval project.db --answers --threshold faithfulness=4 --format json\n"
            "  raglabel eval project.db --estimate corrected --compare --baseline bm25"
        ),
        formatter_class=LazyWidthRawDescription,
    )
    add_inputs_and_conventions(parser)
    out = parser.add_argument_group("output")
    out.add_argument(
        "--format", choices=FORMATS, default="table", help="output format (default: table)"
    )
    out.add_argument(
        "--output", "-o", metavar="F", help="write to F instead of stdout (default: stdout)"
    )
    out.add_argument(
        "--timings", action="store_true", help="print load and compute seconds (default: off)"
    )
    add_reader_option(out)
    parser.set_defaults(handler=run, settle=settle_db)


def add_inputs_and_conventions(parser: argparse.ArgumentParser, *, report: bool = False) -> None:
    """What eval reads and computes. ``raglabel report`` takes the very same options,
    but for the three it always does (``report=True``): per-query values, intervals and
    paired tests against one baseline."""
    parser.add_argument(
        "db",
        metavar="DB",
        nargs="?",
        help="a project file: its runs, scored with its resolved labels",
    )
    source = parser.add_argument_group("inputs")
    source.add_argument(
        "--qrels", metavar="F", help="TREC qrels: qid iteration docid relevance (default: none)"
    )
    source.add_argument(
        "--run",
        metavar="NAME=F",
        action="extend",
        nargs="+",
        default=[],
        help="a TREC run (qid Q0 docid rank score tag); NAME defaults to the file's stem "
        "(default: none)",
    )
    source.add_argument(
        "--samples",
        metavar="[NAME=]F",
        help="samples JSONL: per query its gold passages and one system's retrieval "
        "(default: none)",
    )
    source.add_argument(
        "--pool",
        metavar="NAME=RUN",
        action="append",
        default=[],
        help="use RUN (a run name or a run file) as NAME's retrieval pool for PROC "
        "(default: NAME's own entries)",
    )
    answers = parser.add_argument_group("answer systems of a project (DB)")
    answers.add_argument(
        "--answers",
        action="store_true",
        help="add each answer system's criteria (faithfulness, answer_relevancy, "
        "context_recall, ctx_rank_prec): human and judge means, pass rates, NA counts, "
        "intervals, the judge-corrected mean (default: off)",
    )
    answers.add_argument(
        "--threshold",
        metavar="CRITERION=N",
        action="append",
        default=[],
        help="pass mark of a criterion, 1-5 (default: 3), or of ctx_rank_prec, 0-100 "
        "(default: 80); repeatable",
    )
    answers.add_argument(
        "--system",
        metavar="NAME",
        action="append",
        default=[],
        help="only this answer system; repeatable (default: all)",
    )
    labels = parser.add_argument_group("labels from a project (DB)")
    labels.add_argument(
        "--policy",
        choices=POLICIES,
        default="median",
        help="how several annotators' grades resolve to one (default: median, lower half)",
    )
    labels.add_argument(
        "--annotator", metavar="NAME", help="use one annotator's grades only (default: all)"
    )
    labels.add_argument(
        "--fill-with-judge",
        action="store_true",
        help="let judge suggestions grade pairs no human graded (default: off; reported)",
    )
    if not report:
        labels.add_argument(
            "--estimate",
            choices=ESTIMATES,
            default="human",
            help="human: people's grades; judge: the judge's labels on every pair, no human"
            " grade; corrected: the judge's figures on every query corrected by people's on"
            " the complete queries of the audit sample (raglabel audit), with normal"
            " intervals (default: human)",
        )
    what = parser.add_argument_group("what to compute")
    what.add_argument("-k", metavar="LIST", help="cutoffs, e.g. 5,10,20 (default: 5)")
    what.add_argument(
        "--metrics",
        metavar="LIST",
        help="metrics or groups (set, classic, ranking, trec, all), e.g. set,ndcg@10,mrr; "
        "trec_eval and ir_measures names too (P_5, map, nDCG@10, RR) (default: all)",
    )
    what.add_argument(
        "--na",
        choices=("skip", "zero"),
        default="skip",
        help="a query whose labels leave a metric undefined: left out of the mean (skip) or "
        "counted as 0, as trec_eval does (zero) (default: skip)",
    )
    what.add_argument(
        "--judged-only",
        action="store_true",
        help="drop unjudged passages from each ranking before the classic metrics "
        "(trec_eval -J) (default: off)",
    )
    if not report:
        what.add_argument(
            "--per-query", action="store_true", help="add every query's values (default: off)"
        )
        what.add_argument(
            "--ci", action="store_true", help="bootstrap confidence intervals (default: off)"
        )
        what.add_argument(
            "--compare", action="store_true", help="paired randomization tests (default: off)"
        )
    what.add_argument(
        "--baseline",
        metavar="NAME",
        help="the run every other is tested against (default: the first run)"
        if report
        else "compare every run with this one only (default: all pairs)",
    )
    what.add_argument(
        "--adjust",
        choices=("none", "holm", "bh"),
        default="holm",
        help="adjust --compare's p-values for multiple comparisons, the headline metric's "
        "tests and all others as two families: Holm, Benjamini-Hochberg or none "
        "(default: holm; the raw p-values are kept)",
    )
    what.add_argument(
        "--resamples",
        type=int,
        default=RESAMPLING_DEFAULTS["resamples"],
        metavar="N",
        help=f"bootstrap draws, 1 to {MAX_RESAMPLES:,} (default: 1000)",
    )
    what.add_argument(
        "--permutations",
        type=int,
        default=RESAMPLING_DEFAULTS["permutations"],
        metavar="N",
        help=f"randomization draws, 1 to {MAX_PERMUTATIONS:,} (default: 10000)",
    )
    what.add_argument(
        "--seed",
        type=int,
        default=RESAMPLING_DEFAULTS["seed"],
        help="seed of all resampling, 0 to 2**63 - 2 (default: 42)",
    )
    what.add_argument(
        "--confidence",
        type=float,
        default=0.95,
        metavar="P",
        help="interval level, between 0 and 1 (default: 0.95)",
    )
    conv = parser.add_argument_group("conventions (defaults from the metric spec)")
    conv.add_argument(
        "--grade-map",
        metavar="MAP",
        help="label:grade pairs for imported labels (default: 0:2,1:3,2:4,3:5, negative -> 1)",
    )
    add_convention_options(conv)
    conv.add_argument(
        "--ctx-threshold", type=float, metavar="X", help="ctx_rank pass mark, 0-100 (default: 80)"
    )


def add_reader_option(out: Any) -> None:
    out.add_argument(
        "--reader",
        choices=("auto", "python", "polars"),
        default="auto",
        help="file reader: python for small inputs, polars (columnar) for large; "
        "auto picks by size (8 MB); both give identical results (default: auto)",
    )


def settle_db(args: argparse.Namespace) -> None:
    """``--run a.run project.db``: ``--run`` takes one or more files, so a project file
    written after it lands among the runs. It is recognised by its SQLite header and
    made the DB (or refused when a DB is given already)."""
    projects = [spec for spec in args.run if "=" not in spec and is_sqlite(Path(spec))]
    for spec in projects:
        if getattr(args, "db", None):
            raise UsageError(f"--run {spec!r} is a project file, not a TREC run")
        args.db = spec
        args.run = [other for other in args.run if other != spec]


def spare_eval_blas_threads(args: argparse.Namespace) -> None:
    """One BLAS thread (raglabel/cli/blas.py) for an eval that is its process's own
    command (``main`` says so) and multiplies no matrices: only the bootstrap, the
    randomization tests and the answer statistics do, so with any of them the threads
    stay."""
    if not getattr(args, "own_process", False):
        return
    if args.ci or args.compare or args.answers:
        return
    spare_blas_threads()


def run(args: argparse.Namespace) -> int:
    # First: the renderer's imports load numpy, after which the BLAS threads are started.
    spare_eval_blas_threads(args)
    from raglabel.cli.plain_table import console_width
    from raglabel.cli.render import render

    started = time.perf_counter()
    report, warnings, loaded_at, _ = compute(args)
    computed_at = time.perf_counter()
    for warning in warnings:
        print(f"raglabel eval: warning: {warning}", file=sys.stderr)
    # A file has no console: its tables are whole; a terminal's are laid out to fit it.
    width = None if args.output else console_width()
    text = render(report, args.format, per_query=args.per_query, width=width)
    if args.output:
        from raglabel.formats.output import atomic_text

        with atomic_text(Path(args.output)) as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    if args.timings:
        print(
            f"timings: load={loaded_at - started:.3f}s compute={computed_at - loaded_at:.3f}s",
            file=sys.stderr,
        )
    return 0


def unused_resampling(args: argparse.Namespace) -> list[str]:
    """The resampling options asked for (``--ci``, or a value other than the default),
    each as it was given."""
    unused = ["--ci"] if args.ci else []
    for name, default in RESAMPLING_DEFAULTS.items():
        value = getattr(args, name)
        if value != default:
            unused.append(f"--{name} {value}")
    return unused


def compute(args: argparse.Namespace) -> tuple[Report, list[str], float, LabelSet]:
    """The eval document the options ask for, its warnings, when loading ended, and the
    label set it was computed on (its grade counts per query)."""
    from raglabel.analysis.entry import evaluate_request
    from raglabel.cli.eval_inputs import load_inputs

    estimate = getattr(args, "estimate", "human")
    if estimate != "human":
        from raglabel.analysis.corrected import estimate_request
        from raglabel.cli.eval_inputs import eval_request

        if not getattr(args, "db", None):
            raise UsageError(
                f"--estimate {estimate} needs a project DB (raglabel eval DB --estimate"
                f" {estimate}); with --qrels or --samples the labels are people's only"
            )
        done = estimate_request(eval_request(args), estimate)
        unused = unused_resampling(args) if estimate == "corrected" else []
        if unused:
            note = (
                f"{', '.join(unused)}: not used by --estimate corrected, whose intervals are"
                " the normal PPI++ ones and whose p-values are normal tests; nothing is"
                " resampled"
            )
            done.warnings.append(note)
            if done.report.warnings is not done.warnings:  # the JSON report says it too
                done.report.warnings.append(note)
        return done.report, done.warnings, done.loaded_at, done.labels
    request, loaded = load_inputs(args)
    done = evaluate_request(request, loaded)
    return done.report, done.warnings, done.loaded_at, done.labels
