"""The judge's answers about answer samples: what to ask, what is cached, what came back.

Like passage judgments (``judgments.py``): one row per answer slot tried, a cache key
that hashes the endpoint, model, prompt version, parameters, the sample's texts, the
criterion and the repeat, so a second run sends nothing new and a changed text asks
again. Nothing here touches human grades.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from raglabel.judge.work import AnswerItem, AnswerSlot, ChunkGrade, Outcome
from raglabel.metrics.criteria import RANKING
from raglabel.storage.judgments import JudgmentLog, Setting


@dataclass(frozen=True)
class AnswerPlan:
    slots: list[AnswerSlot]
    cached: int  # slots answered before under the same key
    items: int  # (sample, criterion) pairs the run covers
    # (criterion, NA reason) -> samples left out because an input is missing
    skipped: Counter[tuple[str, str]] = field(default_factory=Counter)


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


def plan_answers(
    conn: sqlite3.Connection,
    items: Sequence[AnswerItem],
    criteria: Sequence[str],
    setting: Setting,
    *,
    models: Sequence[str],
    repeats: int,
) -> AnswerPlan:
    """Every slot the run needs, minus those answered before under the same key; a
    (sample, criterion) whose inputs are missing is counted, never asked."""
    done = {
        key for (key,) in conn.execute("SELECT cache_key FROM answer_judgment WHERE status = 'ok'")
    }
    slots: list[AnswerSlot] = []
    cached = 0
    covered = 0
    skipped: Counter[tuple[str, str]] = Counter()
    for criterion in criteria:
        for item in items:
            reason = item.missing(criterion)
            if reason is not None:
                skipped[criterion, reason] += 1
                continue
            covered += 1
            texts = answer_text_key(item, criterion)
            for model in models:
                prefix = setting.key(model)
                for repeat in range(repeats):
                    key = _digest(
                        f"{prefix}\x1f{item.system}\x1f{item.sample_id}\x1f{criterion}"
                        f"\x1f{texts}\x1f{repeat}"
                    )
                    if key in done:
                        cached += 1
                        continue
                    slots.append(AnswerSlot(item, criterion, model, repeat, key, texts))
    return AnswerPlan(slots, cached, covered, skipped)


class AnswerJudgmentLog(JudgmentLog):
    """Where an answer run's replies go, buffered and written in short transactions."""

    def _write(self, conn: sqlite3.Connection, batch: list[Outcome], stamp: str) -> None:
        conn.executemany(
            "INSERT INTO answer_judgment (run_id, system_id, sample_id, criterion, model,"
            " repeat, cache_key, text_key, status, grade, chunks, reason, raw, error, attempts,"
            " repaired, latency_ms, prompt_tokens, completion_tokens, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [_row(self.run_id, o, stamp) for o in batch],
        )


def _row(run_id: int, o: Outcome, stamp: str) -> tuple[object, ...]:
    s = o.slot
    assert isinstance(s, AnswerSlot)
    chunks = (
        None
        if o.chunks is None
        else json.dumps(
            [{"position": c.position, "grade": c.grade, "reason": c.reason} for c in o.chunks],
            ensure_ascii=False,
        )
    )
    return (
        run_id,
        s.item.system_row,
        s.item.sample_id,
        s.criterion,
        s.model,
        s.repeat,
        s.cache_key,
        s.text_key,
        "ok" if o.ok else "failed",
        o.grade,
        chunks,
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
    standing: dict[tuple[int, str, str], dict[tuple[str, int], JudgedAnswer]] = defaultdict(dict)
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
        slots = standing[key]
        before = slots.get((model, repeat))
        if status == "failed" and before is not None and before.ok:
            continue  # a good answer stands over a later failure
        slots[model, repeat] = JudgedAnswer(
            model, repeat, grade, _chunks(chunks), reason, error if status == "failed" else None
        )
    return {
        (current[key][1], key[1], key[2]): [slots[k] for k in sorted(slots)]
        for key, slots in standing.items()
    }


def _chunks(text: str | None) -> tuple[ChunkGrade, ...] | None:
    if text is None:
        return None
    return tuple(ChunkGrade(c["position"], c["grade"], c["reason"]) for c in json.loads(text))


@dataclass(frozen=True)
class Usage:
    requests: int
    prompt_tokens: int
    completion_tokens: int


def run_usage(conn: sqlite3.Connection, run_id: int) -> Usage:
    """Tokens the endpoint reported (its ``usage`` field) over one run's answers."""
    count, prompt, completion = conn.execute(
        "SELECT count(*), coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0)"
        " FROM answer_judgment WHERE run_id = ?",
        (run_id,),
    ).fetchone()
    return Usage(int(count), int(prompt), int(completion))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
