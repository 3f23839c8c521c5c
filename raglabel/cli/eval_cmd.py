"""``raglabel eval``: metrics for runs, straight from files (as trec_eval and ranx work)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from raglabel.cli.options import add_convention_options
from raglabel.storage.policies import POLICIES

FORMATS = ("table", "json", "csv", "markdown")


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "eval",
        help="evaluate runs against graded labels",
        description=(
            "Evaluate retrieval runs against graded labels: set-based metrics (RA-nWG, PROC, "
            "%%PROC, N-Recall, Precision4+, Harm, Judged) beside classic ones (hit, recall, "
            "recall_all, precision, MRR, nDCG, containment) and ctx_rank_prec."
        ),
        epilog=(
            "examples:\n"
            "  raglabel eval --qrels qrels.txt --run bm25=bm25.run --run dense=dense.run -k 5,10\n"
            "  raglabel eval --qrels qrels.txt --run *.run --metrics set --ci --compare\n"
            "  raglabel eval --samples samples.jsonl --format json --per-query\n"
            "  raglabel eval project.db --ci --compare --policy median"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "db",
        metavar="DB",
        nargs="?",
        help="a project file: its runs, scored with its resolved labels (put it first)",
    )
    source = parser.add_argument_group("inputs")
    source.add_argument("--qrels", metavar="F", help="TREC qrels: qid iteration docid relevance")
    source.add_argument(
        "--run",
        metavar="NAME=F",
        action="extend",
        nargs="+",
        default=[],
        help="a TREC run (qid Q0 docid rank score tag); NAME defaults to the file's stem",
    )
    source.add_argument(
        "--samples",
        metavar="[NAME=]F",
        help="samples JSONL: per query its gold passages and one system's retrieval",
    )
    source.add_argument(
        "--pool",
        metavar="NAME=RUN",
        action="append",
        default=[],
        help="use RUN (a run name or a run file) as NAME's retrieval pool for PROC",
    )
    labels = parser.add_argument_group("labels from a project (DB)")
    labels.add_argument(
        "--policy",
        choices=POLICIES,
        default="median",
        help="how several annotators' grades resolve to one (default median, lower half)",
    )
    labels.add_argument("--annotator", metavar="NAME", help="use one annotator's grades only")
    labels.add_argument(
        "--fill-with-judge",
        action="store_true",
        help="let judge suggestions grade pairs no human graded (off by default; reported)",
    )
    what = parser.add_argument_group("what to compute")
    what.add_argument("-k", metavar="LIST", help="cutoffs, e.g. 5,10,20 (default 5)")
    what.add_argument(
        "--metrics",
        metavar="LIST",
        help="metrics or groups (set, classic, ranking, all), e.g. set,ndcg@10,mrr (default all)",
    )
    what.add_argument("--per-query", action="store_true", help="add every query's values")
    what.add_argument("--ci", action="store_true", help="bootstrap confidence intervals")
    what.add_argument("--compare", action="store_true", help="paired randomization tests")
    what.add_argument("--baseline", metavar="NAME", help="compare every run with this one only")
    what.add_argument("--resamples", type=int, default=1000, metavar="N", help="bootstrap draws")
    what.add_argument(
        "--permutations", type=int, default=10_000, metavar="N", help="randomization draws"
    )
    what.add_argument("--seed", type=int, default=42, help="seed of all resampling (default 42)")
    what.add_argument(
        "--confidence", type=float, default=0.95, metavar="P", help="interval level (0.95)"
    )
    conv = parser.add_argument_group("conventions (defaults from the metric spec)")
    conv.add_argument("--grade-map", metavar="MAP", help="label:grade pairs for imported labels")
    add_convention_options(conv)
    conv.add_argument("--ctx-threshold", type=float, metavar="X", help="ctx_rank pass mark (80)")
    out = parser.add_argument_group("output")
    out.add_argument("--format", choices=FORMATS, default="table", help="output format")
    out.add_argument("--output", "-o", metavar="F", help="write to F instead of stdout")
    out.add_argument("--timings", action="store_true", help="print load and compute seconds")
    out.add_argument(
        "--reader",
        choices=("auto", "python", "polars"),
        default="auto",
        help="file reader: python for small inputs, polars (columnar) for large; "
        "auto picks by size (8 MB); both give identical results",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from raglabel.cli.eval_inputs import load_inputs
    from raglabel.cli.render import render

    started = time.perf_counter()
    loaded = load_inputs(args)
    loaded_at = time.perf_counter()
    from raglabel.analysis.evaluation import evaluate

    report = evaluate(
        loaded.stats,
        loaded.runs,
        loaded.options,
        labels_info=loaded.labels_info,
        config=loaded.config,
        warnings=loaded.warnings,
    )
    computed_at = time.perf_counter()
    for warning in loaded.warnings:
        print(f"raglabel eval: warning: {warning}", file=sys.stderr)
    text = render(report, args.format, per_query=args.per_query)
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
