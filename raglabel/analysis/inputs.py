"""From a parsed evaluation request to what :func:`~raglabel.analysis.evaluation.evaluate`
takes: the source opened, the runs aligned, the report's config written down.

The command line fills an :class:`EvalRequest` from its files and options, the Python
API from dicts and DataFrames (:mod:`raglabel.analysis.memory`); nothing here knows
about argparse, and :func:`raglabel.analysis.entry.evaluate_request` takes it from there.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from raglabel.analysis import checks
from raglabel.analysis.evaluation import Options, headline_metric
from raglabel.analysis.sources import ProjectSource, SampleSource, Source, open_files
from raglabel.errors import InputError, UsageError
from raglabel.formats.maps import GradeMap
from raglabel.formats.notices import sample
from raglabel.formats.option_words import OPTION_WORDS
from raglabel.formats.report import LabelsInfo
from raglabel.metrics.config import MetricConfig
from raglabel.metrics.cutoffs import own_cutoffs, own_k_note, with_own_cutoffs
from raglabel.metrics.definitions import definitions
from raglabel.metrics.evaluate import QueryStats
from raglabel.metrics.run import RankedRun

if TYPE_CHECKING:
    from raglabel.analysis.answers import AnswerOptions
    from raglabel.analysis.judge_share import JudgeShares
    from raglabel.analysis.memory import MemoryInputs
    from raglabel.storage.labels import LabelChoice


# Plain classes, not dataclasses: nothing compares or prints them, and a dataclass's
# generated code is compiled when its module is imported, at every eval's start-up.
class EvalRequest:
    """Where the labels and runs are, and how to evaluate them. Exactly one of
    ``project``, ``qrels``, ``samples`` and ``memory`` names the labels (``memory``: the
    labels and every run, as tables held in memory or as files). ``options`` holds the
    metrics and statistics asked for; loading adds what the inputs decide (which
    queries have answers, the pools) and drops containment where nothing can have it.
    ``answers`` asks for a project's answer systems too (``answer_systems``: only
    these; all when empty); ``metric_names`` is the metric
    list as typed (its names are explained where another tool reads them otherwise)."""

    __slots__ = (
        "answer_systems",
        "answers",
        "choice",
        "config",
        "containment_named",
        "cutoffs",
        "cutoffs_given",
        "grade_map",
        "memory",
        "metric_names",
        "options",
        "pools",
        "project",
        "qrels",
        "reader",
        "runs",
        "samples",
    )

    def __init__(
        self,
        *,
        options: Options,
        cutoffs: list[int],
        config: MetricConfig,
        runs: list[tuple[str, Path]] | None = None,
        qrels: Path | None = None,
        samples: tuple[str, Path] | None = None,
        project: Path | None = None,
        choice: LabelChoice | None = None,
        grade_map: GradeMap | None = None,
        reader: str = "auto",
        containment_named: bool = False,
        pools: list[str] | None = None,
        memory: MemoryInputs | None = None,
        answers: AnswerOptions | None = None,
        answer_systems: list[str] | None = None,
        metric_names: str | None = None,
        cutoffs_given: bool = False,
    ) -> None:
        self.options = options
        self.cutoffs = cutoffs
        self.config = config
        self.runs: list[tuple[str, Path]] = [] if runs is None else runs
        self.qrels = qrels
        self.samples = samples
        self.project = project
        self.choice = choice  # which grades of a project
        self.grade_map = grade_map
        self.reader = reader
        self.containment_named = containment_named  # asked for by name, not only in a group
        self.pools: list[str] = [] if pools is None else pools  # NAME=RUN or NAME=FILE
        self.memory = memory
        self.answers = answers
        self.answer_systems: list[str] = [] if answer_systems is None else answer_systems
        self.metric_names = metric_names
        self.cutoffs_given = cutoffs_given


class Loaded:
    """What :func:`load` hands to the evaluation: the runs aligned with the label
    statistics, the options the inputs settled, the report's labels and config, and the
    warnings so far; with ``--fill-with-judge``, how much of each run's top K the judge
    labelled (``judge_shares``)."""

    __slots__ = ("config", "judge_shares", "labels_info", "options", "runs", "stats", "warnings")

    def __init__(
        self,
        *,
        stats: QueryStats,
        runs: list[RankedRun],
        options: Options,
        labels_info: LabelsInfo,
        config: dict[str, object],
        warnings: list[str],
        judge_shares: JudgeShares | None = None,
    ) -> None:
        self.judge_shares = judge_shares
        self.stats = stats
        self.runs = runs
        self.options = options
        self.labels_info = labels_info
        self.config = config
        self.warnings = warnings


def open_source(request: EvalRequest) -> tuple[Source, str]:
    """The request's labels, and how the report names where they came from."""
    if request.project is not None:
        from raglabel.storage.labels import LabelChoice

        choice = request.choice or LabelChoice("median", None, False)
        return ProjectSource(request.project, choice), str(request.project)
    if request.memory is not None:
        from raglabel.analysis.memory import MemorySource

        return MemorySource(request.memory, request.grade_map), request.memory.labels_name
    if request.samples is not None:
        name, path = request.samples
        threshold = request.config.relevance_threshold
        return SampleSource(name, path, request.grade_map, threshold), str(path)
    if request.qrels is None:
        raise UsageError("nothing to evaluate: give a project DB, --qrels with --run, or --samples")
    paths = [path for _, path in request.runs]
    return open_files(request.qrels, request.grade_map, paths, request.reader), str(request.qrels)


def load(request: EvalRequest) -> Loaded:
    names = [name for name, _ in request.runs]
    if request.memory is not None:
        names += [name for name, _ in request.memory.runs]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise UsageError(f"two runs are named {dup!r}; name them with --run NAME=FILE")

    if request.project is not None and request.grade_map is not None:
        # A project's grades are 1-5 already (its imports mapped their labels): a map
        # here would change nothing, yet the report would print it as a convention used.
        raise UsageError(
            f"{OPTION_WORDS.get()('grade-map', None)} applies to labels read from files"
            " (--qrels, --samples); a project's grades are 1-5 already, mapped when they"
            " came in (raglabel import --grade-map): drop it"
        )
    source, labels_source = open_source(request)
    runs: list[RankedRun] = list(source.own_runs())
    if request.samples is not None and runs[0].name in names:
        raise UsageError(f"the samples run and a --run are both named {runs[0].name!r}")
    for name, path in request.runs:
        try:
            runs.append(source.run_file(name, path))
        except InputError as exc:
            hint = checks.run_file_hint(path)
            if hint is None:
                raise
            raise InputError(exc.source, f"{exc.message} ({hint})", exc.line) from None

    asked = request.options
    metrics = list(asked.metrics)
    answers = source.answers()
    if any(key.base == "containment" for key in metrics) and answers is None:
        if request.containment_named:
            raise UsageError("containment needs passage texts and expected answers: use --samples")
        metrics = [key for key in metrics if key.base != "containment"]
    # A query's own k (a sample's metadata.k) gets columns named for it.
    own_k = own_cutoffs(runs, source.labels.query_ids)
    own_k_words = own_k_note(own_k, metrics)
    metrics, own_k_only = with_own_cutoffs(metrics, own_k)

    names = [key.name for key in metrics]
    # Worded as the door that asked names it: --headline, or headline= in Python.
    option = OPTION_WORDS.get()
    if asked.headline is not None and asked.headline not in names:
        raise UsageError(
            f"{option('headline', None)} {asked.headline!r} is not among the metrics computed:"
            f" {', '.join(names)}"
        )
    pools = _pools(request.pools, runs, source)
    if asked.baseline is not None and asked.baseline not in {run.name for run in runs}:
        known = ", ".join(repr(run.name) for run in runs)
        raise UsageError(
            f"{option('baseline', None)} {asked.baseline!r} is not one of the runs: {known}"
        )

    labels = source.labels
    stats = QueryStats.build(labels, request.config)
    warnings = source.warnings
    if isinstance(source, ProjectSource) and source.ungraded:
        warnings.append(ungraded_line(source.ungraded, source.project_queries))
    qrels_file = request.qrels
    if request.memory is not None and isinstance(request.memory.labels, Path):
        qrels_file = request.memory.labels
    if qrels_file is not None:
        hint = checks.qrels_file_hint(qrels_file)
        if hint:
            warnings.append(hint)
    default_map = request.grade_map is None and request.project is None
    warnings += checks.label_warnings(stats, default_map=default_map and not request.samples)
    paths = dict(request.runs)
    if request.memory is not None:
        paths |= request.memory.run_paths()
    for run in runs:
        warnings += checks.run_warnings(stats, run, paths.get(run.name))
    warnings += checks.depth_notes([key.k for key in metrics if key.k], runs, stats)
    warnings += own_k_words
    if asked.compare and len(runs) < 2:
        warnings.append(f"{option('compare', None)}: there is only one run, so nothing to compare")
    info = LabelsInfo(
        queries=labels.n_queries,
        graded=labels.n_graded,
        fingerprint=source.fingerprint(),
        source=source.source,
        grade_inversions=[
            q for q, flag in zip(labels.query_ids, stats.inverted, strict=True) if flag
        ],
    )
    shares = None
    if (
        request.project is not None
        and request.choice is not None
        and request.choice.fill_with_judge
    ):
        from raglabel.analysis.judge_share import judge_shares

        shares = judge_shares(
            request.project, request.choice, request.runs, request.cutoffs, info.fingerprint
        )
        warnings += shares.warnings()
    options = replace(asked, metrics=metrics, answers=answers, pools=pools, own_k_only=own_k_only)
    grade_map = GradeMap() if request.grade_map is None else request.grade_map
    report_config: dict[str, object] = {
        "k": request.cutoffs,
        "metrics": [key.name for key in metrics],
        **request.config.as_dict(),
        "grade_map": "binary list -> 5; map values are grades"
        if request.samples is not None and request.grade_map is None
        else grade_map.describe(),
        "pool": {name: pool.name for name, pool in pools.items()},
        **({"query_k": own_k} if own_k else {}),
        "reader": source.kind,
        "labels": labels_source,
        "resamples": asked.resamples,
        "permutations": asked.permutations,
        "seed": asked.seed,
        "confidence": asked.level,
        "na": asked.na,
        "judged_only": asked.judged_only,
        "adjust": asked.adjust,
        # Whose tests are the headline family of p-values: said only where there are tests.
        **({"headline": headline_metric(options)} if asked.compare and len(runs) > 1 else {}),
        "definitions": definitions(metrics, request.config),
    }
    return Loaded(
        stats=stats,
        runs=runs,
        options=options,
        labels_info=info,
        config=report_config,
        warnings=warnings,
        judge_shares=shares,
    )


def ungraded_line(ungraded: list[str], queries: int) -> str:
    """The one line a project gives for its queries with no grade yet (no run warns of
    them again): they are in no metric until someone grades them."""
    return (
        f"{len(ungraded)} of {queries} queries not graded yet ({sample(ungraded)}):"
        " every metric leaves them out until they are graded"
    )


def _pools(specs: list[str], runs: list[RankedRun], source: Source) -> dict[str, RankedRun]:
    by_name = {run.name: run for run in runs}
    pools: dict[str, RankedRun] = {}
    for spec in specs:
        target, sep, origin = spec.partition("=")
        if not sep or not target or not origin:
            raise UsageError(f"--pool {spec!r}: expected NAME=RUN (a run name or a run file)")
        if target not in by_name:
            raise UsageError(f"--pool {spec!r}: no run is named {target!r}")
        if origin in by_name:
            pools[target] = by_name[origin]
        elif Path(origin).exists():
            pools[target] = source.run_file(f"{Path(origin).stem} (pool)", Path(origin))
        else:
            raise UsageError(f"--pool {spec!r}: {origin!r} is neither a run name nor a file")
    return pools
