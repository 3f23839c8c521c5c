"""``eval --estimate judge|corrected``: a project's runs scored on the judge's labels, or
judge-corrected by people's labels on the audit sample (issue 29).

``judge`` is the ordinary evaluation on the judge's grade of every pair it graded (the
lower median over models' latest suggestions, as ``agree`` and ``--fill-with-judge``
resolve them), no person's grade in it.

``corrected`` runs the ordinary evaluation twice, each query's values kept: on the judge's
labels, whose values on every query the stored runs cover are f, and on people's labels,
whose values on the complete drawn queries are h (g: the judge's there). For each run and
metric, and each paired difference ``--compare`` makes, it hands them to
:func:`~raglabel.metrics.judge_corrected.judge_corrected`, which holds the estimator and
its assumptions. Drawn queries that are not complete are left out and named: the estimate
stays valid only if what kept them incomplete has nothing to do with their labels.
"""

from __future__ import annotations

import copy
import hashlib
import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from raglabel.analysis.entry import Evaluated, evaluate_request
from raglabel.analysis.evaluation import comparison_pairs, headline_metric
from raglabel.analysis.inputs import ungraded_line
from raglabel.errors import UsageError
from raglabel.formats.notices import sample
from raglabel.formats.report import (
    Comparison,
    CorrectedComparison,
    EstimateInfo,
    Figure,
    Figures,
    LabelsInfo,
    Report,
    RunReport,
)
from raglabel.metrics import table
from raglabel.metrics.judge_corrected import MIN_DRAWN, Corrections, judge_corrected
from raglabel.metrics.names import lower_is_better
from raglabel.metrics.stats import adjust_families

if TYPE_CHECKING:
    import sqlite3

    from raglabel.analysis.inputs import EvalRequest
    from raglabel.metrics.judge_corrected import Estimate
    from raglabel.storage.audit import Audit

FloatArray = NDArray[np.float64]

#: Metrics whose run-level value is a ratio of means, not a mean of per-query values:
#: the corrected estimator is for means, so they are left out of it.
RATIO_METRICS = frozenset({"pct_proc"})
INCOMPLETE_NOTE = "valid only if whatever kept them incomplete has nothing to do with their labels"


class EstimateRefusedError(UsageError):
    """The project lacks what the estimate stands on (judge labels, a draw, enough
    complete drawn queries). Besides the full message, ``reason`` and ``fix`` (the
    command or step that supplies it) are short enough for one line of the app."""

    def __init__(self, message: str, *, reason: str, fix: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.fix = fix


def estimate_request(request: EvalRequest, kind: str) -> Evaluated:
    """The report of ``eval --estimate kind`` (``judge`` or ``corrected``)."""
    if kind not in ("judge", "corrected"):
        raise ValueError(f"unknown estimate {kind!r}")
    _check_request(request, kind)
    assert request.project is not None
    from raglabel.storage.project import Project

    with Project.open_read(request.project) as project:
        conn = project.conn
        _require_judge_labels(conn, request)
        if kind == "corrected":
            from raglabel.storage.items import query_ids

            sample_state = _audit_sample(conn, request)
            project_queries = query_ids(conn)
        gaps = _judge_gaps(conn, request)
    if kind == "corrected":
        done = _corrected(request, sample_state, project_queries)
    else:
        done = evaluate_request(_judge_request(request))
        done.report.estimate = EstimateInfo("judge", population=done.report.labels.queries)
    if gaps is not None:
        done.warnings.append(gaps)
        if done.report.warnings is not done.warnings:  # the JSON report says it too
            done.report.warnings.append(gaps)
    return done


def _judge_gaps(conn: sqlite3.Connection, request: EvalRequest) -> str | None:
    """How many of the stored runs' top-K entries (K the deepest cutoff in use) the
    judge gave no label, on the queries it labelled at all (a query it labelled nothing
    of is left out of its figures, and said so elsewhere); None when it labelled them
    all. Its figures count such a passage as not relevant, as people's count a passage
    nobody graded, but the judge could have graded it for the asking."""
    from raglabel.storage.labels import LabelChoice, resolved_labels
    from raglabel.storage.runs import ranked_ids, run_names

    qrels = resolved_labels(conn, LabelChoice(judge_only=True)).qrels
    labelled = set(zip(qrels.qids, qrels.docids, strict=True))
    judged = set(qrels.qids)
    depth = _depth(request)
    entries = missing = 0
    for name in run_names(conn):
        for qid, ids in ranked_ids(conn, name):
            if qid in judged:
                top = ids[:depth]  # stored rankings hold each passage once (import)
                entries += len(top)
                missing += sum((qid, pid) not in labelled for pid in top)
    if not missing:
        return None
    return (
        f"{missing:,} of the stored runs' {entries:,} top-{depth} entries"
        f" ({missing / entries:.0%}) on the queries the judge labelled have no judge label"
        " and count as not relevant in the judge's figures; fill them with `raglabel judge"
        f" {request.project}`"
    )


def report_estimate(request: EvalRequest) -> Report | EstimateRefusedError | None:
    """For ``raglabel report`` on a project: the judge-corrected evaluation of the
    report's metrics and comparisons; when the project has a draw but not the rest of
    what the estimate needs, the refusal that says so; None without a draw (or without
    a project), where the report has nothing to say about it."""
    if request.project is None:
        return None
    from raglabel.storage.audit import draws
    from raglabel.storage.project import Project

    with Project.open_read(request.project) as project:
        if not draws(project.conn):
            return None
    if request.runs:
        return EstimateRefusedError(
            f"{request.project}: the judge-corrected estimate reads the stored runs only,"
            " and this report has run files beside them: store them with `raglabel import"
            f" {request.project} --run NAME=FILE`",
            reason="run files beside the project",
            fix=f"raglabel import {request.project} --run NAME=FILE",
        )
    from raglabel.storage.labels import LabelChoice

    asked = copy.copy(request)
    # The page's own evaluation may be filled with the judge or carry per-query values
    # and answers: the corrected one stands on people's grades alone and has neither.
    asked.options = replace(request.options, per_query=False)
    asked.answers = None
    choice = request.choice
    # Everyone's grades, whatever annotator the page shows: the audit counts a drawn
    # query complete on any person's grades (see _check_request).
    asked.choice = None if choice is None else LabelChoice(choice.policy)
    try:
        report = estimate_request(asked, "corrected").report
    except EstimateRefusedError as refused:
        return refused
    if choice is not None and choice.annotator is not None:
        report.warnings.append(
            f"the judge-corrected estimate stands on every person's grades, not on"
            f" annotator {choice.annotator!r}'s alone: a drawn query is complete on any"
            " person's grades"
        )
    return report


def _check_request(request: EvalRequest, kind: str) -> None:
    if request.project is None:
        raise UsageError(
            f"--estimate {kind} needs a project DB (its judge labels"
            f"{' and audit sample' if kind == 'corrected' else ''}): raglabel eval DB"
            f" --estimate {kind}"
        )
    choice = request.choice
    if choice is not None and choice.fill_with_judge:
        raise UsageError(
            f"--fill-with-judge goes with --estimate human only: --estimate {kind} uses the"
            " judge's labels already"
        )
    if choice is not None and choice.annotator is not None:
        raise UsageError(
            "--annotator goes with --estimate human only: judge has no grades of people"
            if kind == "judge"
            else "--annotator goes with --estimate human only: the audit counts a drawn"
            " query complete on any person's grades, so one annotator's alone would count"
            " the passages they did not grade as not relevant in the corrected estimate"
        )
    if request.runs:
        # Completeness and the judge's gaps are read from the stored runs: a file's
        # top-K passages nobody graded would count as not relevant unseen.
        raise UsageError(
            f"--run goes with --estimate human only: --estimate {kind} reads the project's"
            f" stored runs; store the run first with `raglabel import {request.project}"
            " --run NAME=FILE`"
        )
    if kind == "corrected":
        if request.options.per_query:
            raise UsageError(
                "--per-query goes with --estimate human or judge: the corrected estimate"
                " has no value per query"
            )
        if request.answers is not None:
            raise UsageError("--answers goes with --estimate human or judge")


def _require_judge_labels(conn: sqlite3.Connection, request: EvalRequest) -> None:
    from raglabel.storage.suggestions import any_suggestion

    if not any_suggestion(conn):
        raise EstimateRefusedError(
            f"{request.project}: no judge labels: grade with `raglabel judge"
            f" {request.project}` or bring them with `raglabel import {request.project}"
            " --judgments MODEL=FILE`",
            reason="no judge labels",
            fix=f"raglabel judge {request.project}",
        )


def _judge_request(request: EvalRequest) -> EvalRequest:
    """``request`` with the judge's labels in place of people's."""
    from raglabel.storage.labels import LabelChoice

    judged = copy.copy(request)
    judged.choice = LabelChoice(judge_only=True)
    return judged


@dataclass(frozen=True)
class _Sample:
    """The audit sample as the corrected estimate reads it."""

    population: list[str]  # the queries the stored runs cover, in id order
    drawn: int
    complete: list[str]  # in draw order
    incomplete: list[str]
    depth: int
    uncovered: list[str]  # drawn queries no stored run covers any more
    accepted_only: int  # pairs waiting only because people's grades accepted the judge's


def _sample_notes(state: Audit) -> str:
    """What the audit leaves out beyond ungraded passages, for the refusal and warnings:
    accepted suggestions (the judge's grade again, never people's check of it) and drawn
    queries no stored run covers any more (outside the population)."""
    notes = ""
    if state.accepted_only:
        notes += (
            f"; {state.accepted_only} pairs of the drawn queries are graded only by accepting"
            " the judge's suggestion, which completes nothing: grade them yourself"
        )
    if state.uncovered:
        notes += (
            f"; {len(state.uncovered)} drawn queries no stored run covers any more"
            f" ({sample(list(state.uncovered))}) are left out of the sample"
        )
    return notes


def _depth(request: EvalRequest) -> int:
    """The deepest cutoff of the metrics asked for: a drawn query is complete when a
    person graded every passage a stored run ranks within it."""
    cuts = [key.k for key in request.options.metrics if key.k is not None]
    return max(cuts or request.cutoffs)


def _audit_sample(conn: sqlite3.Connection, request: EvalRequest) -> _Sample:
    from raglabel.metrics.judge_corrected import TooFewDrawnError
    from raglabel.storage.audit import audit, covered_queries

    depth = _depth(request)
    state = audit(conn, depth)
    if not state.draws:
        raise EstimateRefusedError(
            f"{request.project}: no audit sample: draw queries for people to grade in full"
            f" with `raglabel audit {request.project} --sample N` (40 or more is a good"
            " start), grade them, then estimate",
            reason="no audit sample",
            fix=f"raglabel audit {request.project} --sample 40",
        )
    covered = covered_queries(conn)
    if len(state.complete) < MIN_DRAWN:
        missing = MIN_DRAWN - len(state.complete)
        left = len(set(covered) - {qid for d in state.draws for qid in d.drawn})
        raise EstimateRefusedError(
            f"{TooFewDrawnError(len(state.complete), MIN_DRAWN)} (complete: every passage a"
            f" stored run ranks within its top {depth} graded by a person, not by accepting"
            f" the judge's suggestion); {state.drawn} drawn"
            f"{_sample_notes(state)}: {_what_next(request, state.incomplete, missing, left)}",
            reason=f"{len(state.complete)} of {state.drawn} drawn queries complete at depth"
            f" {depth}, {MIN_DRAWN} needed",
            fix=_more_complete(request, missing, len(state.incomplete))
            if left or len(state.incomplete) >= missing
            else "use --estimate human or judge: too few queries to draw",
        )
    return _Sample(
        covered,
        state.drawn,
        list(state.complete),
        list(state.incomplete),
        depth,
        list(state.uncovered),
        state.accepted_only,
    )


def _what_next(request: EvalRequest, incomplete: tuple[str, ...], missing: int, left: int) -> str:
    """The refusal's advice: draw more only while undrawn queries are left to draw."""
    if left:
        return (
            f"grade {missing} more in full, or draw more with `raglabel audit"
            f" {request.project} --sample N`"
        )
    waiting = f"; not complete: {sample(list(incomplete))}" if incomplete else ""
    if len(incomplete) >= missing:
        return (
            f"every query the runs cover is drawn, so grade {missing} more of the drawn ones"
            f" in full{waiting}"
        )
    return (
        f"every query the runs cover is drawn, and even with all of them complete there"
        f" would be fewer than {MIN_DRAWN}{waiting}: use --estimate human or judge"
    )


def _more_complete(request: EvalRequest, missing: int, incomplete: int) -> str:
    """What gives ``missing`` more complete drawn queries: grading drawn ones, or a
    further draw first when too few drawn queries wait."""
    if incomplete >= missing:
        return f"grade {missing} more drawn queries in full"
    return (
        f"raglabel audit {request.project} --sample {missing - incomplete}, then grade"
        f" {missing} more drawn queries in full"
    )


class _Values:
    """Each run's per-query values of one evaluation, as arrays over a list of queries."""

    def __init__(self, report: Report, na_zero: bool) -> None:
        self._report = report
        self._na_zero = na_zero

    def column(self, run: str, metric: str, queries: list[str]) -> FloatArray:
        """NaN where the query has no labels, is outside the metric's cutoff (its own
        k), or the metric is undefined there (0 instead under ``--na zero``)."""
        per_query = self._report.runs[run].per_query or {}
        out = np.full(len(queries), np.nan)
        for i, qid in enumerate(queries):
            values = per_query.get(qid)
            if values is None or metric not in values:
                continue
            value = values[metric]
            if value is not None:
                out[i] = value
            elif self._na_zero:
                out[i] = 0.0
        return out


def _corrected(request: EvalRequest, state: _Sample, project_queries: list[str]) -> Evaluated:
    kept = replace(request.options, per_query=True, ci=False, compare=False)
    human_request = copy.copy(request)
    human_request.options = kept
    human = evaluate_request(human_request)
    judge_request = _judge_request(human_request)
    judge = evaluate_request(judge_request)

    report = human.report
    runs = list(report.runs)
    computed = _metric_names(report)
    metrics = [m for m in computed if m.partition("@")[0] not in RATIO_METRICS]
    na_zero = request.options.na == "zero"
    f_values, h_values = _Values(judge.report, na_zero), _Values(report, na_zero)
    population, drawn = state.population, state.complete

    def stacked(values: _Values, queries: list[str]) -> dict[tuple[str, str], FloatArray]:
        return {(r, m): values.column(r, m, queries) for r in runs for m in metrics}

    f_runs = stacked(f_values, population)
    h_runs = stacked(h_values, drawn)
    g_runs = stacked(f_values, drawn)
    pairs = comparison_pairs(runs, request.options) if request.options.compare else []
    columns: list[tuple[str, str, str | None]] = [(r, m, None) for r in runs for m in metrics]
    columns += [(run, m, base) for base, run in pairs for m in metrics]

    def matrix(per_run: dict[tuple[str, str], FloatArray]) -> FloatArray:
        stack = [
            per_run[run, m] if base is None else per_run[run, m] - per_run[base, m]
            for run, m, base in columns
        ]
        return np.column_stack(stack) if stack else np.empty((0, 0))

    f, h, g = matrix(f_runs), matrix(h_runs), matrix(g_runs)
    fixed = judge_corrected(f, h, g, level=request.options.level)

    warnings = _warnings(human, judge, project_queries, state, metrics)
    ratio = [m for m in computed if m not in metrics]
    if ratio:
        warnings.append(
            f"{', '.join(ratio)}: a ratio of means, not a mean of per-query values, so not"
            " estimated judge-corrected; use --estimate human or judge for it"
        )
    warnings += _undefined_notes(fixed, columns, len(drawn), len(population))
    warnings += _no_spread_notes(fixed, columns, h)
    beyond = _out_of_range_note(fixed, columns)
    if beyond is not None:
        warnings.append(beyond)

    reports: dict[str, RunReport] = {}
    for r in runs:
        indices = {m: columns.index((r, m, None)) for m in metrics}
        reports[r] = _run_report(fixed, indices)
    compare = None
    if request.options.compare and len(runs) > 1:
        compare = _comparisons(fixed, columns, h_runs, request)
    judge_labels = judge.report.labels
    human_labels = report.labels
    labels = LabelsInfo(
        queries=len(population),
        graded=judge_labels.graded,
        fingerprint=_joint_fingerprint(judge_labels.fingerprint, human_labels.fingerprint),
        # Each side's own description without its leading "judge: " or "human: ".
        source=(
            f"corrected: judge ({judge_labels.source.partition(': ')[2]}) on"
            f" {len(population)} queries, people ({human_labels.source.partition(': ')[2]})"
            f" on {len(drawn)} complete drawn queries"
        ),
        grade_inversions=human_labels.grade_inversions,
    )
    config = dict(report.config)
    for unused in ("resamples", "permutations", "seed"):  # nothing here resamples
        config.pop(unused, None)
    config["estimate"] = (
        "judge-corrected (prediction-powered, PPI++ power-tuned weight clipped to [0, 1]);"
        " normal intervals and p-values"
    )
    if compare:
        config["headline"] = headline_metric(request.options)
    result = Report(
        labels=labels,
        config=config,
        runs=reports,
        compare=compare,
        warnings=warnings,
        estimate=EstimateInfo(
            "corrected",
            population=len(population),
            drawn=state.drawn,
            complete=len(drawn),
            incomplete=state.incomplete,
            depth=state.depth,
        ),
    )
    return Evaluated(result, warnings, human.loaded_at, judge.labels)


def _joint_fingerprint(judge: str, human: str) -> str:
    """One fingerprint of both label sets: it changes when any grade of either does."""
    digest = hashlib.sha256(f"judge:{judge}\nhuman:{human}".encode()).hexdigest()
    return f"sha256:{digest[:16]}"  # the shape of each label set's own


def _warnings(
    human: Evaluated,
    judge: Evaluated,
    project_queries: list[str],
    state: _Sample,
    metrics: list[str],
) -> list[str]:
    """Both evaluations' warnings once each, without their lines on queries that have no
    labels (the estimate's own lines say which queries it covers), and the sample's."""
    every = set(project_queries)
    lines = {
        ungraded_line(sorted(every - set(done.labels.query_ids)), len(every))
        for done in (human, judge)
    }
    out = [w for w in dict.fromkeys(human.warnings + judge.warnings) if w not in lines]
    unjudged = sorted(set(state.population) - set(judge.labels.query_ids))
    if unjudged:
        out.append(
            f"{len(unjudged)} of {len(state.population)} queries the runs cover have no judge"
            f" label ({sample(unjudged)}): left out of the judge's means; grade them with"
            " `raglabel judge` for an estimate over every query"
        )
    if state.incomplete:
        accepted = (
            f" ({state.accepted_only} of their pairs graded only by accepting the judge's"
            " suggestion, which completes nothing)"
            if state.accepted_only
            else ""
        )
        out.append(
            f"{len(state.incomplete)} of {state.drawn} drawn queries are not complete"
            f" ({sample(state.incomplete)}){accepted} and are left out of the corrected"
            f" estimate: it is {INCOMPLETE_NOTE}"
        )
    if state.uncovered:
        out.append(
            f"{len(state.uncovered)} drawn queries no stored run covers any more"
            f" ({sample(state.uncovered)}) are left out: they are outside the population the"
            " estimate covers"
        )
    deep = [name for name in metrics if reads_beyond_top_k(name)]
    if deep:
        out.append(
            f"{', '.join(deep)}: read labels of passages outside the stored runs' top"
            f" {state.depth} (the depth of completeness): the passages the whole ranking"
            " holds, the ideal ranking, or how many relevant passages the query has. A"
            " complete drawn query need not have people's grades there, and a passage only"
            " the judge graded counts as not relevant in people's figures: people's values"
            " of these metrics there, and so the correction, can differ from what grading"
            " those passages would give"
        )
    return out


#: Metrics whose value at a cutoff still reads labels beyond the top K (the metric
#: table's definitions and the metric spec): an oracle or ideal over every graded
#: passage of the query (ra_nwg, proc, ndcg, ndcg_exp), the retrieval pool, which is
#: the whole ranking (proc), or the number of relevant passages (n_recall_*, recall,
#: recall_all, ap, f1, rprec, bpref).
DEEP_LABEL_METRICS = frozenset(
    {
        "ra_nwg",
        "proc",
        "n_recall_4plus",
        "n_recall_5",
        "recall",
        "recall_all",
        "ndcg",
        "ndcg_exp",
        "ap",
        "rprec",
        "bpref",
        "f1",
    }
)


def reads_beyond_top_k(metric: str) -> bool:
    """Whether ``metric`` (``ndcg@10``) reads labels of passages outside the top K: every
    metric without a cutoff (it reads the whole ranking), and those of
    :data:`DEEP_LABEL_METRICS` at any cutoff."""
    base, _, cut = metric.partition("@")
    return not cut or base in DEEP_LABEL_METRICS


def _metric_names(report: Report) -> list[str]:
    """The metrics the evaluation computed, in the report's order."""
    names = report.config.get("metrics")
    return [str(name) for name in names] if isinstance(names, list) else []


def _undefined_notes(
    fixed: Corrections, columns: list[tuple[str, str, str | None]], drawn: int, population: int
) -> list[str]:
    """Where a metric is undefined on some queries: how many each side left out (the
    core's rule), and which columns have no corrected figure or a constant judge; one
    line per metric and finding, naming the runs and differences it holds for."""
    found: dict[tuple[str, str], list[str]] = {}
    for j, (run, metric, base) in enumerate(columns):
        one = fixed.column(j)
        what = run if base is None else f"{run} - {base}"
        if one.drawn_undefined or one.population_undefined:
            finding = (
                f"undefined on {one.drawn_undefined} of {drawn} complete drawn and"
                f" {one.population_undefined} of {population} population queries, left out"
                " (the estimate is of the mean where it is defined)"
            )
            found.setdefault((metric, finding), []).append(what)
        if one.corrected is None:
            finding = (
                f"no corrected estimate: fewer than {MIN_DRAWN} complete drawn queries where"
                " it is defined under both labels"
            )
            found.setdefault((metric, finding), []).append(what)
        elif one.constant_judge:
            finding = (
                "the judge gives every complete drawn query the same value, which says"
                " nothing of how it tracks people: weight 0, people's mean alone"
            )
            found.setdefault((metric, finding), []).append(what)
    return [f"{metric} ({', '.join(who)}): {finding}" for (metric, finding), who in found.items()]


Bounds = tuple[float, float]


def metric_range(metric: str, difference: bool = False) -> Bounds:
    """The values ``metric`` (``ndcg@10``) can take, or a difference of two runs' can:
    [0, highest] and [-highest, highest], ``highest`` from the metric table."""
    top = table.metric(metric.partition("@")[0]).highest
    return (-top, top) if difference else (0.0, top)


def _no_spread_notes(
    fixed: Corrections, columns: list[tuple[str, str, str | None]], h: FloatArray
) -> list[str]:
    """A line per metric whose corrected interval has no width, naming its runs and
    differences: the values under it do not vary, which is no certainty. When people's
    values on the complete drawn queries are all one number, the line says so."""
    found: dict[tuple[str, str], list[str]] = {}
    for j, (run, metric, base) in enumerate(columns):
        corrected = fixed.column(j).corrected
        if corrected is None or not corrected.no_spread:
            continue
        what = run if base is None else f"{run} - {base}"
        values = h[:, j][~np.isnan(h[:, j])] if h.size else h
        if values.size and np.all(values == values[0]):
            said = "difference" if base is not None else "value"
            cause = f"all {values.size} complete drawn queries have the {said} {values[0]:.3f}"
        else:
            cause = "the values it stands on do not vary"
        found.setdefault((metric, cause), []).append(what)
    return [
        f"{metric} ({', '.join(who)}): {cause}, so its interval has no width: it shows no"
        " spread, not certainty"
        for (metric, cause), who in found.items()
    ]


def _pair(estimate: Estimate | None, bounds: Bounds) -> tuple[float, float] | None:
    """The normal interval cut to the values the metric can take: an end beyond them
    (a mean near 1 with a wide interval) says nothing, and since the true value lies
    within them, the cut interval covers it whenever the whole one did. Both ends are
    held within the range, so an interval lying wholly beyond it (around a corrected
    mean outside the range, :func:`_out_of_range_note`) becomes that end of the range,
    never a backwards pair."""
    if estimate is None:
        return None
    low, high = estimate.ci
    # max/min with the interval's end first keep a NaN end NaN.
    return (min(max(low, bounds[0]), bounds[1]), max(min(high, bounds[1]), bounds[0]))


def _out_of_range_note(
    fixed: Corrections, columns: list[tuple[str, str, str | None]]
) -> str | None:
    """One line naming every corrected mean outside the values its metric (or a
    difference of two runs') can take: people's correction can carry the judge's mean
    past an end. The mean is shown as the estimator gives it; only intervals are cut."""
    found: list[str] = []
    for j, (run, metric, base) in enumerate(columns):
        corrected = fixed.column(j).corrected
        if corrected is None:
            continue
        low, high = metric_range(metric, difference=base is not None)
        if not low <= corrected.mean <= high:
            what = run if base is None else f"{run} - {base}"
            found.append(f"{metric} of {what} ({corrected.mean:.4f}, range [{low:g}, {high:g}])")
    if not found:
        return None
    return (
        f"corrected means outside the values their metric can take: {'; '.join(found)}."
        " Each is the estimator's own figure (the judge's mean plus people's correction),"
        " not clipped; its interval is cut to the range"
    )


def _run_report(fixed: Corrections, indices: dict[str, int]) -> RunReport:
    """One run's figures; every interval cut to its metric's range (:func:`_pair`)."""
    mean: dict[str, float | None] = {}
    ci: dict[str, tuple[float, float] | None] = {}
    valid: dict[str, int] = {}
    lam: dict[str, float | None] = {}
    sides: dict[str, Figures] = {
        side: Figures(mean={}, ci={}, valid={}) for side in ("judge_only", "human_only")
    }
    for metric, j in indices.items():
        one = fixed.column(j)
        corrected = one.corrected
        mean[metric] = None if corrected is None else corrected.mean
        bounds = metric_range(metric)
        ci[metric] = _pair(corrected, bounds)
        valid[metric] = int(fixed.corrected.queries[j])
        lam[metric] = one.lam
        for side, figure, counts in (
            ("judge_only", one.judge_only, fixed.judge_only.queries),
            ("human_only", one.human_only, fixed.human_only.queries),
        ):
            sides[side].mean[metric] = None if figure is None else figure.mean
            sides[side].ci[metric] = _pair(figure, bounds)
            sides[side].valid[metric] = int(counts[j])
    return RunReport(
        mean=mean,
        valid=valid,
        ci=ci,
        lam=lam,
        judge_only=sides["judge_only"],
        human_only=sides["human_only"],
    )


def _comparisons(
    fixed: Corrections,
    columns: list[tuple[str, str, str | None]],
    h_runs: dict[tuple[str, str], FloatArray],
    request: EvalRequest,
) -> list[Comparison | CorrectedComparison]:
    headline = headline_metric(request.options)
    tests: list[Comparison] = []
    for j, (run, metric, base) in enumerate(columns):
        if base is None:
            continue
        one = fixed.column(j)
        a, b = h_runs[base, metric], h_runs[run, metric]
        diff = (b - a)[~np.isnan(a) & ~np.isnan(b)]
        better = -diff if lower_is_better(metric) else diff
        wins, losses = int((better > 0).sum()), int((better < 0).sum())
        corrected = one.corrected
        bounds = metric_range(metric, difference=True)
        tests.append(
            CorrectedComparison(
                baseline=base,
                run=run,
                metric=metric,
                mean_difference=None if corrected is None else corrected.mean,
                ci=_pair(corrected, bounds),
                p_value=one.p_value,
                wins=wins,
                ties=int(diff.size) - wins - losses,
                losses=losses,
                queries=int(diff.size),
                family="headline" if metric == headline else "secondary",
                queries_to_settle=None if corrected is None else one.queries_to_settle,
                lam=one.lam,
                judge_only=_figure(one.judge_only, int(fixed.judge_only.queries[j]), bounds),
                human_only=_figure(one.human_only, int(fixed.human_only.queries[j]), bounds),
            )
        )
    adjusted: list[Comparison | CorrectedComparison] = []
    adjusted.extend(adjust_families(tests, request.options.adjust))
    return adjusted


def _figure(estimate: Estimate | None, queries: int, bounds: Bounds) -> Figure:
    if estimate is None:
        return Figure(None, None, queries)
    mean = estimate.mean
    return Figure(None if math.isnan(mean) else mean, _pair(estimate, bounds), queries)
