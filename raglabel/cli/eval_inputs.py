"""``raglabel eval``'s options as an :class:`~raglabel.analysis.inputs.EvalRequest`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from raglabel.analysis.bounds import resampling_problem
from raglabel.analysis.entry import load_request
from raglabel.analysis.evaluation import Options
from raglabel.analysis.inputs import EvalRequest, Loaded
from raglabel.cli.options import (
    cutoffs_option,
    grade_map_option,
    metric_config,
    named_file,
)
from raglabel.errors import UsageError
from raglabel.formats.trec.blocks import in_blocks, share_malloc_arenas
from raglabel.metrics.names import MAX_CUTOFF, MetricNameError, parse_metric_list

if TYPE_CHECKING:
    from raglabel.analysis.answers import AnswerOptions


def _check_file(path: str | Path, option: str) -> None:
    """A path a file option names must not be a directory (a missing file is the
    reader's error, which names it)."""
    if Path(path).is_dir():
        raise UsageError(f"{option} {str(path)!r} is a folder, not a file")


def _validate_counts(args: argparse.Namespace) -> None:
    problem = resampling_problem(args.resamples, args.permutations, args.seed, args.confidence)
    if problem is not None:
        raise UsageError(f"--{problem[0]} {problem[1]}")
    db = getattr(args, "db", None)
    if sum(bool(x) for x in (args.qrels, args.samples, db)) > 1:
        raise UsageError("give labels once: a project DB, --qrels or --samples")
    if not args.qrels and not args.samples and not db:
        raise UsageError("nothing to evaluate: give a project DB, --qrels with --run, or --samples")
    if args.qrels and not args.run:
        raise UsageError("--qrels needs at least one --run NAME=FILE")


def _check_files(args: argparse.Namespace, runs: list[tuple[str, Path]]) -> None:
    if getattr(args, "db", None):
        _check_file(args.db, "DB")
    if args.qrels:
        _check_file(args.qrels, "--qrels")
    for _, path in runs:
        _check_file(path, "--run")
    if args.samples:
        _check_file(named_file(args.samples, "--samples")[1], "--samples")
    if getattr(args, "config", None):
        _check_file(args.config, "--config")
    output = getattr(args, "output", None)
    if output and Path(output).is_dir():
        raise UsageError(f"--output {output!r} is a folder; give the path of a file")


def _answer_request(args: argparse.Namespace) -> AnswerOptions | None:
    """The answer options, checked before anything is read; None without --answers."""
    if not args.answers:
        for option in ("threshold", "system"):
            if getattr(args, option):
                raise UsageError(f"--{option} goes with --answers")
        return None
    if not getattr(args, "db", None):
        command = getattr(args, "command", None) or "eval"  # report reads its inputs here too
        raise UsageError(f"--answers needs a project DB: raglabel {command} DB --answers")
    from raglabel.analysis.answers import AnswerOptions, parse_thresholds

    return AnswerOptions(
        thresholds=parse_thresholds(args.threshold),
        resamples=args.resamples,
        seed=args.seed,
        level=args.confidence,
        per_query=args.per_query,
        # The report shows no answer comparison: tests it computed would join the runs'
        # in one adjustment and move the p-values it does show.
        compare=args.compare and getattr(args, "answer_compare", True),
        baseline=args.baseline,
        permutations=args.permutations,
        adjust=args.adjust,
    )


def eval_request(args: argparse.Namespace) -> EvalRequest:
    answers = _answer_request(args)  # checked before anything is read
    _validate_counts(args)
    runs = [named_file(spec, "--run") for spec in args.run]
    _check_files(args, runs)
    config = metric_config(args)
    ks = sorted(cutoffs_option(args.k)) if args.k else [config.default_k]
    if ks[-1] > MAX_CUTOFF:
        raise UsageError(f"default_k {ks[-1]} is too large (at most 2**63 - 1)")
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
        first_is_baseline=getattr(args, "first_is_baseline", False),
        resamples=args.resamples,
        permutations=args.permutations,
        seed=args.seed,
        level=args.confidence,
        na=getattr(args, "na", "skip"),
        judged_only=getattr(args, "judged_only", False),
        adjust=getattr(args, "adjust", "holm"),
        headline=getattr(args, "headline", None),  # the report's; eval's is its first metric
    )
    return EvalRequest(
        options=options,
        cutoffs=ks,
        config=config,
        runs=runs,
        qrels=Path(args.qrels) if args.qrels else None,
        samples=named_file(args.samples, "--samples") if args.samples else None,
        project=Path(db) if db else None,
        choice=choice,
        grade_map=grade_map_option(args.grade_map),
        reader=args.reader,
        containment_named=bool(args.metrics) and "containment" in args.metrics,
        pools=list(args.pool),
        answers=answers,
        answer_systems=list(getattr(args, "system", [])),
        metric_names=args.metrics,
        cutoffs_given=bool(args.k),
    )


def load_inputs(
    args: argparse.Namespace, request: EvalRequest | None = None
) -> tuple[EvalRequest, Loaded]:
    """The request the options make (or ``request``, made from them already), and its
    inputs loaded."""
    request = eval_request(args) if request is None else request
    # Only when eval has the process to itself (``main`` says so): the Python API shares
    # its process with whatever else a notebook runs.
    if getattr(args, "own_process", False) and any(in_blocks(path) for _, path in request.runs):
        share_malloc_arenas()
    return request, load_request(request)
