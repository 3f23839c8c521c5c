"""Running the judge over a chosen set of pairs, for the CLI and the grading app alike:
one place that opens the run record, drives the HTTP workers and closes the record
whatever happens (done, stopped by the endpoint, or interrupted)."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raglabel.judge.prompt import Template
from raglabel.judge.slots import Tally
from raglabel.storage.judgments import (
    JudgmentLog,
    Plan,
    Selection,
    Setting,
    latest_run,
    plan,
    select_pairs,
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
        return os.environ.get(self.api_key_env) or None if self.api_key_env else None


def latest_setup(conn: sqlite3.Connection) -> JudgeSetup | None:
    """The setup of the last judge run in this file, so the app asks as the CLI did."""
    row = latest_run(conn)
    if row is None:
        return None
    template = Template(row["prompt_text"], row["prompt_version"])
    setting = Setting(row["endpoint"], template, json.loads(row["params"]))
    return JudgeSetup(setting, tuple(json.loads(row["models"])), row["repeats"], row["api_key_env"])


@dataclass(frozen=True)
class Finished:
    tally: Tally
    status: str  # done, stopped (the endpoint refused the run) or interrupted


def execute(
    project: Project,
    work: Plan,
    setup: JudgeSetup,
    limits: Any,
    *,
    on_progress: Callable[[Tally], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    timeout_s: float = 60.0,
    transport: Any = None,
) -> Finished:
    """Ask for every slot of ``work``; each answer is on disk within half a second of
    arriving, and the run record says how it ended even on Ctrl-C."""
    from raglabel.judge.client import ChatClient
    from raglabel.judge.runner import JudgeRun

    log = JudgmentLog.start(project, setup.setting, setup.models, setup.repeats, setup.api_key_env)
    client = ChatClient(
        setup.url or setup.setting.endpoint,
        setup.api_key(),
        timeout_s=timeout_s,
        connections=limits.concurrency,
        transport=transport,
    )
    runner = JudgeRun(
        client,
        setup.setting.template,
        params=setup.setting.params,
        limits=limits,
        on_outcome=log.add,
        on_progress=on_progress,
        should_stop=should_stop,
    )

    async def drive() -> None:
        try:
            await runner.run(work.slots, cached=work.cached)
        finally:
            await client.aclose()

    status = "interrupted"
    try:
        asyncio.run(drive())
        if runner.tally.stopped:
            status = "stopped"
        elif runner.tally.done == runner.tally.planned:
            status = "done"
    except KeyboardInterrupt:
        # asyncio.run has cancelled the workers; what they finished is in the log.
        pass
    finally:
        log.finish(runner.tally, status)
    return Finished(runner.tally, status)


def judge_query(
    path: Path,
    qid: str,
    setup: JudgeSetup,
    *,
    on_progress: Callable[[Tally], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> Finished:
    """Suggestions for one query's ungraded candidates, on a connection of its own (the
    app calls this from a worker thread while grading goes on)."""
    from raglabel.judge.runner import RunLimits

    with Project.open(path) as project:
        pairs = select_pairs(project.conn, Selection(queries=(qid,)))
        work = plan(project.conn, pairs, setup.setting, setup.models, setup.repeats)
        if not work.slots:
            return Finished(Tally(0, cached=work.cached), "done")
        return execute(
            project,
            work,
            setup,
            RunLimits(concurrency=8),
            on_progress=on_progress,
            should_stop=should_stop,
        )
