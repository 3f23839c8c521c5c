"""Turn ``raglabel eval`` options into a label set, runs and evaluation options."""

from __future__ import annotations

import argparse
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from raglabel.cli.options import cutoffs_option, metric_config
from raglabel.errors import UsageError
from raglabel.evaluation import Options
from raglabel.formats.arrays import align_qrels, read_run_arrays
from raglabel.formats.grades import TREC_GRADES, GradeLookup
from raglabel.formats.report_data import LabelsInfo
from raglabel.metrics.evaluate import QueryStats
from raglabel.metrics.labels import LabelSet
from raglabel.metrics.names import MetricNameError, parse_metric_list
from raglabel.metrics.run import RankedRun

if TYPE_CHECKING:
    import polars as pl

    # pydantic (behind maps and samples) is imported only when an option needs it, and
    # the row reader only for samples and stored runs.
    from raglabel.formats.maps import GradeMap
    from raglabel.formats.rows import RowAlignment

#: Below this many input bytes, numpy arrays beat importing and starting polars.
SMALL_INPUT_BYTES = 8 << 20


class Backend:
    """Labels and runs aligned with dictionaries (samples, stored runs); the file
    readers below subclass it with columnar aligners that give the same results."""

    kind = "python"

    def __init__(self, align: RowAlignment, sample_runs: list[RankedRun]) -> None:
        self._align = align
        self.labels: LabelSet = align.labels
        self.warnings: list[str] = align.warnings  # the aligner appends to this very list
        self.sample_runs = sample_runs

    def fingerprint(self) -> str:
        return self._align.fingerprint

    def run_file(self, name: str, path: Path) -> RankedRun:
        from raglabel.formats.rows import read_run_rows

        return self._align.run(name, read_run_rows(path))


class FileBackend(Backend):
    """Qrels and run files of a few megabytes, aligned on numpy arrays."""

    kind = "python"

    def __init__(self, qrels: Path, grade_map: GradeLookup | None) -> None:
        self._arrays = align_qrels(qrels, grade_map)
        self.labels = self._arrays.labels
        self.warnings = self._arrays.warnings
        self.sample_runs = []

    def fingerprint(self) -> str:
        return self._arrays.fingerprint()

    def run_file(self, name: str, path: Path) -> RankedRun:
        return self._arrays.run(name, *read_run_arrays(path))


class PolarsBackend(Backend):
    """The columnar reader, for inputs where parsing speed matters."""

    kind = "polars"

    def __init__(
        self, qrels: Path, grade_map: GradeMap | None, first_run: Path | None = None
    ) -> None:
        from raglabel.formats.align import Alignment
        from raglabel.formats.trec import read_qrels, read_run

        # The first run is parsed while the labels are fingerprinted: polars' parse
        # leaves part of the second core idle. Its errors come out when it is asked for.
        self._ahead: dict[Path, Future[pl.DataFrame]] = {}
        if first_run is not None:
            pool = ThreadPoolExecutor(max_workers=1)
            self._ahead[first_run] = pool.submit(read_run, first_run)
            pool.shutdown(wait=False)
        self._polars = Alignment.from_qrels(read_qrels(qrels, grade_map))
        self.labels = self._polars.labels
        self.warnings = self._polars.warnings
        self.sample_runs = []
        self._fingerprint = self._polars.fingerprint()

    def fingerprint(self) -> str:
        return self._fingerprint

    def run_file(self, name: str, path: Path) -> RankedRun:
        from raglabel.formats.trec import read_run

        ahead = self._ahead.pop(path, None)
        frame = read_run(path) if ahead is None else ahead.result()
        return self._polars.run(name, frame)


def _open_labels(
    args: argparse.Namespace, grade_map: GradeMap | None, run_paths: list[Path]
) -> tuple[Backend, NDArray[np.bool_] | None, str]:
    if getattr(args, "db", None):
        return _open_project(args)
    if args.samples:
        from raglabel.formats.rows import RowAlignment
        from raglabel.formats.samples import read_samples

        sample_name, sample_path = _named(args.samples, "--samples")
        samples = read_samples(sample_path, grade_map)
        align = RowAlignment.from_qrels(samples.qrels)
        run = align.run(sample_name, samples.run, samples.k_override)
        answers = np.array([q in samples.answered for q in align.labels.query_ids], np.bool_)
        return Backend(align, [run]), answers, str(sample_path)
    qrels = Path(args.qrels)
    reader = args.reader
    if reader == "auto":
        files = [qrels, *run_paths]
        size = sum(p.stat().st_size for p in files if p.is_file())
        reader = "python" if size <= SMALL_INPUT_BYTES else "polars"
    if reader == "polars":
        first = run_paths[0] if run_paths else None
        return PolarsBackend(qrels, grade_map, first), None, str(qrels)
    return FileBackend(qrels, grade_map), None, str(qrels)


def _open_project(args: argparse.Namespace) -> tuple[Backend, NDArray[np.bool_] | None, str]:
    from raglabel.cli.eval_db import DatabaseBackend
    from raglabel.storage.labels import LabelChoice
    from raglabel.storage.project import Project

    choice = LabelChoice(args.policy, args.annotator, args.fill_with_judge)
    backend = DatabaseBackend(Project.open(args.db), choice)
    return backend, backend.answers(), str(args.db)


@dataclass
class Loaded:
    stats: QueryStats
    runs: list[RankedRun]
    options: Options
    labels_info: LabelsInfo
    config: dict[str, object]
    warnings: list[str]


def _named(spec: str, option: str) -> tuple[str, Path]:
    """``NAME=FILE`` or a bare ``FILE`` (named after its stem)."""
    name, sep, file = spec.partition("=")
    if sep and name and not Path(spec).exists():
        if not file:
            raise UsageError(f"{option} {spec!r}: no file after '='")
        return name, Path(file)
    return Path(spec).stem, Path(spec)


def _cutoffs(text: str | None, default: int) -> list[int]:
    return sorted(cutoffs_option(text)) if text else [default]


def _grade_map(text: str) -> GradeMap:
    from raglabel.formats.maps import parse_grade_map

    try:
        return parse_grade_map(text)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


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


def load_inputs(args: argparse.Namespace) -> Loaded:
    _validate_counts(args)
    config = metric_config(args)
    ks = _cutoffs(args.k, config.default_k)
    try:
        metrics = parse_metric_list(args.metrics, ks)
    except MetricNameError as exc:
        raise UsageError(f"--metrics: {exc}") from None
    grade_map = _grade_map(args.grade_map) if args.grade_map else None

    run_specs = [_named(spec, "--run") for spec in args.run]
    names = [name for name, _ in run_specs]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise UsageError(f"two runs are named {dup!r}; name them with --run NAME=FILE")

    backend, answers, labels_source = _open_labels(args, grade_map, [p for _, p in run_specs])
    runs: list[RankedRun] = list(backend.sample_runs)
    if runs and runs[0].name in names:
        raise UsageError(f"the samples run and a --run are both named {runs[0].name!r}")
    for name, path in run_specs:
        runs.append(backend.run_file(name, path))

    if any(key.base == "containment" for key in metrics) and answers is None:
        if args.metrics and "containment" in args.metrics:
            raise UsageError("containment needs passage texts and expected answers: use --samples")
        metrics = [key for key in metrics if key.base != "containment"]

    pools = _pools(args.pool, runs, backend)
    if args.baseline is not None and args.baseline not in {run.name for run in runs}:
        raise UsageError(f"--baseline {args.baseline!r} is not one of the runs")

    labels = backend.labels
    stats = QueryStats.build(labels, config)
    info = LabelsInfo(
        queries=labels.n_queries,
        graded=labels.n_graded,
        fingerprint=backend.fingerprint(),
        source=getattr(backend, "source", "human"),
        grade_inversions=[
            q for q, flag in zip(labels.query_ids, stats.inverted, strict=True) if flag
        ],
    )
    effective_map: GradeLookup = TREC_GRADES if grade_map is None else grade_map
    report_config: dict[str, object] = {
        "k": ks,
        "metrics": [key.name for key in metrics],
        **config.as_dict(),
        "grade_map": "binary list -> 5; map values are grades"
        if args.samples and not args.grade_map
        else effective_map.describe(),
        "pool": {name: pool.name for name, pool in pools.items()},
        "reader": backend.kind,
        "labels": labels_source,
        "resamples": args.resamples,
        "permutations": args.permutations,
        "seed": args.seed,
        "confidence": args.confidence,
    }
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
        answers=answers,
        pools=pools,
    )
    return Loaded(stats, runs, options, info, report_config, backend.warnings)


def _pools(specs: list[str], runs: list[RankedRun], backend: Backend) -> dict[str, RankedRun]:
    by_name = {run.name: run for run in runs}
    pools: dict[str, RankedRun] = {}
    for spec in specs:
        target, sep, source = spec.partition("=")
        if not sep or not target or not source:
            raise UsageError(f"--pool {spec!r}: expected NAME=RUN (a run name or a run file)")
        if target not in by_name:
            raise UsageError(f"--pool {spec!r}: no run is named {target!r}")
        if source in by_name:
            pools[target] = by_name[source]
        elif Path(source).exists():
            pools[target] = backend.run_file(f"{Path(source).stem} (pool)", Path(source))
        else:
            raise UsageError(f"--pool {spec!r}: {source!r} is neither a run name nor a file")
    return pools
