"""``raglabel eval``'s options as an :class:`~raglabel.analysis.inputs.EvalRequest`."""

from __future__ import annotations

import argparse
from pathlib import Path

from raglabel.analysis.evaluation import Options
from raglabel.analysis.inputs import EvalRequest, Loaded, load
from raglabel.cli.options import cutoffs_option, grade_map_option, metric_config, named_file
from raglabel.errors import UsageError
from raglabel.metrics.names import MetricNameError, parse_metric_list


def _validate_counts(args: argparse.Namespace) -> None:
    if args.resamples < 1 or args.permutations < 1:
        raise UsageError("--resamples and --permutations must be at least 1")
    if not 0.0 < args.confidence < 1.0:
        raise UsageError("--confidence must be between 0 and 1, e.g. 0.95")
    db = getattr(args, "db", None)
    if sum(bool(x) for x in (args.qrels, args.samples, db)) > 1:
        raise UsageError("give labels once: a project DB, --qrels or --samples")
    if not args.qrels and not args.samples and not db:
        raise UsageError("nothing to evaluate: give a project DB, --qrels with --run, or --samples")
    if args.qrels and not args.run:
        raise UsageError("--qrels needs at least one --run NAME=FILE")


def eval_request(args: argparse.Namespace) -> EvalRequest:
    _validate_counts(args)
    config = metric_config(args)
    ks = sorted(cutoffs_option(args.k)) if args.k else [config.default_k]
    try:
        metrics = parse_metric_list(args.metrics, ks)
    except MetricNameError as exc:
        raise UsageError(f"--metrics: {exc}") from None
    db = getattr(args, "db", None)
    choice = None
    if db:
        from raglabel.storage.labels import LabelChoice

        choice = LabelChoice(args.policy, args.annotator, args.fill_with_judge)
    options = Options(
        metrics=metrics,
        per_query=args.per_query,
        ci=args.ci,
        compare=args.compare,
        baseline=args.baseline,
        resamples=args.resamples,
        permutations=args.permutations,
        seed=args.seed,
        level=args.confidence,
    )
    return EvalRequest(
        options=options,
        cutoffs=ks,
        config=config,
        runs=[named_file(spec, "--run") for spec in args.run],
        qrels=Path(args.qrels) if args.qrels else None,
        samples=named_file(args.samples, "--samples") if args.samples else None,
        project=Path(db) if db else None,
        choice=choice,
        grade_map=grade_map_option(args.grade_map),
        reader=args.reader,
        containment_named=bool(args.metrics) and "containment" in args.metrics,
        pools=list(args.pool),
    )


def load_inputs(args: argparse.Namespace) -> Loaded:
    return load(eval_request(args))
