"""How many annotators one host serves: N browser tabs grading at once through raglabel serve.

    python benchmarks/serve.py [--tabs 1,4,8,16] [--grades 20] [--pause 1.0] [--keep]

For each N, a fresh copy of the demo project is served by ``raglabel serve --port 0``
(a child process, as in use) and N annotators are invited. N websocket clients speak the
browser page's protocol (``["stdin", key]`` messages, terminal bytes back), each with its
own invite cookie and the server's Origin, so every tab runs its own app process exactly
as a browser tab does; no browser draws, so the figures are the server's and the apps'.

Each tab waits for its app's first screen (the start time), opens a query with Enter,
then presses ``--grades`` grade keys ``--pause`` seconds apart, a brisk annotator's pace.
A grade's latency runs from sending the key to the first terminal bytes coming back: the
app saves the grade (committed to the file) before it redraws. At the end the file must
hold exactly N x grades grade events by the invited annotators, or the run fails.

The peer is the same server with one tab, in the same run: the table gives each N's p95
latency as a ratio to it. Memory is the resident size of the server and its app
processes, read from /proc while every tab is open.
"""

from __future__ import annotations

import asyncio
import random
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
from common import (
    add_grades,
    add_keep,
    make_parser,
    markdown_table,
    nearest_rank,
    parse,
    print_goals,
    scratch_directory,
)

from raglabel.storage.demo import build_demo
from raglabel.storage.invites import add_invite
from raglabel.storage.project import Project
from raglabel.web.access import Site

#: Quiet this long means the app has finished drawing.
QUIET_S = 0.5
#: Goal: a grade shows as saved within this many milliseconds at the 95th percentile.
GOAL_P95_MS = 250.0


@dataclass
class TabFigures:
    start_s: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    error: str | None = None


@dataclass
class Round:
    tabs: int
    starts_s: list[float]
    latencies_ms: list[float]
    rss_mib: float
    landed: int
    expected: int
    errors: list[str]


async def drain(socket: aiohttp.ClientWebSocketResponse, quiet: float) -> None:
    """Read until the app has been silent for ``quiet`` seconds."""
    while True:
        try:
            message = await asyncio.wait_for(socket.receive(), quiet)
        except TimeoutError:
            return
        if message.type in (aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
            raise RuntimeError("the tab's app ended")


async def open_query(socket: aiohttp.ClientWebSocketResponse) -> None:
    """Enter on the Queries screen, until the Grade screen is drawn (its footer names
    grade 1 "junk"). An app still starting on a loaded machine redraws on its own
    (the runs' scores arrive in the background), so any output is not proof; and a key
    it got before its table existed is lost, as a person's would be (they press again)."""
    for _ in range(5):
        await socket.send_json(["stdin", "\r"])
        deadline = time.perf_counter() + 15
        while time.perf_counter() < deadline:
            try:
                message = await asyncio.wait_for(socket.receive(), 1)
            except TimeoutError:
                continue
            if message.type in (aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
                raise RuntimeError("the tab's app ended")
            if message.type == aiohttp.WSMsgType.BINARY and b"junk" in message.data:
                await drain(socket, QUIET_S)
                return
    raise TimeoutError("Enter never opened a query")


async def first_bytes(socket: aiohttp.ClientWebSocketResponse, timeout: float = 120) -> None:
    while True:
        message = await asyncio.wait_for(socket.receive(), timeout)
        if message.type == aiohttp.WSMsgType.BINARY:
            return
        if message.type in (aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
            raise RuntimeError("the tab's app ended before drawing")


@dataclass
class TabPlan:
    """One tab's part of a round: who it is, and how it grades."""

    url: str
    site: Site
    token: str
    grades: int
    pause: float
    seed: int
    all_open: asyncio.Barrier


async def one_tab(session: aiohttp.ClientSession, plan: TabPlan) -> TabFigures:
    figures = TabFigures()
    try:
        await _grade(session, plan, figures)
    except (aiohttp.ClientError, RuntimeError, TimeoutError, asyncio.BrokenBarrierError) as exc:
        figures.error = f"{type(exc).__name__}: {str(exc) or 'no answer in time'}"
        await plan.all_open.abort()  # a round with a tab that never opened measures nothing
    return figures


async def _grade(session: aiohttp.ClientSession, plan: TabPlan, figures: TabFigures) -> None:
    headers = {"Cookie": f"{plan.site.cookie_name}={plan.token}", "Origin": plan.site.origin}
    started = time.perf_counter()
    async with session.ws_connect(f"{plan.url}ws?width=120&height=32", headers=headers) as socket:
        await first_bytes(socket)
        figures.start_s = time.perf_counter() - started
        await drain(socket, QUIET_S)
        await plan.all_open.wait()
        await open_query(socket)
        rng = random.Random(plan.seed)
        for _ in range(plan.grades):
            await asyncio.sleep(plan.pause * rng.uniform(0.5, 1.5))
            sent = time.perf_counter()
            await socket.send_json(["stdin", str(rng.randint(1, 5))])
            await first_bytes(socket)
            figures.latencies_ms.append((time.perf_counter() - sent) * 1000)
            await drain(socket, 0.05)
        await socket.send_json(["stdin", "q"])


def resident_mib(root: int) -> float:
    """Resident memory of a process and all its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(
                line.split(":", 1) for line in status.read_text().splitlines() if ":" in line
            )
        except OSError:
            continue
        children.setdefault(int(fields["PPid"].strip()), []).append(int(fields["Pid"].strip()))
    total_kib = 0
    stack = [root]
    while stack:
        pid = stack.pop()
        stack.extend(children.get(pid, []))
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total_kib += int(line.split()[1])
        except OSError:
            continue
    return total_kib / 1024


def landed(db: Path, names: Sequence[str]) -> int:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        marks = ",".join("?" * len(names))
        row = conn.execute(
            "SELECT count(*) FROM event e JOIN annotator a ON a.id = e.annotator_id"
            f" WHERE e.kind = 'grade' AND a.name IN ({marks})",
            list(names),
        ).fetchone()
    finally:
        conn.close()
    return int(row[0])


async def one_round(pristine: Path, scratch: Path, tabs: int, grades: int, pause: float) -> Round:
    db = scratch / f"serve-{tabs}.db"
    shutil.copyfile(pristine, db)
    names = [f"annotator{i:02d}" for i in range(tabs)]
    with Project.open(db) as project:
        tokens = [add_invite(project, name)[0] for name in names]
    # The server's log, with whatever an app wrote to stderr before it ended.
    log = (scratch / f"serve-{tabs}.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "raglabel", "serve", str(db), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().rsplit(" at ", 1)[1].strip()
        site = Site.make(db, url.rstrip("/"))
        barrier = asyncio.Barrier(tabs + 1)
        async with aiohttp.ClientSession() as session:
            work = [
                asyncio.create_task(
                    one_tab(session, TabPlan(url, site, token, grades, pause, seed, barrier))
                )
                for seed, token in enumerate(tokens)
            ]
            try:
                await barrier.wait()
                rss = resident_mib(server.pid)
            except asyncio.BrokenBarrierError:
                rss = 0.0
            figures = await asyncio.gather(*work)
    finally:
        server.terminate()
        server.wait(30)
        log.close()
    return Round(
        tabs=tabs,
        starts_s=[f.start_s for f in figures],
        latencies_ms=[ms for f in figures for ms in f.latencies_ms],
        rss_mib=rss,
        landed=landed(db, names),
        expected=tabs * grades,
        errors=[f.error for f in figures if f.error is not None],
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = make_parser(__doc__)
    parser.add_argument(
        "--tabs", default="1,4,8,16", help="tab counts to try, comma-separated (default 1,4,8,16)"
    )
    add_grades(parser, 20, "grade keys each tab presses")
    parser.add_argument(
        "--pause", type=float, default=1.0, help="mean seconds between a tab's keys (default 1)"
    )
    add_keep(parser)
    args = parse(parser, argv)
    counts = sorted({int(n) for n in args.tabs.split(",")} | {1})
    rounds: list[Round] = []
    with scratch_directory("raglabel-serve-bench-", args.keep) as scratch:
        pristine = scratch / "demo.db"
        build_demo(pristine, "owner", answers=True)
        for tabs in counts:
            print(f"{tabs} tab(s)...", file=sys.stderr)
            rounds.append(asyncio.run(one_round(pristine, scratch, tabs, args.grades, args.pause)))
    for r in rounds:
        for error in sorted(set(r.errors)):
            print(f"{r.tabs} tab(s): {r.errors.count(error)} tab(s) failed: {error}")
    rounds = [r for r in rounds if r.latencies_ms]
    peer = nearest_rank(rounds[0].latencies_ms, 0.95)
    rows = []
    for r in rounds:
        p95 = nearest_rank(r.latencies_ms, 0.95)
        rows.append(
            [
                str(r.tabs),
                f"{nearest_rank(r.starts_s, 0.5):.1f} / {max(r.starts_s):.1f}",
                f"{nearest_rank(r.latencies_ms, 0.5):.0f}",
                f"{p95:.0f}",
                f"{max(r.latencies_ms):.0f}",
                f"{p95 / peer:.2f}x",
                f"{r.rss_mib:.0f} ({r.rss_mib / r.tabs:.0f} a tab)",
                f"{r.landed}/{r.expected}",
            ]
        )
    print(
        markdown_table(
            [
                "tabs",
                "app start s (median / max)",
                "grade p50 ms",
                "grade p95 ms",
                "max ms",
                "p95 vs 1 tab",
                "RSS MiB",
                "grades landed",
            ],
            rows,
        )
    )
    goals = [(r.landed == r.expected, f"{r.tabs} tab(s): every grade landed") for r in rounds]
    goals += [
        (
            nearest_rank(r.latencies_ms, 0.95) <= GOAL_P95_MS,
            f"{r.tabs} tab(s): grade p95 <= {GOAL_P95_MS:.0f} ms",
        )
        for r in rounds
    ]
    print_goals(goals)
    return 0 if all(r.landed == r.expected for r in rounds) else 1


if __name__ == "__main__":
    sys.exit(main())
