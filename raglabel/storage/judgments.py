"""The judge's answers in the project file, for every task: the run record, what is
already answered, every answer (or failure) as it arrives, and the answers that stand.

A judgment is one raw answer for one slot (a target, model and repeat) under one
endpoint, prompt version and parameter set. The target is a (query, passage) pair for a
passage run (table ``judgment``) or an (answer sample, criterion) for an answer run
(table ``answer_judgment``); both are written and read by the one code path here, and
differ only in the columns that name the target. A slot's cache key hashes the setting
with the target's ids, the texts it was asked about and the repeat, so a repeated run
sends nothing and a changed text asks again. A passage run also rewrites the pairs'
suggestions (``suggestions.py``) in the same transaction as the answers behind them.
Human grades are never touched here.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Generic, Self, TypeVar

from raglabel.judge.prompt import Template
from raglabel.judge.work import AnswerItem, AnswerSlot, ChunkGrade, Outcome, Pair, Slot, Tally
from raglabel.metrics.criteria import RANKING
from raglabel.storage import suggestions
from raglabel.storage.clock import now
from raglabel.storage.project import Project

FLUSH_EVERY = 64  # answers per transaction at most
FLUSH_AFTER_S = 0.5  # and at least this often, so a kill loses under a second of work

PASSAGES: Final = "passages"
ANSWERS: Final = "answers"

S = TypeVar("S", Slot, AnswerSlot)


@dataclass(frozen=True)
class Setting:
    """Everything besides the target that shapes an answer."""

    endpoint: str
    template: Template
    params: dict[str, Any]

    @property
    def params_json(self) -> str:
        return json.dumps(self.params, sort_keys=True, separators=(",", ":"))

    def key(self, model: str) -> str:
        parts = (self.endpoint, model, self.template.version, self.params_json)
        return _digest("\x1f".join(parts))


def slot_key(prefix: str, target: Sequence[str], texts: str, repeat: int) -> str:
    """The cache key of one slot, from its setting's ``key(model)``. The target's ids are
    in it: two targets with the same texts are two questions, each answered (and
    suggested) in its own right."""
    return _digest("\x1f".join((prefix, *target, texts, str(repeat))))


@dataclass(frozen=True)
class _Table:
    """Where one kind of run keeps its answers: the table, and the columns (besides those
    every judgment has) that name the target, with their values for an outcome."""

    name: str
    target_columns: tuple[str, ...]
    target_values: Callable[[Outcome], tuple[object, ...]]


def _pair_values(o: Outcome) -> tuple[object, ...]:
    slot = o.slot
    assert isinstance(slot, Slot), "a passage run's log was handed an answer slot"
    return (slot.pair.query_row, slot.pair.passage_row)


def _sample_values(o: Outcome) -> tuple[object, ...]:
    slot = o.slot
    assert isinstance(slot, AnswerSlot), "an answer run's log was handed a passage slot"
    return (slot.item.system_row, slot.item.sample_id, slot.criterion, _chunks_json(o.chunks))


_TABLES: Final = {
    PASSAGES: _Table("judgment", ("query_id", "passage_id"), _pair_values),
    ANSWERS: _Table(
        "answer_judgment", ("system_id", "sample_id", "criterion", "chunks"), _sample_values
    ),
}
# The columns every judgment has, after its target's.
_COMMON: Final = (
    "model",
    "repeat",
    "cache_key",
    "text_key",
    "status",
    "grade",
    "reason",
    "raw",
    "error",
    "attempts",
    "repaired",
    "latency_ms",
    "prompt_tokens",
    "completion_tokens",
    "created_at",
)


@dataclass(frozen=True)
class Plan(Generic[S]):
    """The slots a run asks for, and what it leaves out."""

    kind: str  # PASSAGES or ANSWERS: the run record's kind and the table written
    slots: list[S]
    cached: int  # slots already answered under the same key
    targets: int  # pairs, or (sample, criterion) pairs, the run covers
    # (criterion, NA reason) -> samples left out because an input is missing
    skipped: Counter[tuple[str, str]] = field(default_factory=Counter)


def text_key(pair: Pair) -> str:
    """Names the query's and passage's texts: an answer counts only while they stand."""
    return _digest(f"{pair.query}\x1f{pair.title}\x1f{pair.passage}")


def answer_text_key(item: AnswerItem, criterion: str) -> str:
    """Names the texts an answer about (item, criterion) read: it counts while they stand."""
    parts: list[str] = [criterion, item.question]
    if criterion != RANKING:
        parts.append(item.answer)
    if criterion in ("faithfulness", RANKING):
        parts.extend(chunk.text for chunk in item.contexts)
    if criterion in ("context_recall", RANKING):
        parts.append(json.dumps(item.reference, ensure_ascii=False))
        if criterion == "context_recall" and not item.reference:
            parts.extend(item.gold)
    return _digest("\x1f".join(parts))


def _answered(conn: sqlite3.Connection, kind: str) -> set[str]:
    table = _TABLES[kind].name
    return {key for (key,) in conn.execute(f"SELECT cache_key FROM {table} WHERE status = 'ok'")}


def plan(
    conn: sqlite3.Connection,
    pairs: Sequence[Pair],
    setting: Setting,
    models: Sequence[str],
    repeats: int,
) -> Plan[Slot]:
    """Every slot a passage run needs, minus those answered before under the same key."""
    done = _answered(conn, PASSAGES)
    slots: list[Slot] = []
    cached = 0
    for model in models:
        prefix = setting.key(model)
        for pair in pairs:
            texts = text_key(pair)
            for repeat in range(repeats):
                key = slot_key(prefix, (pair.qid, pair.pid), texts, repeat)
                if key in done:
                    cached += 1
                    continue
                slots.append(Slot(pair, model, repeat, key, texts))
    return Plan(PASSAGES, slots, cached, len(pairs))


def plan_answers(
    conn: sqlite3.Connection,
    items: Sequence[AnswerItem],
    criteria: Sequence[str],
    setting: Setting,
    *,
    models: Sequence[str],
    repeats: int,
) -> Plan[AnswerSlot]:
    """Every slot an answer run needs, minus those answered before under the same key; a
    (sample, criterion) whose inputs are missing is counted, never asked."""
    done = _answered(conn, ANSWERS)
    slots: list[AnswerSlot] = []
    cached = 0
    covered = 0
    skipped: Counter[tuple[str, str]] = Counter()
    prefixes = [(model, setting.key(model)) for model in models]
    for criterion in criteria:
        for item in items:
            reason = item.missing(criterion)
            if reason is not None:
                skipped[criterion, reason] += 1
                continue
            covered += 1
            texts = answer_text_key(item, criterion)
            target = (item.system, item.sample_id, criterion)
            for model, prefix in prefixes:
                for repeat in range(repeats):
                    key = slot_key(prefix, target, texts, repeat)
                    if key in done:
                        cached += 1
                        continue
                    slots.append(AnswerSlot(item, criterion, model, repeat, key, texts))
    return Plan(ANSWERS, slots, cached, covered, skipped)


class JudgmentLog:
    """Where a run's answers go: buffered for at most ``FLUSH_AFTER_S`` and written in
    short transactions, so grading in the same file never waits long for the lock."""

    def __init__(
        self, project: Project, setting: Setting, run_id: int, kind: str = PASSAGES
    ) -> None:
        self.project = project
        self.setting = setting
        self.run_id = run_id
        self.kind = kind
        self._table = _TABLES[kind]
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
        kind: str = PASSAGES,
    ) -> Self:
        if kind not in _TABLES:
            raise ValueError(f"no judge run of kind {kind!r} (choose {', '.join(_TABLES)})")
        from raglabel.storage.judgment_import import refuse_imported, refuse_reserved

        refuse_reserved(models)
        if kind == PASSAGES:
            refuse_imported(project.conn, models)
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
        return cls(project, setting, int(cursor.lastrowid or 0), kind)

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
        table = self._table
        columns = ("run_id", *table.target_columns, *_COMMON)
        conn.executemany(
            f"INSERT INTO {table.name} ({', '.join(columns)})"
            f" VALUES ({', '.join('?' * len(columns))})",
            [(self.run_id, *table.target_values(o), *_common_values(o, stamp)) for o in batch],
        )
        if self.kind == PASSAGES:
            self._suggest(conn, [o.slot for o in batch if o.ok and isinstance(o.slot, Slot)])

    def _suggest(self, conn: sqlite3.Connection, slots: list[Slot]) -> None:
        """Rewrite the suggestion of each pair and model answered, from its answers under
        this setting about the texts as they read now."""
        s = self.setting
        for pair, model, texts in dict.fromkeys((x.pair, x.model, x.text_key) for x in slots):
            rows = conn.execute(
                "SELECT j.repeat, j.grade, j.reason FROM judgment j JOIN judge_run r"
                " ON r.id = j.run_id WHERE j.query_id = ? AND j.passage_id = ? AND j.model = ?"
                " AND j.status = 'ok' AND j.text_key = ? AND r.endpoint = ?"
                " AND r.prompt_version = ? AND r.params = ? ORDER BY j.id",
                (
                    pair.query_row,
                    pair.passage_row,
                    model,
                    texts,
                    s.endpoint,
                    s.template.version,
                    s.params_json,
                ),
            )
            answers = standing((repeat, True, (grade, reason)) for repeat, grade, reason in rows)
            suggestions.rewrite(
                conn,
                pair,
                model,
                [answer for _, answer in answers.values()],
                endpoint=s.endpoint,
                prompt_version=s.template.version,
                params=s.params_json,
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


def _common_values(o: Outcome, stamp: str) -> tuple[object, ...]:
    s = o.slot
    return (
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


K = TypeVar("K", bound=Hashable)
R = TypeVar("R")


def standing(rows: Iterable[tuple[K, bool, R]]) -> dict[K, tuple[bool, R]]:
    """The answer that stands for each slot, from ``(slot, ok, answer)`` rows oldest
    first: its latest good answer (a later failure does not replace it), else its latest
    failure."""
    found: dict[K, tuple[bool, R]] = {}
    for slot, ok, answer in rows:
        before = found.get(slot)
        if not ok and before is not None and before[0]:
            continue
        found[slot] = (ok, answer)
    return found


def latest_run(conn: sqlite3.Connection, kind: str = PASSAGES) -> sqlite3.Row | None:
    """The last run of ``kind`` in the file, with its prompt's text."""
    conn.row_factory = sqlite3.Row
    try:
        found: sqlite3.Row | None = conn.execute(
            "SELECT r.*, p.text AS prompt_text FROM judge_run r"
            " JOIN prompt p ON p.version = r.prompt_version WHERE r.kind = ?"
            " ORDER BY r.id DESC LIMIT 1",
            (kind,),
        ).fetchone()
    finally:
        conn.row_factory = None
    return found


@dataclass(frozen=True)
class JudgedAnswer:
    """The standing answer of one slot (model, repeat) about (sample, criterion): its
    latest good answer about the current texts, else its latest failure."""

    model: str
    repeat: int
    grade: int | None
    chunks: tuple[ChunkGrade, ...] | None
    reason: str | None
    error: str | None

    @property
    def ok(self) -> bool:
        return self.error is None


AnswerKey = tuple[str, str, str]  # (system, sample id, criterion)


def judged_answers(
    conn: sqlite3.Connection,
    items: Iterable[AnswerItem],
    criteria: Iterable[str],
) -> dict[AnswerKey, list[JudgedAnswer]]:
    """For each (system, sample, criterion) of ``items`` the judge answered about as they
    read now, one standing answer per (model, repeat), ordered by model then repeat."""
    current: dict[tuple[int, str, str], tuple[str, str]] = {}
    for item in items:
        for criterion in criteria:
            current[item.system_row, item.sample_id, criterion] = (
                answer_text_key(item, criterion),
                item.system,
            )
    by_target: dict[tuple[int, str, str], list[tuple[tuple[str, int], bool, JudgedAnswer]]]
    by_target = defaultdict(list)
    rows = conn.execute(
        "SELECT system_id, sample_id, criterion, text_key, model, repeat, status, grade,"
        " chunks, reason, error FROM answer_judgment ORDER BY id"
    )
    for system_row, sample_id, criterion, texts, model, repeat, status, grade, *rest in rows:
        chunks, reason, error = rest
        key = (system_row, sample_id, criterion)
        wanted = current.get(key)
        if wanted is None or wanted[0] != texts:
            continue
        ok = status != "failed"
        answer = JudgedAnswer(model, repeat, grade, _chunks(chunks), reason, None if ok else error)
        by_target[key].append(((model, repeat), ok, answer))
    out: dict[AnswerKey, list[JudgedAnswer]] = {}
    for key, found in by_target.items():
        slots = standing(found)
        out[current[key][1], key[1], key[2]] = [slots[k][1] for k in sorted(slots)]
    return out


def _chunks_json(chunks: tuple[ChunkGrade, ...] | None) -> str | None:
    if chunks is None:
        return None
    return json.dumps(
        [{"position": c.position, "grade": c.grade, "reason": c.reason} for c in chunks],
        ensure_ascii=False,
    )


def _chunks(text: str | None) -> tuple[ChunkGrade, ...] | None:
    if text is None:
        return None
    return tuple(ChunkGrade(c["position"], c["grade"], c["reason"]) for c in json.loads(text))


@dataclass(frozen=True)
class Usage:
    requests: int
    prompt_tokens: int
    completion_tokens: int


def run_usage(conn: sqlite3.Connection, run_id: int, kind: str = ANSWERS) -> Usage:
    """Tokens the endpoint reported (its ``usage`` field) over one run's answers."""
    count, prompt, completion = conn.execute(
        "SELECT count(*), coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0)"
        f" FROM {_TABLES[kind].name} WHERE run_id = ?",
        (run_id,),
    ).fetchone()
    return Usage(int(count), int(prompt), int(completion))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
