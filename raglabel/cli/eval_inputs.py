"""``raglabel eval``'s options as an :class:`~raglabel.analysis.inputs.EvalRequest`."""

from __future__ import annotations

import argparse
from pathlib import Path

from raglabel.analysis.evaluation import Options
from raglabel.analysis.inputs import EvalRequest, Loaded, load
from raglabel.cli.options import (
    MAX_PERMUTATIONS,
    MAX_RESAMPLES,
    cutoffs_option,
    grade_map_option,
    metric_config,
    named_file,
)
from raglabel.errors import UsageError
from raglabel.formats.blocks import in_blocks, share_malloc_arenas
from raglabel.metrics.names import MAX_CUTOFF, MetricNameError, parse_metric_list

_MAX_SEED = 2**63 - 2


def _check_file(path: str | Path, option: str) -> None:
    """A path a file option names must not be a directory (a missing file is the
    reader's error, which names it)."""
    if Path(path).is_dir():
        raise UsageError(f"{option} {str(path)!r} is a folder, not a file")


def _validate_counts(args: argparse.Namespace) -> None:
    if not 1 <= args.resamples <= MAX_RESAMPLES:
        raise UsageError(f"--resamples must be from 1 to {MAX_RESAMPLES:,}, got {args.resamples}")
    if not 1 <= args.permutations <= MAX_PERMUTATIONS:
        raise UsageError(
            f"--permutations must be from 1 to {MAX_PERMUTATIONS:,}, got {args.permutations}"
        )
    if not 0 <= args.seed <= _MAX_SEED:
        raise UsageError(f"--seed must be from 0 to 2**63 - 2, got {args.seed}")
    if not 0.0 < args.confidence < 1.0:
        raise UsageError("--confidence must be between 0 and 1, e.g. 0.95")
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


def eval_request(args: argparse.Namespace) -> EvalRequest:
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
    )


def load_inputs(args: argparse.Namespace) -> Loaded:
    request = eval_request(args)
    # Only when eval has the process to itself (``main`` says so): the Python API shares
    # its process with whatever else a notebook runs.
    if getattr(args, "own_process", False) and any(in_blocks(path) for _, path in request.runs):
        share_malloc_arenas()
    loaded = load(request)
    if args.metrics:
        loaded.warnings += _name_notes(args, request, loaded)
    return loaded


def _name_notes(args: argparse.Namespace, request: EvalRequest, loaded: Loaded) -> list[str]:
    """How the names of ``--metrics`` were read, where another tool means otherwise."""
    from raglabel.analysis.metric_notes import gain_notes, name_notes, relevance_notes
    from raglabel.formats.maps import GradeMap

    notes = name_notes(args.metrics, request.cutoffs, cutoffs_given=bool(args.k))
    if request.qrels is not None:  # other tools' conventions are about qrels labels
        grade_map = request.grade_map or GradeMap()
        notes += relevance_notes(args.metrics, grade_map, loaded.stats, loaded.options.na)
        notes += gain_notes(args.metrics, loaded.options.metrics, grade_map, request.config)
    return list(dict.fromkeys(notes))
