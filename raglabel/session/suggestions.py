"""Judge suggestions as the grading app shows them: one grade per pair, never a label.

Several models (or repeats) may have answered for one pair; the app shows the lower
median of each model's latest grade, the same rule ``--fill-with-judge`` uses, with the
spread so an annotator can see when the judges disagreed.
"""

from __future__ import annotations

from dataclasses import dataclass

from raglabel.storage.labels import resolve
from raglabel.storage.project import Project
from raglabel.storage.suggestions import suggestion_rows


@dataclass(frozen=True)
class Suggestion:
    grade: int
    models: tuple[str, ...]
    low: int  # the lowest and highest of the models' grades
    high: int
    reason: str | None  # a reason given with the grade shown, if any
    flagged: str | None = None  # why a person should look before trusting any judge


def query_suggestions(project: Project, query_row: int) -> dict[str, Suggestion]:
    """Each passage's suggestion for one query, by passage id."""
    latest: dict[str, dict[str, tuple[int, str | None]]] = {}
    spreads: dict[str, dict[str, tuple[int, int]]] = {}
    flags: dict[str, str] = {}
    for pid, model, grade, reason, low, high, flagged in suggestion_rows(project.conn, query_row):
        latest.setdefault(pid, {})[model] = (grade, reason)
        spreads.setdefault(pid, {})[model] = (low or grade, high or grade)
        if flagged:
            flags[pid] = flagged
    out: dict[str, Suggestion] = {}
    for pid, by_model in latest.items():
        grades = [grade for grade, _ in by_model.values()]
        # The spread covers every answer behind the suggestion: repeats within a model
        # as well as the models against each other.
        ranges = spreads[pid].values()
        grade = resolve(grades)
        # The reason shown is one given for the grade shown, never another model's.
        agreeing = [reason for g, reason in by_model.values() if g == grade and reason]
        out[pid] = Suggestion(
            grade=grade,
            models=tuple(sorted(by_model)),
            low=min(low for low, _ in ranges),
            high=max(high for _, high in ranges),
            reason=agreeing[-1] if agreeing else None,
            flagged=flags.get(pid),
        )
    return out
