"""Running the judge, for the CLI and the grading app alike: one place that opens the
run record, drives the HTTP workers over the slots of any task (passages, or answer
samples) and closes the record whatever happens (done, stopped by the endpoint, or
interrupted).

The passage task's own parts are here too (one query's pairs for the app's ``J``, what
lacks text); the answer task's are in ``answer_judging.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from shlex import quote
from typing import TYPE_CHECKING, Any

from raglabel.errors import UsageError
from raglabel.judge.backoff import RetryPolicy
from raglabel.judge.prompt import Template
from raglabel.judge.work import Pair, RunLimits, Tally
from raglabel.storage.judgments import (
    FLUSH_AFTER_S,
    PASSAGES,
    JudgmentLog,
    Plan,
    Setting,
    latest_run,
    plan,
)
from raglabel.storage.pair_selection import Picked, Selection, pick_pairs
from raglabel.storage.project import Project

if TYPE_CHECKING:
    from raglabel.judge.client import ChatClient
    from raglabel.judge.task import Task


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

    def client(self, api_key: str | None, limits: RunLimits, transport: Any) -> ChatClient:
        """The HTTP client a run asks through, sized by ``limits``. Imported here: the
        client (httpx) loads when a run starts, not with the app."""
        from raglabel.judge.client import ChatClient

        return ChatClient(
            self.url or self.setting.endpoint,
            api_key,
            timeout_s=limits.timeout_s,
            connections=limits.concurrency,
            transport=transport,
        )


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
    run_id: int | None = None  # the run record; None when there was nothing to ask


def execute(
    project: Project,
    work: Plan[Any],
    setup: JudgeSetup,
    limits: RunLimits,
    *,
    on_progress: Callable[[Tally], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    transport: Any = None,
) -> Finished:
    """Ask for every slot of ``work``, with the task of its kind: the HTTP workers, a
    timer that flushes the answers while they work (each is on disk within about half a
    second of arriving), and the run record, which says how the run ended even on
    Ctrl-C."""
    api_key = setup.api_key()  # refused here, before the run is recorded as started
    log = JudgmentLog.start(
        project,
        setup.setting,
        setup.models,
        setup.repeats,
        api_key_env=setup.api_key_env,
        limits=limits_to_json(limits),
        kind=work.kind,
    )
    tally = Tally(len(work.slots), cached=work.cached)
    status = "interrupted"
    try:
        # The client, the runner and the tasks' reply models (httpx, pydantic) load when
        # a run starts, not with the app.
        from raglabel.judge.runner import JudgeRun

        client = setup.client(api_key, limits, transport)
        runner = JudgeRun(
            client,
            task_of(work.kind, setup.setting),
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

        async def run() -> None:
            timer = asyncio.create_task(flusher())
            try:
                await runner.run(work.slots, cached=work.cached)
            finally:
                timer.cancel()
                await client.aclose()

        # On Ctrl-C asyncio.run has cancelled the workers; what they finished is logged.
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(run())
        tally = runner.tally
        if tally.stopped:
            status = "stopped"
        elif tally.done == tally.planned and not (should_stop and should_stop()):
            status = "done"
    finally:
        log.finish(tally, status)
    return Finished(tally, status, log.run_id)


def task_of(kind: str, setting: Setting) -> Task[Any]:
    """The judge task a run of ``kind`` asks with: passages under the setting's prompt,
    or answer samples (whose prompts the setting's version names)."""
    from raglabel.judge.task import AnswerTask, PassageTask

    return PassageTask(setting.template) if kind == PASSAGES else AnswerTask()


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
