"""``raglabel.evaluate``: an evaluation from Python, beside the ``eval`` command.

Inputs in the shapes peers take (pytrec_eval's dict of dicts, a TREC file, a pandas or
polars DataFrame with ir_measures' or ranx's column names) become an
:class:`~raglabel.analysis.inputs.EvalRequest`: dicts and frames as tables in memory
(:mod:`raglabel.api.tables`), files as paths. The request goes to the one evaluation
entry, :func:`raglabel.analysis.entry.evaluate_request`, which ``raglabel eval`` calls
too: the numbers, the conventions, the checks and the warnings are one code's. Nothing
is written to disk, no command line is built, and nothing here imports the CLI.
"""

from __future__ import annotations

import numbers
import operator
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, SupportsIndex, cast

import numpy as np

from raglabel.analysis.bounds import resampling_problem
from raglabel.analysis.evaluation import Options
from raglabel.analysis.inputs import EvalRequest
from raglabel.analysis.memory import MemoryInputs, RunTable
from raglabel.api.report import Report
from raglabel.api.tables import is_frame, is_path, label_table, run_table
from raglabel.api.warn import warn
from raglabel.api.words import keyword_errors
from raglabel.errors import InputError
from raglabel.formats.maps import GradeMap
from raglabel.metrics.config import MetricConfig

__all__ = ["Report", "evaluate"]

DEFAULT_RUN = "run"

NA = ("skip", "zero")
ADJUST = ("none", "holm", "bh")
READERS = ("auto", "python", "polars")


def evaluate(
    qrels: object,
    runs: object,
    *,
    metrics: str | Iterable[str] | None = None,
    k: int | Iterable[int] | None = None,
    na: Literal["skip", "zero"] = "skip",
    judged_only: bool = False,
    ci: bool = False,
    compare: bool = False,
    baseline: str | None = None,
    adjust: Literal["none", "holm", "bh"] = "holm",
    resamples: int = 1000,
    permutations: int = 10_000,
    seed: int = 42,
    confidence: float = 0.95,
    grade_map: str | Mapping[int, int] | None = None,
    gain_map: str | Mapping[int, float] | None = None,
    relevance_threshold: int | None = None,
    harm_threshold: int | None = None,
    alpha: float | None = None,
    cap4: float | None = None,
    cap3: float | None = None,
    ctx_threshold: float | None = None,
    config: str | Path | None = None,
    pool: Mapping[str, str | Path] | None = None,
    reader: Literal["auto", "python", "polars"] = "auto",
) -> Report:
    """Evaluate ``runs`` against ``qrels`` with the conventions and numbers of
    ``raglabel eval``.

    ``qrels``: ``{qid: {docid: relevance}}``, a qrels file path, or a DataFrame with a
    query, a document and a relevance column. ``runs``: one run (``{qid: {docid:
    score}}``, a TREC run file path, or a DataFrame with a score column), named
    ``run``, or a mapping of names to runs. Per-query values are always computed.

    Each keyword is the ``eval`` option of the same name (``--judged-only`` is
    ``judged_only``):

    - ``metrics``: names or groups, a comma-separated text or a list (default: all);
      ``k``: a cutoff or a list of them (default: 5).
    - ``na``: ``"skip"`` leaves a query where a metric is undefined out of its mean,
      ``"zero"`` counts it as 0 (trec_eval's way). ``judged_only``: drop unjudged
      passages before the classic metrics (trec_eval ``-J``).
    - ``ci``: bootstrap intervals (``resamples`` draws, level ``confidence``);
      ``compare``: paired randomization tests (``permutations`` draws) of every pair of
      runs, or of each run against ``baseline``, p-values adjusted by ``adjust``
      (``"holm"``, ``"bh"`` or ``"none"``); ``seed`` seeds all resampling.
    - ``grade_map``: how labels become grades 1-5 (``"0:2,1:5"`` or ``{0: 2, 1: 5}``;
      default ``0:2,1:3,2:4,3:5``, negative -> 1); ``gain_map``: nDCG gain per grade
      (``"3:1,4:2,5:3"`` or a dict); ``relevance_threshold`` and ``harm_threshold``:
      grades 1-5; ``alpha``, ``cap4``, ``cap3``: the rarity weights' settings;
      ``ctx_threshold``: ctx_rank_prec's pass mark, 0-100; ``config``: a TOML file
      with a ``[metrics]`` table of these conventions (keywords override it).
    - ``pool``: ``{run: other}`` scores PROC of ``run`` against ``other`` (a run's
      name or a run file) as its retrieval pool.
    - ``reader``: which reader parses files when every input is a file (``"auto"``
      picks by size); tables in memory are never parsed.

    An unknown keyword is a ``TypeError``. A bad value or input is a ``ValueError``
    that names the keyword (or the table, query and passage) and what is allowed.
    Each warning ``raglabel eval`` would print is a ``RaglabelWarning``, its fix
    worded as this function's keyword (``grade_map="0:2,1:5"``).
    """
    named = _named_runs(runs)
    ks, asked_metrics, metric_config = _metrics_and_config(
        metrics,
        k,
        {
            "relevance_threshold": relevance_threshold,
            "harm_threshold": harm_threshold,
            "alpha": alpha,
            "cap4": cap4,
            "cap3": cap3,
            "ctx_threshold": ctx_threshold,
        },
        gain_map,
        config,
    )
    options = Options(
        metrics=asked_metrics[1],
        per_query=True,
        ci=_flag("ci", ci),
        compare=_flag("compare", compare),
        baseline=_optional_text("baseline", baseline),
        resamples=_integer("resamples", resamples),
        permutations=_integer("permutations", permutations),
        seed=_integer("seed", seed),
        level=_real("confidence", confidence),
        na=_choice("na", na, NA),
        judged_only=_flag("judged_only", judged_only),
        adjust=_choice("adjust", adjust, ADJUST),
    )
    problem = resampling_problem(resamples, permutations, seed, options.level)
    if problem is not None:
        name, rule = problem
        given = {"resamples": resamples, "permutations": permutations, "seed": seed}
        raise ValueError(f"{name}={given.get(name, confidence)!r}: {rule}")
    request = EvalRequest(
        options=options,
        cutoffs=ks,
        config=metric_config,
        grade_map=_grade_map(grade_map),
        reader=_choice("reader", reader, READERS),
        containment_named=asked_metrics[0] is not None and "containment" in asked_metrics[0],
        pools=_pools(pool, named),
        metric_names=asked_metrics[0],
        cutoffs_given=k is not None,
    )
    if is_path(qrels) and all(is_path(run) for run in named.values()):
        # Files only: the very request ``eval --qrels F --run NAME=F`` makes.
        request.qrels = _file("qrels", qrels)
        request.runs = [(name, _file(f"runs[{name!r}]", run)) for name, run in named.items()]
        labels_name = request.qrels.name
    else:
        labels = _file("qrels", qrels) if is_path(qrels) else label_table(qrels)
        tables: list[tuple[str, RunTable | Path]] = [
            (name, _file(f"runs[{name!r}]", run) if is_path(run) else run_table(run, name))
            for name, run in named.items()
        ]
        request.memory = MemoryInputs(labels, tables)
        labels_name = labels.name  # the file's name, or dict, polars DataFrame, ...
    from raglabel.analysis.entry import evaluate_request

    with keyword_errors():
        done = evaluate_request(request)
    warn(done.warnings)
    source = f"qrels {labels_name}; runs {', '.join(named)}"
    return Report(done.report, request, source)


def _named_runs(runs: object) -> dict[str, object]:
    """One run, or a mapping of names to runs (a run being a dict, a path or a frame)."""
    if isinstance(runs, Mapping) and not _is_run_dict(runs):
        named = {str(name): run for name, run in runs.items()}
        if len(named) != len(runs):
            raise ValueError("runs: two runs have names that read the same as text")
        if not named:
            raise ValueError("runs: no run given")
        return named
    return {DEFAULT_RUN: runs}


def _is_run_dict(value: Mapping[Any, Any]) -> bool:
    """``{qid: {docid: score}}`` rather than ``{name: run}``: the first entry's value is
    a mapping whose first value is no run (a mapping, a frame or a path). One entry
    decides: a hundred thousand checked one by one took longer than evaluating them."""
    for docs in value.values():
        if not isinstance(docs, Mapping):
            return False
        for score in docs.values():
            return not (isinstance(score, Mapping) or is_frame(score) or is_path(score))
    # Only queries with no entries: a run (whose emptiness is its error), not a name.
    return True


def _file(keyword: str, value: object) -> Path:
    path = Path(value)  # type: ignore[arg-type]  # is_path said str or Path
    if path.is_dir():
        raise ValueError(f"{keyword}: {str(path)!r} is a folder, not a file")
    return path


def _metrics_and_config(
    metrics: str | Iterable[str] | None,
    k: int | Iterable[int] | None,
    conventions: dict[str, object],
    gain_map: str | Mapping[int, float] | None,
    config: str | Path | None,
) -> tuple[list[int], tuple[str | None, list[Any]], MetricConfig]:
    """The cutoffs, the metric list (as typed and parsed) and the conventions."""
    from raglabel.metrics.config import ConfigError
    from raglabel.metrics.names import (
        MAX_CUTOFF,
        MetricNameError,
        parse_cutoff,
        parse_metric_list,
    )

    fields: dict[str, object] = {}
    if config is not None:
        from raglabel.config.metric_file import load_config_fields

        if not is_path(config):
            raise ValueError(f"config={config!r}: the path of a TOML file")
        try:
            fields.update(load_config_fields(_file("config", config)))
        except InputError as exc:
            raise ValueError(str(exc)) from None
    for name, value in conventions.items():
        if value is not None:
            fields[name] = _integer(name, value) if _is_integer(value) else _real(name, value)
    if gain_map is not None:
        from raglabel.formats.maps import parse_gain_map

        gains = _map_text("gain_map", gain_map)
        try:
            fields["gain_map"] = parse_gain_map(gains)
        except ValueError as exc:
            raise ValueError(_reworded("gain_map", gain_map, exc)) from None
    try:
        metric_config = MetricConfig.from_fields(fields)
    except ConfigError as exc:
        raise ValueError(f"{exc.field or 'conventions'}: {exc.message}") from None
    if k is None:
        ks = [metric_config.default_k]
        if ks[0] > MAX_CUTOFF:  # a config file's default_k, as eval --config refuses it
            raise ValueError(f"config: default_k {ks[0]} is too large (at most 2**63 - 1)")
    else:
        given: list[object] = (
            [k] if _is_integer(k) else list(cast(Iterable[object], k)) if _iterable(k) else [k]
        )
        ks = []
        for cutoff in given:
            if not _is_integer(cutoff):
                raise ValueError(f"k={k!r}: a positive integer or a list of them")
            try:
                ks.append(parse_cutoff(str(operator.index(cast(SupportsIndex, cutoff)))))
            except ValueError as exc:
                raise ValueError(f"k={k!r}: {exc}") from None
        if not ks:
            raise ValueError("k=[]: give at least one cutoff, or leave k out (default: 5)")
        ks = sorted(set(ks))
    text: str | None
    if metrics is None:
        text = None
    elif isinstance(metrics, str):
        text = metrics
    elif _iterable(metrics) and all(isinstance(m, str) for m in metrics):
        text = ",".join(metrics)
    else:
        raise ValueError(f"metrics={metrics!r}: a comma-separated text or a list of names")
    try:
        keys = parse_metric_list(text, ks)
    except MetricNameError as exc:
        raise ValueError(f"metrics: {exc}") from None
    return ks, (text, keys), metric_config


def _iterable(value: object) -> bool:
    return isinstance(value, Iterable) and not isinstance(value, (str, bytes))


def _grade_map(value: str | Mapping[int, int] | None) -> GradeMap | None:
    if value is None:
        return None
    from raglabel.formats.maps import parse_grade_map

    text = _map_text("grade_map", value)
    try:
        return parse_grade_map(text)
    except ValueError as exc:
        raise ValueError(_reworded("grade_map", value, exc)) from None


def _map_text(keyword: str, value: object) -> str:
    """A map as its text (``"0:2,1:5"``), a dict of numbers written as one."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return ",".join(f"{key}:{target}" for key, target in value.items())
    raise ValueError(f'{keyword}={value!r}: a text such as "0:2,1:5" or a dict such as {{0: 2}}')


def _reworded(keyword: str, value: object, exc: ValueError) -> str:
    """The map parser's message (written for ``--grade-map``) about the keyword."""
    message = str(exc)
    prefix = "--" + keyword.replace("_", "-") + ": "
    return f"{keyword}={value!r}: {message.removeprefix(prefix)}"


def _pools(pool: Mapping[str, str | Path] | None, named: dict[str, object]) -> list[str]:
    """``{run: other}`` as the request's ``NAME=RUN`` pairs, each checked here."""
    if pool is None:
        return []
    if not isinstance(pool, Mapping):
        raise ValueError(f"pool={pool!r}: a dict {{run name: run name or run file}}")
    pairs = []
    for target, origin in pool.items():
        if target not in named:
            raise ValueError(f"pool: {target!r} is not one of the runs: {', '.join(named)}")
        if not is_path(origin) or (str(origin) not in named and not Path(origin).is_file()):
            raise ValueError(f"pool[{target!r}]: {origin!r} is neither a run's name nor a file")
        pairs.append(f"{target}={origin}")
    return pairs


def _flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name}={value!r}: True or False")
    return value


def _is_integer(value: object) -> bool:
    """A whole number of any kind (``int``, ``numpy.int64``: what arrays hand out), never a
    truth value, which Python and numpy also count as numbers."""
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _is_real(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _integer(name: str, value: object) -> int:
    if not _is_integer(value):
        raise ValueError(f"{name}={value!r}: an integer")
    return operator.index(cast(SupportsIndex, value))


def _real(name: str, value: object) -> float:
    if not _is_real(value):
        raise ValueError(f"{name}={value!r}: a number")
    return float(cast(float, value))


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> Any:
    if value not in allowed:
        raise ValueError(f"{name}={value!r}: one of {', '.join(map(repr, allowed))}")
    return value


def _optional_text(name: str, value: object) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{name}={value!r}: a run's name")
    return value
