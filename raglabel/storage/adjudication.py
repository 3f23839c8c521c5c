"""Pairs whose annotators disagree, and the lead's final grade for them.

An adjudication is an ordinary grade event by the lead, marked ``origin =
'adjudication'``: it lives in the same log, is undone the same way, and the resolved
labels (``storage.labels``) let the latest one stand over every annotator's grade.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from raglabel.storage.labels import ADJUDICATION
from raglabel.storage.project import Project

if TYPE_CHECKING:
    from raglabel.storage.grades import Recorded


@dataclass(frozen=True)
class Disagreement:
    query: str
    passage: str
    spread: int  # highest minus lowest annotator grade
    grades: dict[str, int]  # annotator name -> current grade, adjudications left out
    final: int | None  # the latest adjudicated grade, if the lead set one


# Annotators' standing human grades of the pairs whose plain (not adjudicated) grades
# spread at least ``?`` apart, with each pair's adjudicated grades alongside.
_DISAGREEMENTS = """
WITH standing AS (
    SELECT c.query_id, c.passage_id, c.annotator_id, c.grade, c.event_id,
           e.origin IS 'adjudication' AS adjudicated
    FROM current_grade c JOIN event e ON e.id = c.event_id
    WHERE e.source = 'human'
), spread AS (
    SELECT query_id, passage_id, max(grade) - min(grade) AS spread
    FROM standing WHERE NOT adjudicated
    GROUP BY query_id, passage_id
    HAVING count(*) >= 2 AND max(grade) - min(grade) >= ?
)
SELECT q.ext_id, p.ext_id, s.spread, a.name, g.grade, g.adjudicated
FROM spread s
JOIN standing g USING (query_id, passage_id)
JOIN query q ON q.id = s.query_id
JOIN passage p ON p.id = s.passage_id
JOIN annotator a ON a.id = g.annotator_id
ORDER BY s.spread DESC, q.ext_id, p.ext_id, g.event_id
"""


def disagreements(conn: sqlite3.Connection, min_spread: int = 2) -> list[Disagreement]:
    """Pairs whose annotators' current grades differ by ``min_spread`` or more, widest
    spread first, then by query and passage id."""
    if min_spread < 1:
        raise ValueError("min_spread must be at least 1")
    spreads: dict[tuple[str, str], int] = {}
    grades: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    final: dict[tuple[str, str], int] = {}
    for qid, pid, spread, name, grade, adjudicated in conn.execute(_DISAGREEMENTS, (min_spread,)):
        spreads[(qid, pid)] = spread
        if adjudicated:
            final[(qid, pid)] = grade  # rows come in event order: the last is the latest
        else:
            grades[(qid, pid)][name] = grade
    return [
        Disagreement(qid, pid, spread, grades[(qid, pid)], final.get((qid, pid)))
        for (qid, pid), spread in spreads.items()
    ]


def adjudicate(
    project: Project,
    query: str,
    passage: str,
    lead: str,
    grade: int,
    *,
    shown_at: str | None = None,
    active_ms: int | None = None,
) -> Recorded:
    """Record the lead's final grade for a pair; it becomes the pair's resolved label."""
    # The grade log's models import pydantic, which the grading app's start (it reads
    # this module's Disagreement) should not pay for.
    from raglabel.storage.grades import GradeEvent, record

    event = GradeEvent(
        query=query,
        passage=passage,
        annotator=lead,
        grade=grade,
        origin=ADJUDICATION,
        shown_at=shown_at,
        active_ms=active_ms,
    )
    return record(project, event)
