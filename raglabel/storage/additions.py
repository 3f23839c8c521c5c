"""What an import of runs or labels adds to a project on its own: the queries and passages
it names that the project did not hold, counted, and a warning when most of its queries
are new to a project that had queries, or any is one of its queries in other case, which
is what ids spelled another way look like
(``H1`` in the run, ``h1`` in the project: five queries without text, and their passages
to grade, with no word said).

Query and passage rows are never deleted and new ones take the next ids, so the rows a
write created are the ids above the largest one before it.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

#: A run (or label file) more than this share of whose queries are new gets a warning.
MOSTLY_NEW = 0.5
#: How many new query ids a warning names.
EXAMPLES = 3


@dataclass(frozen=True)
class Mark:
    """The largest query and passage ids before a write."""

    queries: int
    passages: int

    @classmethod
    def of(cls, conn: sqlite3.Connection) -> Mark:
        return cls(_top(conn, "query"), _top(conn, "passage"))

    def added(self, conn: sqlite3.Connection) -> tuple[int, int]:
        """The queries and passages created since the mark."""
        return _top(conn, "query") - self.queries, _top(conn, "passage") - self.passages


def _top(conn: sqlite3.Connection, table: str) -> int:
    # max(id) is one step down the table's b-tree, where count(*) reads all of it.
    return int(conn.execute(f"SELECT coalesce(max(id), 0) FROM {table}").fetchone()[0])


def new_queries_warning(
    conn: sqlite3.Connection, before: Mark, *, what: str, kind: str, named: int, added: int
) -> str | None:
    """The warning for ``what`` (``run 'bm25'``), a ``kind`` of input (``run``,
    ``label``) naming ``named`` queries, of which ``added`` were created since
    ``before``: None unless the project held queries and either most of these are new
    to it or a new one is one of its queries spelled in other case (never a new query
    on purpose: the two would be graded apart)."""
    if before.queries == 0 or added == 0:
        return None
    new = [ext for (ext,) in conn.execute(_NEW_QUERIES, (before.queries,))]
    same = _case_only(conn, before, new)
    if added <= MOSTLY_NEW * named and same is None:
        return None
    shown = ", ".join(repr(ext) for ext in new[:EXAMPLES])
    if len(new) > EXAMPLES:
        shown += ", ..."
    holes = conn.execute(_UNGRADED, (before.queries,)).fetchone()[0]
    message = (
        f"{what}: {added:,} of its {named:,} queries are new to a project that held"
        f" {before.queries:,}; they were added without text ({shown})"
    )
    if holes:
        message += f", with {holes:,} passages to grade"
    if same:
        theirs, ours, count = same
        message += (
            f". {kind.capitalize()} ids differ from the project's only in case: {theirs} vs"
            f" {ours} ({count:,} of the {added:,} new)"
        )
    return message + ". Check that its query ids are the project's"


_NEW_QUERIES = "SELECT ext_id FROM query WHERE id > ? ORDER BY id"
# The new queries' candidates nobody has graded: what the grading app will ask for.
_UNGRADED = (
    "SELECT count(*) FROM candidate c WHERE c.query_id > ? AND NOT EXISTS (SELECT 1 FROM"
    " current_grade g WHERE g.query_id = c.query_id AND g.passage_id = c.passage_id)"
)


def _case_only(
    conn: sqlite3.Connection, before: Mark, new: list[str]
) -> tuple[str, str, int] | None:
    """The first new id that is a query of the project's spelled in other case, that
    query's id, and how many new ids are so; None when none is."""
    known = {
        ext.casefold(): ext
        for (ext,) in conn.execute("SELECT ext_id FROM query WHERE id <= ?", (before.queries,))
    }
    pairs = [(ext, known[ext.casefold()]) for ext in new if ext.casefold() in known]
    if not pairs:
        return None
    return pairs[0][0], pairs[0][1], len(pairs)
