"""The grading app's ``J`` says why the judge failed (issue 26): its status line counts
the failures by kind, and a run its first answers all fail stops, saying why."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from test_app import UNGRADED, drive, open_query
from textual.widgets import Static

from raglabel.cli.main import main

if TYPE_CHECKING:
    from chat_server import ChatServer
    from textual.pilot import Pilot

    from raglabel.tui.app import GradingApp


async def test_judge_key_reports_why_answers_failed(
    demo_db: Path, chat_server: type[ChatServer]
) -> None:
    with chat_server() as server:

        async def scenario(app: GradingApp, pilot: Pilot[Any]) -> None:
            # A first CLI run (on another query) sets up how the app asks, one request at
            # a time (so exactly five answers come back); then the endpoint answers in prose.
            other = app.session.catalog.queries[UNGRADED + 1].ext_id
            args = ["judge", str(demo_db), "--base-url", server.base_url, "--model", "m"]
            args += ["--query", other, "--concurrency", "1"]
            assert await asyncio.to_thread(main, args) == 0
            server.fault_kinds = ("nonjson",)
            server.fault_rate = 1.0
            screen = await open_query(app, pilot, UNGRADED)
            await pilot.press("J")
            for _ in range(300):
                if app.judging is None:
                    break
                await pilot.pause(0.05)
            assert app.judging is None
            await pilot.pause()
            line = str(screen.query_one("#judge-progress", Static).render())
            qid = app.session.catalog.queries[UNGRADED].ext_id
            assert line == f"judge {qid}: stopped, 0 new suggestions, 5 failed (5 not JSON)"
            messages = [n.message for n in app._notifications]
            assert any(
                m.startswith(
                    f"Judge stopped on {qid}: the first 5 answers all failed the same"
                    " way (not JSON)"
                )
                for m in messages
            ), messages

        await drive(demo_db, scenario)
