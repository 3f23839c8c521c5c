"""A lead's view of the team (``raglabel progress``, the app's Progress screen): for each
annotator, what they were assigned and finished, their pace, and how far they agree with
each other annotator so far; for each assigned query, how many of its annotators
finished it; and the pairs waiting for the lead.

Read from one read transaction on a read-only connection: in WAL mode it sees the file
as it was when the read began and never holds up anyone grading meanwhile.

The figures, per annotator:

- ``assigned``: the queries ``raglabel assign`` gave them; ``done``: those of them they
  graded every pooled pair of, i.e. every passage some stored run ranks within the top
  ``depth`` for it (:func:`raglabel.storage.assignments.done_queries`).
- ``grades``: their standing grades, one a pair: a pair they graded counts once, with
  whatever grade of theirs stands last (undone and replaced grades are not counted
  again), wherever it was made (the app, a label file, an adjudication). These are the
  grades of theirs ``eval`` reads.
- Pace, from the times of their grade events given at the keys
  (:mod:`raglabel.storage.grading_times`: the app, served grading, adjudication; every
  such event, a grade later replaced included, since each was work): the gaps between
  consecutive ones; a gap longer than :data:`IDLE_LIMIT_S` is a break, not work.
  ``median_active_s`` is the median of the other gaps (the active ones), null with fewer
  than 2 grades or no active gap. ``grades_per_hour`` is the number of active gaps (each
  ends in a grade made within an active span) over their total in hours, null when that
  total is 0. The first grade after a break starts a span and has no measured time.
- ``alpha_with[b]``: Krippendorff's alpha, ordinal on the 1-5 scale, of the two
  annotators' standing grades on the pairs both graded, a lead's adjudications left out
  (the figure ``raglabel agree`` gives each pair of annotators); null when they share
  fewer than 2 pairs, or when alpha
  is undefined (all their shared grades one and the same).

And ``to_adjudicate``: pairs whose annotators' standing grades differ by more than one
grade that the lead has not settled (:func:`raglabel.storage.adjudication.disagreements`,
the Adjudication screen's list).
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np
from numpy.typing import NDArray

from raglabel.formats.progress_report import AnnotatorProgress, ProgressReport, QueryProgress
from raglabel.metrics.agreement import krippendorff_alpha
from raglabel.metrics.config import GRADES
from raglabel.storage import assignments
from raglabel.storage.adjudication import disagreements
from raglabel.storage.grading_times import grading_times
from raglabel.storage.labels import graders, own_grade_rows
from raglabel.storage.project import Project

#: A gap between two grades longer than this (seconds) is a break, not work: someone
#: who stops for coffee has not spent the coffee grading.
IDLE_LIMIT_S = 300.0
#: Pairs of grades two annotators must share for their alpha to be given: one pair
#: alone makes alpha 0 or undefined whatever the two do.
MIN_SHARED_PAIRS = 2


@dataclass(frozen=True)
class Pace:
    """How fast one annotator grades at the keys."""

    grades_per_hour: float | None
    median_active_s: float | None


@dataclass(frozen=True)
class Progress:
    """The report, and what reading it had to assume, said for the person reading it."""

    report: ProgressReport
    notes: list[str] = field(default_factory=list)


def pace(times: Sequence[datetime], idle_limit_s: float = IDLE_LIMIT_S) -> Pace:
    """The pace of grades given at ``times`` (in any order): see the module's docstring."""
    ordered = sorted(times)
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(ordered)]
    active = [gap for gap in gaps if gap <= idle_limit_s]
    if not active:
        return Pace(None, None)
    total = sum(active)
    per_hour = len(active) * 3600.0 / total if total > 0 else None
    return Pace(per_hour, float(statistics.median(active)))


def pair_alpha(a: NDArray[np.int64], b: NDArray[np.int64]) -> float | None:
    """Alpha of two annotators from their ``(query row, passage row, grade)`` rows, on the
    pairs both graded; None below :data:`MIN_SHARED_PAIRS` shared pairs or undefined."""
    shared, in_a, in_b = np.intersect1d(_keys(a), _keys(b), return_indices=True)
    if shared.size < MIN_SHARED_PAIRS:
        return None
    data = np.vstack([a[in_a, 2], b[in_b, 2]]).astype(np.float64)
    return krippendorff_alpha(data, "ordinal", GRADES)


def _keys(rows: NDArray[np.int64]) -> NDArray[np.int64]:
    """One integer per (query row, passage row): row ids are far below 2**31."""
    keys: NDArray[np.int64] = (rows[:, 0] << 32) | rows[:, 1]
    return keys


def parse_times(name: str, stamps: Sequence[str]) -> tuple[list[datetime], list[str]]:
    """``stamps`` as times, and notes on what could not be read as stored: a time without
    a zone is read as UTC (the zone raglabel stamps), one that is not ISO 8601 is left
    out of the pace."""
    times: list[datetime] = []
    unreadable = zoneless = 0
    for stamp in stamps:
        try:
            moment = datetime.fromisoformat(stamp)
        except (TypeError, ValueError):
            unreadable += 1
            continue
        if moment.tzinfo is None:
            zoneless += 1
            moment = moment.replace(tzinfo=UTC)
        times.append(moment)
    notes = []
    if unreadable:
        notes.append(
            f"{unreadable} of {name}'s grade times "
            + ("is not an ISO 8601 time" if unreadable == 1 else "are not ISO 8601 times")
            + ": left out of their pace"
        )
    if zoneless:
        notes.append(
            f"{zoneless} of {name}'s grade times "
            + ("names" if zoneless == 1 else "name")
            + " no time zone: read as UTC"
        )
    return times, notes


def progress(project: Project, depth: int) -> Progress:
    """The team's progress in ``project`` (opened read-only by the caller), with an
    annotator's query done when they graded every pooled pair of it to ``depth``; read
    in one read transaction."""
    if depth < 1:
        raise ValueError("depth must be at least 1")
    conn = project.conn
    with project.snapshot():
        shares = assignments.assigned(conn)
        names = sorted(set(shares) | set(graders(conn)))
        # Everyone's at once: the pools are read once, not once an annotator.
        done = assignments.done_by_annotator(conn, depth)
        rows = {name: own_grade_rows(conn, name) for name in names}
        # Agreement is on ratings: a lead's adjudications take a side (as in `agree`).
        rated = {name: own_grade_rows(conn, name, adjudications=False) for name in names}
        stamps = grading_times(conn)
        # The Adjudication screen's rule, its default: grades more than one apart.
        waiting = sum(d.final is None for d in disagreements(conn))
    alphas = {(a, b): pair_alpha(rated[a], rated[b]) for a, b in itertools.combinations(names, 2)}
    notes: list[str] = []
    annotators: dict[str, AnnotatorProgress] = {}
    for name in names:
        times, said = parse_times(name, stamps.get(name, []))
        notes += said
        speed = pace(times)
        annotators[name] = AnnotatorProgress(
            assigned=len(shares.get(name, [])),
            done=len(done.get(name, set())),
            grades=len(rows[name]),
            grades_per_hour=speed.grades_per_hour,
            median_active_s=speed.median_active_s,
            alpha_with={
                other: alphas[min(name, other), max(name, other)]
                for other in names
                if other != name
            },
        )
    report = ProgressReport(
        annotators=annotators, queries=query_progress(shares, done), to_adjudicate=waiting
    )
    return Progress(report, notes)


def query_progress(
    shares: Mapping[str, Sequence[str]], done: Mapping[str, set[str]]
) -> dict[str, QueryProgress]:
    """Each assigned query, in query id order: its annotators, and those who finished it."""
    assigned: dict[str, int] = {}
    finished: dict[str, int] = {}
    for name, queries in shares.items():
        for qid in queries:
            assigned[qid] = assigned.get(qid, 0) + 1
            finished[qid] = finished.get(qid, 0) + (qid in done.get(name, set()))
    return {
        qid: QueryProgress(assigned=assigned[qid], done=finished[qid]) for qid in sorted(assigned)
    }
