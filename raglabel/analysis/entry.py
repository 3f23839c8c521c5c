"""The one way into an evaluation: an :class:`~raglabel.analysis.inputs.EvalRequest` in,
the report out.

``raglabel eval`` and ``raglabel report`` fill the request from files and options, the
Python API (``raglabel.evaluate``) from dicts and DataFrames; both call
:func:`evaluate_request`, and neither calls the other. So the numbers, the checks and
the warnings are one code's, whichever door they came in by.
"""

from __future__ import annotations

import gc
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from raglabel.analysis.inputs import EvalRequest, Loaded, load

if TYPE_CHECKING:
    from raglabel.formats.report import Report
    from raglabel.metrics.labels import LabelSet


class Evaluated:
    """The report, its warnings (also in the report), when loading ended (for
    ``--timings``), and the label set it was computed on (its grade counts per query)."""

    __slots__ = ("labels", "loaded_at", "report", "warnings")

    def __init__(
        self, report: Report, warnings: list[str], loaded_at: float, labels: LabelSet
    ) -> None:
        self.report = report
        self.warnings = warnings
        self.loaded_at = loaded_at
        self.labels = labels


def load_request(request: EvalRequest) -> Loaded:
    """The inputs loaded and aligned, with notes on how the metric names were read."""
    loaded = load(request)
    if request.metric_names:
        loaded.warnings += _name_notes(request, loaded)
    return loaded


def evaluate_request(request: EvalRequest, loaded: Loaded | None = None) -> Evaluated:
    """Everything the request asks for, from inputs already loaded by
    :func:`load_request` (``loaded``) or loaded here."""
    if loaded is None:
        loaded = load_request(request)
    answer_inputs = None
    if request.answers is not None and request.project is not None:
        from raglabel.analysis.answers import load_answers
        from raglabel.storage.project import Project

        # Hundreds of thousands of judge answers are read and kept to the end: the cyclic
        # collector would walk them again and again while they are made and while the
        # statistics allocate, for nothing (they hold no cycles), so it is paused for
        # the reading and they are moved out of its sight afterwards.
        collecting = gc.isenabled()  # off already when eval is its process's command
        gc.disable()
        try:
            with Project.open_read(request.project) as project:
                answer_inputs = load_answers(
                    project.conn,
                    request.answer_systems,
                    relevance_threshold=loaded.stats.config.relevance_threshold,
                )
        finally:
            gc.freeze()
            if collecting:
                gc.enable()
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
    if loaded.judge_shares is not None:
        for name, run in report.runs.items():
            run.judge_share = loaded.judge_shares.shares(name)
    if request.answers is not None and answer_inputs is not None:
        from raglabel.analysis.answers import MIN_HUMAN, answers_section, attach

        options = replace(request.answers, gains=loaded.stats.config.gain_map)
        attach(report, answers_section(answer_inputs, options), options.adjust)
        systems = {item.system for item in answer_inputs.items}
        if options.compare and len(systems) < 2:
            loaded.warnings.append(
                f"--compare: only one answer system ({', '.join(sorted(systems))}), so no"
                " answer comparison; name two or more with --system, or leave it out"
            )
        report.config["answers"] = {
            "thresholds": options.thresholds,
            "judge": "lower median over models and repeats",
            "humans": "lower median over annotators",
            "corrected_min_human": MIN_HUMAN,
        }
    return Evaluated(report, loaded.warnings, loaded_at, loaded.stats.labels)


def _name_notes(request: EvalRequest, loaded: Loaded) -> list[str]:
    """How the names of the metric list were read, where another tool means otherwise."""
    from raglabel.analysis.metric_notes import gain_notes, name_notes, relevance_notes
    from raglabel.formats.maps import GradeMap

    asked = request.metric_names or ""
    notes = name_notes(asked, request.cutoffs, cutoffs_given=request.cutoffs_given)
    # Other tools' conventions are about qrels labels (a file's or a table's).
    if request.qrels is not None or request.memory is not None:
        grade_map = request.grade_map or GradeMap()
        notes += relevance_notes(asked, grade_map, loaded.stats, loaded.options.na)
        notes += gain_notes(asked, loaded.options.metrics, grade_map, request.config)
    return list(dict.fromkeys(notes))
