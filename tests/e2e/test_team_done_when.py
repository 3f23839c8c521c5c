"""Issue 30's "done when", end to end: three invited annotators with overlap 2 on the demo's
30 queries each see their own queue, and the lead sees them and their pairwise alpha while
they grade.

``raglabel assign`` (a child process) shares the demo's queries among ann1, ann2 and ann3;
``raglabel serve --port 0`` (a child process) serves the project, and three websocket
clients speak the browser page's protocol (``["stdin", key]`` messages, terminal bytes
back), each with its own invite cookie, so each runs its own app process as a tab does.
Each tab says ``your assignment: 0 of 20 queries done``; ``g`` opens a query of that
annotator's own share (checked against ``assign --list --format json``); each grades a
few pairs with its own keys. Two of them land on the same query (the Queries screen's
first row is in both shares, and ``g`` serves the query at the cursor first), so they
grade the same pairs, differently. Then, the tabs still open, ``raglabel progress
--format json`` (a child process) gives each their assignment and grades, and the two
their alpha, checked against the krippendorff package on the grades in the file; and the
Progress screen of a lead's app (``--all-annotators``, in this process through Pilot)
shows the same. Every wait is for output, with generous limits: a 2-core machine running
four apps at once is slow, never wrong.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import sqlite3
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import krippendorff
import numpy as np
import pytest
from cli_helpers import child, start_serving
from textual.widgets import DataTable

from raglabel.session.options import AppOptions
from raglabel.storage.assignments import pool_sizes
from raglabel.storage.demo import build_demo
from raglabel.storage.invites import add_invite
from raglabel.storage.project import Project
from raglabel.tui.app import create_app
from raglabel.tui.screens.progress import ProgressScreen
from raglabel.web.access import Site

TEAM = ("ann1", "ann2", "ann3")
#: Each annotator's grade keys, in order: where two grade the same pairs, they differ on
#: some and agree on others, so their alpha is defined and not trivially 1.
KEYS = {"ann1": "1234", "ann2": "3322", "ann3": "2245"}
#: How long one step may take on a loaded 2-core machine (an app's start, a redraw).
PATIENCE = 120.0
#: Output stops for this long before a key goes: the tab's app is at rest.
QUIET_S = 0.5
_ESCAPES = re.compile(
    rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]"
)
GRADE_HEAD = re.compile(r"(q\d\d) \[\d+/30\] ")


def words(data: bytes) -> str:
    """The visible words of terminal output: escapes out, runs of space as one."""
    return " ".join(_ESCAPES.sub(b" ", data).decode("utf-8", "replace").split())


@dataclass
class Tab:
    """One annotator's browser tab: what its app has drawn so far."""

    name: str
    received: bytearray = field(default_factory=bytearray)
    last: float = field(default_factory=time.monotonic)
    ended: str | None = None
    landed: str | None = None  # the query g opened

    async def read(self, socket: aiohttp.ClientWebSocketResponse) -> None:
        async for message in socket:
            if message.type == aiohttp.WSMsgType.BINARY:
                self.received += message.data
                self.last = time.monotonic()
        self.ended = f"{self.name}'s tab closed"

    def text(self, start: int = 0) -> str:
        return words(bytes(self.received[start:]))

    async def until(self, found: Callable[[], Any], what: str, limit: float = PATIENCE) -> Any:
        """Wait for ``found()`` to give something true; it, or a failure saying ``what``."""
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            value = found()
            if value:
                return value
            if self.ended is not None:
                break
            await asyncio.sleep(0.05)
        raise AssertionError(
            f"{self.name}: {what} within {limit} s ({self.ended or 'tab open'});"
            f" it last drew: {self.text()[-400:]}"
        )

    async def quiet(self) -> None:
        """Wait until nothing has arrived for QUIET_S."""
        await self.until(lambda: time.monotonic() - self.last >= QUIET_S, "a moment at rest")


def shares(db: Path) -> dict[str, list[str]]:
    listed = child("assign", db, "--list", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    document = json.loads(listed.stdout)
    return {name: share["assigned"] for name, share in document["annotators"].items()}


def own_grades(db: Path, name: str) -> dict[tuple[str, str], int]:
    """The annotator's standing grades in the file, by (query, passage)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT q.ext_id, p.ext_id, c.grade FROM current_grade c"
            " JOIN query q ON q.id = c.query_id JOIN passage p ON p.id = c.passage_id"
            " JOIN annotator a ON a.id = c.annotator_id WHERE a.name = ?",
            (name,),
        ).fetchall()
    finally:
        conn.close()
    return {(str(q), str(p)): int(g) for q, p, g in rows}


def alpha_of(a: dict[tuple[str, str], int], b: dict[tuple[str, str], int]) -> float | None:
    """Ordinal alpha on the pairs both graded, by the krippendorff package; None below 2."""
    both = sorted(set(a) & set(b))
    if len(both) < 2:
        return None
    data = np.array([[a[k] for k in both], [b[k] for k in both]], dtype=float)
    return float(
        krippendorff.alpha(
            reliability_data=data, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5]
        )
    )


@dataclass
class Visit:
    """One tab's part: who, where, and the two moments it shares with the test."""

    url: str
    site: Site
    token: str
    tab: Tab
    assigned: list[str]
    graded: asyncio.Event = field(default_factory=asyncio.Event)  # set by the tab
    release: asyncio.Event = field(default_factory=asyncio.Event)  # set by the test


async def grade_in_tab(visit: Visit) -> None:
    """Open the tab, check its assignment line, g into its own share and grade its
    KEYS; say so (``graded``), and keep the tab open until ``release``."""
    tab, assigned = visit.tab, visit.assigned
    headers = {"Origin": visit.site.origin, "Cookie": f"{visit.site.cookie_name}={visit.token}"}
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(f"{visit.url}/ws?width=160&height=40", headers=headers) as socket,
    ):
        reader = asyncio.create_task(tab.read(socket))
        try:
            line = f"your assignment: 0 of {len(assigned)} queries done"
            await tab.until(lambda: line in tab.text(), f"the tab saying {line!r}")
            await tab.quiet()
            await press_g(socket, tab)
            assert tab.landed in assigned, f"{tab.name}: g opened {tab.landed}, not theirs"
            for key in KEYS[tab.name]:
                before = len(tab.received)
                await socket.send_json(["stdin", key])
                await tab.until(lambda b=before: len(tab.received) > b, f"a redraw after {key}")
                await tab.quiet()
            visit.graded.set()
            await visit.release.wait()
            await socket.send_json(["stdin", "q"])
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader


async def press_g(socket: aiohttp.ClientWebSocketResponse, tab: Tab) -> None:
    """``g`` until the Grade screen's head names a query: a key an app still starting
    gets before its table exists is lost, as a person's would be (they press again)."""
    for _ in range(5):
        start = len(tab.received)
        await socket.send_json(["stdin", "g"])
        with contextlib.suppress(AssertionError):
            found = await tab.until(
                lambda s=start: GRADE_HEAD.search(tab.text(s)), "the Grade screen", 20
            )
            tab.landed = found[1]
            await tab.quiet()
            return
    raise AssertionError(f"{tab.name}: g never opened a query: {tab.text()[-400:]}")


async def lead_sees(db: Path) -> dict[str, list[str]]:
    """The Progress screen of a lead's app on the file: each annotator's row."""
    app = create_app(AppOptions(project=db, annotator="lead", blind=False))
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.pause()
        await pilot.press("P")
        await pilot.pause()
        assert isinstance(app.screen, ProgressScreen)
        await app.workers.wait_for_complete()
        await pilot.pause()
        table = app.screen.query_one("#progress-annotators", DataTable)
        rows = [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]
    return {row[0]: row for row in rows}


async def test_three_invited_annotators_see_their_queue_and_the_lead_their_alpha(
    tmp_path: Path,
) -> None:
    db = tmp_path / "team.db"
    build_demo(db, "owner", answers=False)
    done = child("assign", db, "--annotators", ",".join(TEAM), "--overlap", "2", "--seed", "1")
    assert done.returncode == 0, done.stderr
    assigned = shares(db)
    assert sorted(assigned) == list(TEAM)
    with Project.open(db) as project:
        tokens = {name: add_invite(project, name)[0] for name in TEAM}
        # Each landing query's pool is more than the keys pressed: none gets done.
        sizes = pool_sizes(project.conn, [q for qids in assigned.values() for q in qids], 20)
    assert min(sizes.values()) > max(len(keys) for keys in KEYS.values())
    server, url = start_serving(db)
    url = url.rstrip("/")
    site = Site.make(db.resolve(), url)
    tabs = {name: Tab(name) for name in TEAM}
    visits = [Visit(url, site, tokens[name], tabs[name], assigned[name]) for name in TEAM]
    try:
        work = [asyncio.create_task(grade_in_tab(visit)) for visit in visits]
        try:
            await wait_all(work, [visit.graded.wait() for visit in visits])
            grades = {name: own_grades(db, name) for name in TEAM}
            for name in TEAM:
                assert len(grades[name]) == len(KEYS[name]), (name, grades[name])
                assert {q for q, _ in grades[name]} == {tabs[name].landed}
            # The precondition of the alpha: two annotators graded the same pairs.
            together = [
                (a, b)
                for a, b in itertools.combinations(TEAM, 2)
                if tabs[a].landed == tabs[b].landed
            ]
            assert together, {name: tab.landed for name, tab in tabs.items()}
            # The lead's command, while every tab is still open.
            report = await asyncio.to_thread(child, "progress", db, "--format", "json")
            assert report.returncode == 0, report.stderr
            figures = json.loads(report.stdout)["annotators"]
            screen = await lead_sees(db)
        finally:
            for visit in visits:
                visit.release.set()
            await asyncio.wait_for(asyncio.gather(*work, return_exceptions=True), PATIENCE)
        for task in work:
            task.result()  # a tab's failure fails the test, with its own message
    finally:
        server.terminate()
        try:
            _, log = server.communicate(timeout=60)
        except Exception:
            server.kill()
            _, log = server.communicate()
    for name in TEAM:
        mine = figures[name]
        assert (mine["assigned"], mine["done"], mine["grades"]) == (20, 0, len(KEYS[name]))
        row = screen[name]
        assert row[1:4] == ["20", "0", str(len(KEYS[name]))], row
    for a, b in itertools.combinations(TEAM, 2):
        want = alpha_of(grades[a], grades[b])
        got = figures[a]["alpha_with"][b]
        assert got == figures[b]["alpha_with"][a]
        if (a, b) in together:
            assert want is not None and got == pytest.approx(want, abs=1e-9)
            assert f"{b} {want:.2f}" in screen[a][6] and f"{a} {want:.2f}" in screen[b][6]
        else:
            assert want is None and got is None
    assert "Traceback" not in log and "could not start" not in log, log


async def wait_all(work: list[asyncio.Task[None]], events: list[Awaitable[bool]]) -> None:
    """Every event set, or the first tab's failure raised."""
    waiting = asyncio.ensure_future(asyncio.gather(*events))
    pending: set[asyncio.Future[Any]] = {waiting, *work}
    deadline = time.monotonic() + 5 * PATIENCE
    while not waiting.done():
        finished, pending = await asyncio.wait(
            pending, timeout=deadline - time.monotonic(), return_when=asyncio.FIRST_COMPLETED
        )
        if not finished:
            raise AssertionError("the tabs did not all grade in time")
        for task in finished:
            if task is not waiting:
                task.result()  # a tab ended early: its error
                raise AssertionError("a tab ended before the progress was read")
