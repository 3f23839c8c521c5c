"""Judge suggestions as the grading app reads them: every stored one for one query."""

from __future__ import annotations

import sqlite3
from typing import NamedTuple


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
