"""Grades as labels: one resolved grade per (query, passage) for metrics, and the current
grades a grading session shows."""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

from raglabel.errors import UsageError
from raglabel.formats.trec.rows import QrelsRows
from raglabel.storage.items import names_of_rows
from raglabel.storage.policies import Policy
from raglabel.storage.pool import in_chunks, joined_ints

#: The ``event.origin`` of a lead's final grade for a pair (``storage.adjudication``).
ADJUDICATION = "adjudication"


def resolve(grades: Sequence[int], policy: Policy = "median") -> int:
    """One grade from several annotators' grades; the median takes the lower middle."""
    if not grades:
        raise ValueError("no grades to resolve")
    if policy == "max":
        return max(grades)
    if policy == "min":
        return min(grades)
    ordered = sorted(grades)
    return ordered[(len(ordered) - 1) // 2]


@dataclass(frozen=True)
class LabelChoice:
    """Which grades become labels: a policy over annotators, or one annotator's alone."""

    policy: Policy = "median"
    annotator: str | None = None
    fill_with_judge: bool = False
    #: The judge's grades alone, as ``--fill-with-judge`` resolves them, on every pair
    #: it graded; no person's grade (``eval --estimate judge``).
    judge_only: bool = False

    def describe(self) -> str:
        if self.judge_only:
            return "judge: lower median over models' latest suggestions; no human grade"
        who = (
            f"annotator {self.annotator!r}"
            if self.annotator
            else f"{self.policy} over annotators' current grades; adjudicated grades win"
        )
        extra = "; judge suggestions fill ungraded pairs" if self.fill_with_judge else ""
        return f"human: {who}{extra}"


@dataclass(frozen=True)
class ResolvedLabels:
    qrels: QrelsRows
    human: int  # pairs graded by people
    judge_filled: int  # pairs graded only by a judge, used because the user asked
    source: str

    @property
    def from_judge(self) -> list[bool]:
        """Per row of ``qrels``, whether its label is the judge's: ``qrels`` lists the
        ``human`` pairs people graded first, then the ``judge_filled`` pairs."""
        return [False] * self.human + [True] * self.judge_filled


def refuse_unknown_annotator(conn: sqlite3.Connection, name: str) -> None:
    """An export's ``--annotator`` must name someone of the project: a misspelt name
    would otherwise export nothing, or everything, without a word."""
    if conn.execute("SELECT 1 FROM annotator WHERE name = ?", (name,)).fetchone() is None:
        raise UsageError(f"--annotator {name!r}: nobody of that name graded here")


def resolved_labels(conn: sqlite3.Connection, choice: LabelChoice) -> ResolvedLabels:
    if choice.judge_only:
        return _judge_only_labels(conn, choice)
    if choice.annotator is not None:
        refuse_unknown_annotator(conn, choice.annotator)
    labels = _human_labels(conn, choice)
    human = len(labels)
    filled = 0
    models: set[str] = set()
    if choice.fill_with_judge:
        for pair, (grade, used) in _judge_grades(conn).items():
            if pair not in labels:
                labels[pair] = grade
                models.update(used)
                filled += 1
    qrels = QrelsRows([qid for qid, _ in labels], [pid for _, pid in labels], [*labels.values()])
    source = choice.describe()
    if choice.fill_with_judge:
        source += f" ({filled} pairs from {', '.join(sorted(models)) or 'no model'})"
    return ResolvedLabels(qrels, human, filled, source)


def _judge_only_labels(conn: sqlite3.Connection, choice: LabelChoice) -> ResolvedLabels:
    """The judge's grade on every pair it graded, by the rule ``--fill-with-judge`` and
    ``agree`` use (:func:`judge_consensus`); imported judgments count as models."""
    grades = _judge_grades(conn)
    models = sorted(set().union(*(used for _, used in grades.values())))
    qrels = QrelsRows(
        [qid for qid, _ in grades], [pid for _, pid in grades], [g for g, _ in grades.values()]
    )
    source = f"{choice.describe()} ({len(grades)} pairs from {', '.join(models) or 'no model'})"
    return ResolvedLabels(qrels, 0, len(grades), source)


def _human_labels(conn: sqlite3.Connection, choice: LabelChoice) -> dict[tuple[str, str], int]:
    """One grade per pair from people: the chosen annotator's, or the latest adjudicated
    grade where the lead set one, else the policy over every annotator's current grade.

    Read as row ids (a row per query), settled with numpy, and named last: passage rows
    are numbered in name order, so joining each grade to its passage probed the passage
    table at random (most of the time of reading 400,000 grades), where reading the
    names in row order walks it once."""
    if choice.annotator is not None:
        queries, passages, grades = _grade_columns(
            conn,
            "JOIN annotator a ON a.id = c.annotator_id WHERE a.name = ?",
            (choice.annotator,),
        )
    else:
        queries, passages, grades = _settled_rows(conn, "", (), choice.policy)
    query_names = names_of_rows(conn, "query", queries)
    passage_names = names_of_rows(conn, "passage", passages)
    pairs = zip(
        [query_names[q] for q in queries.tolist()],
        [passage_names[p] for p in passages.tolist()],
        strict=True,
    )
    return dict(zip(pairs, grades.tolist(), strict=True))


def _grade_columns(
    conn: sqlite3.Connection, tail: str, args: tuple[object, ...], *, with_events: bool = False
) -> tuple[NDArray[np.int64], ...]:
    """Current grades as columns: query row, passage row and grade, then (``with_events``)
    event id and whether the event is an adjudication, which the first of ``args`` names;
    ``tail`` joins and filters ``c``. Read as one row per query of comma-joined values,
    which costs a fraction of a Python row per grade; both lists of a group see its rows
    in the same order, so they stay paired. Turned into arrays in chunks
    (:func:`~raglabel.storage.pool.in_chunks`): the app reads these in a thread beside
    its keys."""
    joined = ["c.passage_id", "c.grade"]
    if with_events:
        joined += ["c.event_id", "e.origin IS ?"]
    lists = ", ".join(f"group_concat({value})" for value in joined)
    rows = conn.execute(
        f"SELECT c.query_id, count(*), {lists} FROM current_grade c {tail} GROUP BY c.query_id",
        args,
    ).fetchall()
    queries, counts = (np.array([row[i] for row in rows], dtype=np.int64) for i in (0, 1))
    rest = [joined_ints([row[i] for row in rows]) for i in range(2, 2 + len(joined))]
    return (in_chunks(queries, counts), *rest)


def _settled_rows(
    conn: sqlite3.Connection, where: str, args: tuple[object, ...], policy: Policy
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """Query row, passage row and grade of each pair over every annotator's current
    grade (:func:`settled_columns`), in pair order; ``where`` filters ``c`` with
    ``args``."""
    columns = _grade_columns(
        conn, f"JOIN event e ON e.id = c.event_id{where}", (ADJUDICATION, *args), with_events=True
    )
    queries, passages = columns[0], columns[1]
    grouped = (queries[1:] > queries[:-1]) | (
        (queries[1:] == queries[:-1]) & (passages[1:] >= passages[:-1])
    )
    if not bool(grouped.all()):
        # Each pair's rows together, whatever order SQLite gave a query's rows in.
        order = np.lexsort((passages, queries))
        columns = tuple(column[order] for column in columns)
    queries, passages, grades, events, adjudicated = columns
    return settled_columns(
        queries, passages, grades, events, adjudicated.astype(np.bool_), policy=policy
    )


def settled_columns(
    queries: NDArray[np.int64],
    passages: NDArray[np.int64],
    grades: NDArray[np.int64],
    events: NDArray[np.int64],
    adjudicated: NDArray[np.bool_],
    *,
    policy: Policy = "median",
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """:func:`settle` over columns whose rows come grouped by pair (each pair's rows
    together): each pair once, in order of its first row, with its grade."""
    n = grades.size
    if n == 0:
        return queries[:0], passages[:0], grades[:0]
    first = np.ones(n, dtype=np.bool_)
    first[1:] = (queries[1:] != queries[:-1]) | (passages[1:] != passages[:-1])
    starts = np.flatnonzero(first)
    if starts.size == n:
        return queries, passages, grades  # one grade a pair: it stands, by any rule
    pair = np.cumsum(first) - 1
    ends = np.append(starts[1:], n) - 1
    # Each pair's rows as one block again (the sort keys its pair first): people's grades
    # in order of grade, then the adjudicated ones in order of event.
    by_grade = np.lexsort((grades, adjudicated, pair))
    plain = np.add.reduceat((~adjudicated).astype(np.int64), starts)  # people's grades
    # The place among them that ``resolve`` takes: the lowest, the lower middle, the top.
    at = np.zeros_like(plain) if policy == "min" else plain - 1
    if policy == "median":
        at //= 2
    chosen = grades[by_grade[starts + np.maximum(at, 0)]]
    by_event = np.lexsort((events, adjudicated, pair))
    latest = by_event[ends]
    # A pair with an adjudicated grade takes the latest one (its last row here); a pair
    # without has people's grades only, so ``chosen`` is one of them.
    settled = np.where(adjudicated[latest], grades[latest], chosen)
    return queries[starts], passages[starts], settled


def own_grades(conn: sqlite3.Connection, annotator: str) -> list[tuple[int, str, int]]:
    """``(query row id, passage id, grade)`` of one annotator's current grades."""
    return conn.execute(
        "SELECT c.query_id, p.ext_id, c.grade FROM current_grade c"
        " JOIN annotator a ON a.id = c.annotator_id JOIN passage p ON p.id = c.passage_id"
        " WHERE a.name = ?",
        (annotator,),
    ).fetchall()


def own_grade_rows(
    conn: sqlite3.Connection,
    annotator: str,
    *,
    query_row: int | None = None,
    adjudications: bool = True,
) -> NDArray[np.int64]:
    """``(query row, passage row, grade)`` rows of one annotator's current grades:
    integers only, as a big project's millions of grades are read at start; only query
    ``query_row``'s when given (a query opened before they are all read). Without
    ``adjudications``, a lead's settled grades are left out: they are no rating of
    hers to measure agreement on (``storage.ratings`` reads the same way)."""
    one, args = ("", ()) if query_row is None else (" AND c.query_id = ?", (query_row,))
    join = ""
    if not adjudications:
        join = " JOIN event e ON e.id = c.event_id"
        one += " AND e.origin IS NOT ?"
        args = (*args, ADJUDICATION)
    columns = _grade_columns(
        conn,
        f"JOIN annotator a ON a.id = c.annotator_id{join} WHERE a.name = ?{one}",
        (annotator, *args),
    )
    return np.stack(columns, axis=1).reshape(-1, 3)


def resolved_grade_rows(
    conn: sqlite3.Connection, *, query_row: int | None = None
) -> NDArray[np.int64]:
    """``(query row, passage row, grade)``: :func:`resolved_grades` by passage row; only
    query ``query_row``'s pairs when given."""
    one, args = ("", ()) if query_row is None else (" WHERE c.query_id = ?", (query_row,))
    return np.stack(_settled_rows(conn, one, args, "median"), axis=1).reshape(-1, 3)


def resolved_grades(
    conn: sqlite3.Connection, *, query_row: int | None = None, passage: str | None = None
) -> list[tuple[int, str, int]]:
    """``(query row id, passage id, grade)``: one grade per pair over every annotator, by
    the rule ``raglabel eval DB`` uses; only query ``query_row``'s pairs, or only
    ``passage``'s, when given."""
    clauses: list[str] = []
    args: list[object] = [ADJUDICATION]
    if query_row is not None:
        clauses.append("c.query_id = ?")
        args.append(query_row)
    if passage is not None:
        clauses.append("p.ext_id = ?")
        args.append(passage)
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    rows = conn.execute(
        "SELECT c.query_id, p.ext_id, c.grade, c.event_id, e.origin IS ?"
        " FROM current_grade c JOIN event e ON e.id = c.event_id"
        " JOIN passage p ON p.id = c.passage_id" + where,
        args,
    )
    settled = settle(((q, p), grade, event, bool(adj)) for q, p, grade, event, adj in rows)
    return [(q, p, grade) for (q, p), grade in settled.items()]


def graders(conn: sqlite3.Connection) -> list[str]:
    """Everyone with a current grade in the file, by name."""
    return [
        name
        for (name,) in conn.execute(
            "SELECT DISTINCT a.name FROM current_grade c JOIN annotator a"
            " ON a.id = c.annotator_id ORDER BY a.name"
        )
    ]


Pair = TypeVar("Pair", bound=Hashable)


def settle(
    standing: Iterable[tuple[Pair, int, int, bool]], policy: Policy = "median"
) -> dict[Pair, int]:
    """One grade per pair from ``(pair, grade, event id, adjudicated)`` current grades:
    the latest adjudicated grade where a lead set one, else ``policy`` over the rest."""
    per_pair: dict[Pair, list[int]] = defaultdict(list)
    final: dict[Pair, tuple[int, int]] = {}  # pair -> (event id, grade)
    for pair, grade, event_id, adjudicated in standing:
        grades = per_pair[pair]  # every pair gets its place, adjudicated or not
        if not adjudicated:
            grades.append(grade)
        elif pair not in final or event_id > final[pair][0]:
            final[pair] = (event_id, grade)
    return {
        pair: final[pair][1] if pair in final else resolve(grades, policy)
        for pair, grades in per_pair.items()
    }


def _judge_grades(conn: sqlite3.Connection) -> dict[tuple[str, str], tuple[int, set[str]]]:
    return judge_consensus(suggestions_by_model(conn))


def suggestions_by_model(conn: sqlite3.Connection) -> dict[str, dict[tuple[str, str], int]]:
    """Each model's latest suggestion per (query, passage), models by name."""
    models: dict[str, dict[tuple[str, str], int]] = defaultdict(dict)
    rows = conn.execute(
        "SELECT q.ext_id, p.ext_id, s.model, s.grade FROM suggestion s"
        " JOIN query q ON q.id = s.query_id JOIN passage p ON p.id = s.passage_id"
        " ORDER BY s.id"
    )
    for qid, pid, model, grade in rows:
        models[model][qid, pid] = grade  # later rows are newer: the latest stands
    return dict(sorted(models.items()))


def judge_consensus(
    by_model: dict[str, dict[Pair, int]],
) -> dict[Pair, tuple[int, set[str]]]:
    """Each pair's judge grade, the lower median over the models that graded it, and
    which models those were."""
    per_pair: dict[Pair, dict[str, int]] = defaultdict(dict)
    for model, grades in by_model.items():
        for pair, grade in grades.items():
            per_pair[pair][model] = grade
    return {pair: (resolve(list(m.values())), set(m)) for pair, m in per_pair.items()}


def last_event_id(conn: sqlite3.Connection) -> int:
    """The newest event's id (0 for none): every event up to it is in what a read that
    starts afterwards sees."""
    return int(conn.execute("SELECT coalesce(max(id), 0) FROM event").fetchone()[0])
