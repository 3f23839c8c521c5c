"""Judge runs in the project file: which pairs to ask about, what is already answered,
and every answer (or failure) as it arrives.

A judgment is one raw answer for one slot (pair, model, repeat) under one endpoint,
prompt version and parameter set; its cache key hashes all of those with the query's
and passage's text, so a repeated run sends nothing and a changed text asks again. A
suggestion is the lower median of a slot group's latest good answers, rewritten in the
same transaction as the answers behind it. Human grades are never touched here.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Self

from raglabel.errors import UsageError
from raglabel.judge.flags import flag_passage
from raglabel.judge.prompt import Template
from raglabel.judge.work import Outcome, Pair, Slot, Tally
from raglabel.storage.labels import resolve
from raglabel.storage.project import Project, now
from raglabel.storage.runs import decode_ids

FLUSH_EVERY = 64  # answers per transaction at most
FLUSH_AFTER_S = 0.5  # and at least this often, so a kill loses under a second of work


@dataclass(frozen=True)
class Selection:
    """Which pairs a judge run asks about."""

    queries: tuple[str, ...] = ()  # external query ids; empty means all
    depth: int | None = None  # only candidates some run ranked this high
    queue: bool = False  # in the labeling queue's order
    limit: int | None = None
    include_graded: bool = False  # also pairs people graded, to measure agreement
    # Leave out pairs whose query or passage has no text (before the limit counts).
    skip_missing_text: bool = False


@dataclass(frozen=True)
class Picked:
    """The pairs a selection chose, and those of them with no text to show the judge:
    left out of ``pairs`` under ``skip_missing_text``, else among them."""

    pairs: list[Pair]
    without_text: list[Pair]


@dataclass(frozen=True)
class Setting:
    """Everything besides the pair that shapes an answer."""

    endpoint: str
    template: Template
    params: dict[str, Any]

    @property
    def params_json(self) -> str:
        return json.dumps(self.params, sort_keys=True, separators=(",", ":"))

    def key(self, model: str) -> str:
        parts = (self.endpoint, model, self.template.version, self.params_json)
        return _digest("\x1f".join(parts))


@dataclass(frozen=True)
class Plan:
    slots: list[Slot]
    cached: int  # slots already answered under the same key
    pairs: int


def select_pairs(conn: sqlite3.Connection, selection: Selection) -> list[Pair]:
    return pick_pairs(conn, selection).pairs


def pick_pairs(conn: sqlite3.Connection, selection: Selection) -> Picked:
    clauses: list[str] = []
    args: list[object] = []
    if selection.queries:
        known = {
            ext: row
            for row, ext in conn.execute(
                f"SELECT id, ext_id FROM query WHERE ext_id IN ({_marks(selection.queries)})",
                selection.queries,
            )
        }
        unknown = [q for q in selection.queries if q not in known]
        if unknown:
            raise UsageError(f"--query {unknown[0]!r}: no such query in the project")
        clauses.append(f"c.query_id IN ({_marks(known)})")
        args.extend(known.values())
    if selection.depth is not None:
        clauses.append("c.best_rank <= ?")
        args.append(selection.depth)
    if not selection.include_graded:
        clauses.append(
            "NOT EXISTS (SELECT 1 FROM current_grade g"
            " WHERE g.query_id = c.query_id AND g.passage_id = c.passage_id)"
        )
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    rows = conn.execute(
        "SELECT c.query_id, c.passage_id, q.ext_id, p.ext_id, coalesce(q.text, ''),"
        " coalesce(p.text, ''), coalesce(p.title, ''), c.best_rank"
        " FROM candidate c JOIN query q ON q.id = c.query_id"
        f" JOIN passage p ON p.id = c.passage_id {where}"
        " ORDER BY q.ext_id, coalesce(c.best_rank, 1e18), p.ext_id",
        args,
    ).fetchall()
    pairs = [Pair(*row[:7]) for row in rows]
    if selection.queue:
        pairs = _queue_order(conn, pairs, {(r[0], r[1]): r[7] for r in rows}, selection.depth)
    if selection.skip_missing_text:
        without_text = [p for p in pairs if not p.has_text]
        pairs = [p for p in pairs if p.has_text]
    if selection.limit is not None:
        pairs = pairs[: selection.limit]
    if not selection.skip_missing_text:
        without_text = [p for p in pairs if not p.has_text]
    return Picked(pairs, without_text)


def _queue_order(
    conn: sqlite3.Connection,
    pairs: list[Pair],
    best: dict[tuple[int, int], int | None],
    depth: int | None,
) -> list[Pair]:
    """The grading app's queue: queries with the most such pairs first, and in each the
    pairs most runs retrieved, then the best-ranked."""
    wanted = {(p.query_row, p.pid) for p in pairs}
    runs: Counter[tuple[int, str]] = Counter()
    for query_row, blob in conn.execute("SELECT query_id, passage_ids FROM ranking"):
        ids = decode_ids(blob)
        for pid in ids[:depth] if depth else ids:
            if (query_row, pid) in wanted:
                runs[query_row, pid] += 1
    per_query = Counter(p.query_row for p in pairs)

    def order(p: Pair) -> tuple[int, str, int, float, str]:
        rank = best[p.query_row, p.passage_row]
        return (-per_query[p.query_row], p.qid, -runs[p.query_row, p.pid], rank or 1e18, p.pid)

    return sorted(pairs, key=order)


def plan(
    conn: sqlite3.Connection,
    pairs: Sequence[Pair],
    setting: Setting,
    models: Sequence[str],
    repeats: int,
) -> Plan:
    """Every slot the run needs, minus those answered before under the same key."""
    done = {key for (key,) in conn.execute("SELECT cache_key FROM judgment WHERE status = 'ok'")}
    slots: list[Slot] = []
    cached = 0
    for model in models:
        prefix = setting.key(model)
        for pair in pairs:
            texts = text_key(pair)
            for repeat in range(repeats):
                # The pair's ids are in the key: two pairs with the same texts are two
                # questions, each answered (and suggested) in its own right.
                key = _digest(f"{prefix}\x1f{pair.qid}\x1f{pair.pid}\x1f{texts}\x1f{repeat}")
                if key in done:
                    cached += 1
                    continue
                slots.append(Slot(pair, model, repeat, key, texts))
    return Plan(slots, cached, len(pairs))


class JudgmentLog:
    """Where a run's answers go: buffered for at most ``FLUSH_AFTER_S`` and written in
    short transactions, so grading in the same file never waits long for the lock."""

    def __init__(self, project: Project, setting: Setting, run_id: int) -> None:
        self.project = project
        self.setting = setting
        self.run_id = run_id
        self._buffer: list[Outcome] = []
        self._first_waiting = 0.0  # when the oldest buffered answer arrived

    @classmethod
    def start(
        cls,
        project: Project,
        setting: Setting,
        models: Sequence[str],
        repeats: int,
        *,
        api_key_env: str | None,
        limits: str | None = None,
        kind: str = "passages",
    ) -> Self:
        # Answers can always be asked for again, so this connection (which writes only
        # judgments) skips the fsync per commit: a power cut may cost the last few
        # answers, never consistency, and the event loop no longer stalls on the disk.
        # Human grades are written on other connections, at FULL.
        project.conn.execute("PRAGMA synchronous = NORMAL")
        with project.write():
            project.conn.execute(
                "INSERT OR IGNORE INTO prompt (version, text, created_at) VALUES (?, ?, ?)",
                (setting.template.version, setting.template.text, now()),
            )
            cursor = project.conn.execute(
                "INSERT INTO judge_run (endpoint, models, prompt_version, params, api_key_env,"
                " repeats, limits, started_at, status, kind)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'running', ?)",
                (
                    setting.endpoint,
                    json.dumps(list(models)),
                    setting.template.version,
                    setting.params_json,
                    api_key_env,
                    repeats,
                    limits,
                    now(),
                    kind,
                ),
            )
        return cls(project, setting, int(cursor.lastrowid or 0))

    def add(self, outcome: Outcome) -> None:
        if not self._buffer:
            self._first_waiting = time.monotonic()
        self._buffer.append(outcome)
        if len(self._buffer) >= FLUSH_EVERY:
            self.flush()
        else:
            self.flush_if_due()

    def flush_if_due(self) -> None:
        """Write what has waited ``FLUSH_AFTER_S``; the run calls this on a timer too, so
        an answer never waits for the next one to reach the disk."""
        if self._buffer and time.monotonic() - self._first_waiting >= FLUSH_AFTER_S:
            self.flush()

    def flush(self) -> None:
        if not self._buffer:
            return
        batch, self._buffer = self._buffer, []
        with self.project.write():
            self._write(self.project.conn, batch, now())

    def _write(self, conn: sqlite3.Connection, batch: list[Outcome], stamp: str) -> None:
        conn.executemany(
            "INSERT INTO judgment (run_id, query_id, passage_id, model, repeat, cache_key,"
            " text_key, status, grade, reason, raw, error, attempts, repaired, latency_ms,"
            " prompt_tokens, completion_tokens, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [_judgment_row(self.run_id, o, stamp) for o in batch],
        )
        slots = [o.slot for o in batch if o.ok and isinstance(o.slot, Slot)]
        groups = {(slot.pair, slot.model, slot.text_key) for slot in slots}
        for pair, model, texts in groups:
            flagged = flag_passage(pair.query, pair.passage)
            self._suggest(conn, pair, model, texts, flagged)

    def _suggest(
        self,
        conn: sqlite3.Connection,
        pair: Pair,
        model: str,
        texts: str,
        flagged: str | None,
    ) -> None:
        """Rewrite the pair's suggestion for this model and setting from its answers
        about the texts as they read now: the latest good answer of each repeat, then
        their lower median."""
        s = self.setting
        query_row, passage_row = pair.query_row, pair.passage_row
        rows = conn.execute(
            "SELECT j.repeat, j.grade, j.reason FROM judgment j JOIN judge_run r"
            " ON r.id = j.run_id WHERE j.query_id = ? AND j.passage_id = ? AND j.model = ?"
            " AND j.status = 'ok' AND j.text_key = ? AND r.endpoint = ?"
            " AND r.prompt_version = ? AND r.params = ? ORDER BY j.id",
            (query_row, passage_row, model, texts, s.endpoint, s.template.version, s.params_json),
        )
        latest: dict[int, tuple[int, str | None]] = {}
        for repeat, grade, reason in rows:
            latest[repeat] = (grade, reason)
        grades = [grade for grade, _ in latest.values()]
        median = resolve(grades)
        # The reason shown is one given with the median grade, so they never disagree.
        reason = next(r for g, r in latest.values() if g == median)
        conn.execute(
            "DELETE FROM suggestion WHERE query_id = ? AND passage_id = ? AND model = ?"
            " AND endpoint IS ? AND prompt_version IS ? AND params IS ?",
            (query_row, passage_row, model, s.endpoint, s.template.version, s.params_json),
        )
        conn.execute(
            "INSERT INTO suggestion (query_id, passage_id, model, grade, reason, created_at,"
            " endpoint, prompt_version, params, answers, low, high, flagged)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                query_row,
                passage_row,
                model,
                median,
                reason,
                now(),
                s.endpoint,
                s.template.version,
                s.params_json,
                len(grades),
                min(grades),
                max(grades),
                flagged,
            ),
        )

    def finish(self, tally: Tally, status: str) -> None:
        self.flush()
        with self.project.write():
            self.project.conn.execute(
                "UPDATE judge_run SET finished_at = ?, status = ?, planned = ?, cached = ?,"
                " ok = ?, failed = ?, retries = ?, note = ? WHERE id = ?",
                (
                    now(),
                    status,
                    tally.planned,
                    tally.cached,
                    tally.ok,
                    tally.failed,
                    tally.retries,
                    tally.stopped,
                    self.run_id,
                ),
            )


def _judgment_row(run_id: int, o: Outcome, stamp: str) -> tuple[object, ...]:
    s = o.slot
    assert isinstance(s, Slot)
    return (
        run_id,
        s.pair.query_row,
        s.pair.passage_row,
        s.model,
        s.repeat,
        s.cache_key,
        s.text_key,
        "ok" if o.ok else "failed",
        o.grade,
        o.reason,
        o.raw,
        o.error,
        o.attempts,
        int(o.repaired),
        o.latency_ms,
        o.prompt_tokens,
        o.completion_tokens,
        stamp,
    )


def latest_run(conn: sqlite3.Connection) -> sqlite3.Row | None:
    conn.row_factory = sqlite3.Row
    try:
        found: sqlite3.Row | None = conn.execute(
            "SELECT r.*, p.text AS prompt_text FROM judge_run r"
            " JOIN prompt p ON p.version = r.prompt_version WHERE r.kind = 'passages'"
            " ORDER BY r.id DESC LIMIT 1"
        ).fetchone()
    finally:
        conn.row_factory = None
    return found


def text_key(pair: Pair) -> str:
    """Names the query's and passage's texts: an answer counts only while they stand."""
    return _digest(f"{pair.query}\x1f{pair.title}\x1f{pair.passage}")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _marks(items: Sequence[object] | dict[str, int]) -> str:
    return ", ".join("?" * len(items))
