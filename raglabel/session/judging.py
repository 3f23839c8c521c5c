"""Running the judge over a chosen set of pairs, for the CLI and the grading app alike:
one place that opens the run record, drives the HTTP workers and closes the record
whatever happens (done, stopped by the endpoint, or interrupted)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from shlex import quote
from typing import Any

from raglabel.errors import UsageError
from raglabel.judge.backoff import RetryPolicy
from raglabel.judge.prompt import Template
from raglabel.judge.work import AnswerSlot, Pair, RunLimits, Slot, Tally
from raglabel.storage.judgments import (
    FLUSH_AFTER_S,
    JudgmentLog,
    Picked,
    Plan,
    Selection,
    Setting,
    latest_run,
    pick_pairs,
    plan,
)
from raglabel.storage.project import Project


@dataclass(frozen=True)
class JudgeSetup:
    """How to ask: endpoint, models, prompt and parameters; the key's variable name."""

    setting: Setting
    models: tuple[str, ...]
    repeats: int = 1
    api_key_env: str | None = "OPENAI_API_KEY"
    url: str | None = None  # where requests go, when it holds more than the stored endpoint

    def api_key(self) -> str | None:
        """The key from the environment, surrounding white space dropped (a key pasted
        from a file often ends in a line break); a key that still holds a control or
        non-ASCII character is refused before any request, naming only the variable."""
        if not self.api_key_env:
            return None
        key = (os.environ.get(self.api_key_env) or "").strip()
        if not key:
            return None
        if not key.isascii() or not key.isprintable():
            raise UsageError(
                f"${self.api_key_env} holds a character no HTTP header may carry (a control"
                " or non-ASCII character); set it to the key alone"
            )
        return key


def latest_setup(project: Project) -> tuple[JudgeSetup, RunLimits] | None:
    """The setup and limits of the last judge run in this file, so the app asks as the
    CLI did (at the stored endpoint, which has lost any query string and user info)."""
    row = latest_run(project.conn)
    if row is None:
        return None
    template = Template(row["prompt_text"], row["prompt_version"])
    setting = Setting(row["endpoint"], template, json.loads(row["params"]))
    setup = JudgeSetup(
        setting, tuple(json.loads(row["models"])), row["repeats"], row["api_key_env"]
    )
    return setup, limits_from_json(row["limits"])


def limits_to_json(limits: RunLimits) -> str:
    return json.dumps(
        {
            "concurrency": limits.concurrency,
            "requests_per_minute": limits.requests_per_minute,
            "attempts": limits.retry.attempts,
            "timeout_s": limits.timeout_s,
        }
    )


def limits_from_json(text: str | None) -> RunLimits:
    stored = json.loads(text) if text else {}
    return RunLimits(
        concurrency=int(stored.get("concurrency", 8)),
        requests_per_minute=stored.get("requests_per_minute"),
        retry=RetryPolicy(attempts=int(stored.get("attempts", RetryPolicy().attempts))),
        timeout_s=float(stored.get("timeout_s", 60.0)),
    )


@dataclass(frozen=True)
class Finished:
    tally: Tally
    status: str  # done, stopped (the endpoint refused the run) or interrupted


def execute(
    project: Project,
    work: Plan,
    setup: JudgeSetup,
    limits: RunLimits,
    *,
    on_progress: Callable[[Tally], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    transport: Any = None,
) -> Finished:
    """Ask for every slot of ``work``; each answer is on disk within about half a second
    of arriving, and the run record says how it ended even on Ctrl-C."""
    api_key = setup.api_key()  # refused here, before the run is recorded as started
    log = JudgmentLog.start(
        project,
        setup.setting,
        setup.models,
        setup.repeats,
        api_key_env=setup.api_key_env,
        limits=limits_to_json(limits),
    )
    return drive(
        log,
        work.slots,
        work.cached,
        setup,
        limits,
        api_key=api_key,
        template=setup.setting.template,
        on_progress=on_progress,
        should_stop=should_stop,
        transport=transport,
    )


def drive(
    log: JudgmentLog,
    slots: Sequence[Slot | AnswerSlot],
    cached: int,
    setup: JudgeSetup,
    limits: RunLimits,
    *,
    api_key: str | None,
    template: Template | None,
    on_progress: Callable[[Tally], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    transport: Any = None,
) -> Finished:
    """The run driver passage and answer runs share: the HTTP workers, a timer that
    flushes ``log`` while they work, and the run record closed whatever happens.
    ``template`` is the passage prompt (None for a run of answer slots)."""
    from raglabel.judge.client import ChatClient
    from raglabel.judge.runner import JudgeRun

    tally = Tally(len(slots), cached=cached)
    status = "interrupted"
    try:
        client = ChatClient(
            setup.url or setup.setting.endpoint,
            api_key,
            timeout_s=limits.timeout_s,
            connections=limits.concurrency,
            transport=transport,
        )
        runner = JudgeRun(
            client,
            template,
            params=setup.setting.params,
            limits=limits,
            on_outcome=log.add,
            on_progress=on_progress,
            should_stop=should_stop,
        )

        async def flusher() -> None:
            while True:
                await asyncio.sleep(FLUSH_AFTER_S / 2)
                log.flush_if_due()

        async def work() -> None:
            timer = asyncio.create_task(flusher())
            try:
                await runner.run(slots, cached=cached)
            finally:
                timer.cancel()
                await client.aclose()

        # On Ctrl-C asyncio.run has cancelled the workers; what they finished is logged.
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(work())
        tally = runner.tally
        if tally.stopped:
            status = "stopped"
        elif tally.done == tally.planned and not (should_stop and should_stop()):
            status = "done"
    finally:
        log.finish(tally, status)
    return Finished(tally, status)


def missing_text(lacking: list[Pair], db: str | Path) -> str:
    """What lacks text among ``lacking`` and the import that adds it."""
    queries = len({p.query_row for p in lacking if p.lacks_query})
    passages = len({p.passage_row for p in lacking if p.lacks_passage})
    parts = []
    if queries:
        verb = "query has" if queries == 1 else "queries have"
        parts.append(f"{queries} {verb} no text (add it with raglabel import {db} --queries FILE)")
    if passages:
        verb = "passage has" if passages == 1 else "passages have"
        parts.append(
            f"{passages} {verb} no text (add it with raglabel import {db} --passages FILE)"
        )
    return " and ".join(parts)


def text_refusal(picked: Picked, db: str | Path, *, whose: str = "the", skip_hint: str) -> str:
    """Why a run refuses pairs with no query or passage text (the judge would grade an
    empty string), how to add the text, and how to judge the others."""
    lacking, total = len(picked.without_text), len(picked.pairs)
    details = missing_text(picked.without_text, db)
    if lacking == total:
        return f"none of {whose} {total} pairs has text to show the judge: {details}"
    verb = "has" if lacking == 1 else "have"
    return (
        f"{lacking} of {whose} {total} pairs {verb} no text to show the judge: {details};"
        f" or judge the {total - lacking} others with {skip_hint}"
    )


def judge_query(
    path: Path,
    qid: str,
    setup: JudgeSetup,
    limits: RunLimits,
    *,
    on_progress: Callable[[Tally], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> Finished:
    """Suggestions for one query's ungraded candidates, on a connection of its own (the
    app calls this from a worker thread while grading goes on)."""
    with Project.open(path) as project:
        picked = pick_pairs(project.conn, Selection(queries=(qid,)))
        if picked.without_text:
            # As the CLI does without --skip-missing-text: the judge never grades an
            # empty query or passage, and never leaves pairs out without saying so.
            hint = f"raglabel judge {quote(str(path))} --query {quote(qid)} --skip-missing-text"
            raise UsageError(text_refusal(picked, path, whose="this query's", skip_hint=hint))
        work = plan(project.conn, picked.pairs, setup.setting, setup.models, setup.repeats)
        if not work.slots:
            return Finished(Tally(0, cached=work.cached), "done")
        return execute(
            project, work, setup, limits, on_progress=on_progress, should_stop=should_stop
        )


def status_line(qid: str, finished: Finished) -> str:
    """The grading app's line after ``J`` on query ``qid``: what came back, and why
    answers failed, by kind (as the CLI's summary counts them)."""
    t = finished.tally
    failed = f"{t.failed} failed{t.failed_why()}"
    if t.stopped:
        return f"judge {qid}: stopped, {t.ok} new suggestions, {failed}"
    return f"judge {qid}: {t.ok} new suggestions, {failed}, {t.cached} already there"
