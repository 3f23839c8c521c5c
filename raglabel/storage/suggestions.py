"""Judge suggestions: rewritten from a pair's judge answers as they arrive (by the
judgment store, ``judgments.py``), and read back for the grading app, every stored one
for one query.

A suggestion is the lower median of the standing answers of one pair, model and setting,
with the reason given beside that grade. Labels another judge wrote are suggestions too
(source ``imported``, written by ``judgment_import.py``, one per pair and file); a model
name is either the judge's or imported, never both, so a rewrite here never meets one.
Human grades are never touched here.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import NamedTuple

from raglabel.judge.flags import flag_passage
from raglabel.judge.work import Pair
from raglabel.storage.clock import now
from raglabel.storage.labels import resolve


class StoredSuggestion(NamedTuple):
    passage: str  # the passage id
    model: str
    grade: int
    reason: str | None
    low: int | None  # the lowest and highest answer behind it; None if an older raglabel stored it
    high: int | None
    flagged: str | None  # why a person should look before trusting the judge


def suggestion_rows(conn: sqlite3.Connection, query_row: int) -> list[StoredSuggestion]:
    """Every suggestion for query ``query_row``'s pairs, oldest first."""
    return [
        StoredSuggestion(*row)
        for row in conn.execute(
            "SELECT p.ext_id, s.model, s.grade, s.reason, s.low, s.high, s.flagged"
            " FROM suggestion s JOIN passage p ON p.id = s.passage_id"
            " WHERE s.query_id = ? ORDER BY s.id",
            (query_row,),
        )
    ]


def rewrite(
    conn: sqlite3.Connection,
    pair: Pair,
    model: str,
    answers: Sequence[tuple[int, str | None]],
    *,
    endpoint: str,
    prompt_version: str,
    params: str,
) -> None:
    """Replace the suggestion of ``pair`` by ``model`` under this setting with one made
    from ``answers`` (grade, reason), one standing answer per repeat, in repeat order of
    first answer."""
    grades = [grade for grade, _ in answers]
    median = resolve(grades)
    # The reason shown is one given with the median grade, so they never disagree.
    reason = next(r for g, r in answers if g == median)
    conn.execute(
        "DELETE FROM suggestion WHERE query_id = ? AND passage_id = ? AND model = ?"
        " AND endpoint IS ? AND prompt_version IS ? AND params IS ?",
        (pair.query_row, pair.passage_row, model, endpoint, prompt_version, params),
    )
    conn.execute(
        "INSERT INTO suggestion (query_id, passage_id, model, grade, reason, created_at,"
        " endpoint, prompt_version, params, answers, low, high, flagged)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            pair.query_row,
            pair.passage_row,
            model,
            median,
            reason,
            now(),
            endpoint,
            prompt_version,
            params,
            len(grades),
            min(grades),
            max(grades),
            flag_passage(pair.query, pair.passage),
        ),
    )


def any_suggestion(conn: sqlite3.Connection) -> bool:
    """Whether any judge label is stored: a model's own or an imported one."""
    return conn.execute("SELECT 1 FROM suggestion LIMIT 1").fetchone() is not None
