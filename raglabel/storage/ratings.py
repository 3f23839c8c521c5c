"""Who graded what, as plain maps for measuring agreement: each annotator's current
grades, each judge model's latest suggestion, and how suggestions fared with people."""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from dataclasses import dataclass

from raglabel.storage.labels import ADJUDICATION, LabelChoice, _human_labels, suggestions_by_model

PairKey = tuple[str, str]  # (query ext id, passage ext id)


@dataclass(frozen=True)
class Ratings:
    annotators: dict[str, dict[PairKey, int]]
    models: dict[str, dict[PairKey, int]]
    resolved: dict[PairKey, int]  # one human grade per pair, as metrics use them
    accepted: int  # human grades that took a suggestion as it was
    # Human grades that had a suggestion to take when they were given: made in the app
    # (where suggestions show) after the judge's suggestion for the pair, or accepting
    # one. Imported suggestions and those that came after the grade were never seen.
    with_suggestion: int
    # Pairs where someone's grade is an accepted suggestion: comparing the judge with
    # those would compare it with itself.
    accepted_pairs: frozenset[PairKey]


def load_ratings(conn: sqlite3.Connection) -> Ratings:
    annotators: dict[str, dict[PairKey, int]] = defaultdict(dict)
    # A lead's adjudication is no rating of hers: it settles a disagreement, mostly by
    # taking one annotator's side, and counting it would make the lead agree with
    # everyone. The resolved grades below still let it stand.
    for name, qid, pid, grade in conn.execute(
        "SELECT a.name, q.ext_id, p.ext_id, c.grade FROM current_grade c"
        " JOIN event e ON e.id = c.event_id"
        " JOIN annotator a ON a.id = c.annotator_id JOIN query q ON q.id = c.query_id"
        " JOIN passage p ON p.id = c.passage_id WHERE e.origin IS NOT ?"
        " ORDER BY a.name",
        (ADJUDICATION,),
    ):
        annotators[name][qid, pid] = grade
    # Times are stored as ISO 8601 in UTC with milliseconds (storage.clock), so they
    # compare as text.
    accepted, offered = conn.execute(
        "SELECT coalesce(sum(e.accepted_suggestion = 1), 0), count(*) FROM current_grade c"
        " JOIN event e ON e.id = c.event_id WHERE e.accepted_suggestion = 1"
        " OR (e.origin = 'app' AND EXISTS (SELECT 1 FROM suggestion s"
        " WHERE s.query_id = c.query_id AND s.passage_id = c.passage_id"
        " AND s.source = 'judge' AND s.created_at <= e.graded_at))"
    ).fetchone()
    took = frozenset(
        conn.execute(
            "SELECT DISTINCT q.ext_id, p.ext_id FROM current_grade c"
            " JOIN event e ON e.id = c.event_id JOIN query q ON q.id = c.query_id"
            " JOIN passage p ON p.id = c.passage_id WHERE e.accepted_suggestion = 1"
        ).fetchall()
    )
    return Ratings(
        dict(annotators),
        suggestions_by_model(conn),
        _human_labels(conn, LabelChoice()),
        int(accepted),
        int(offered),
        took,
    )
