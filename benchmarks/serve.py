"""How brisk one host's raglabel serve stays: N browser tabs grading at once, alone or
beside the lead's own commands and an LLM judge.

    python benchmarks/serve.py [--tabs 1,4,8,16] [--grades 20] [--pause 1.0] [--keep]
    python benchmarks/serve.py --tabs 10 --grades 100 --lead 5 --judge

For each N, a fresh copy of the demo project is served by ``raglabel serve --port 0``
(a child process, as in use) and N annotators are invited. N websocket clients speak the
browser page's protocol (``["stdin", key]`` messages, terminal bytes back), each with its
own invite cookie and the server's Origin, so every tab runs its own app process exactly
as a browser tab does; they offer permessage-deflate as browsers do, so the server
compresses. No browser draws, so the figures are the server's and the apps'.

Each tab waits for its app's first screen (the start time), opens a query with Enter,
then presses ``--grades`` grade keys about ``--pause`` seconds apart, a brisk
annotator's pace, moving on to the next query (``n``, not timed) every GRADES_PER_QUERY
grades. A key goes once the tab's screen has been still for QUIET_BEFORE_KEY_S (so no
output of the last key is still on its way; after QUIET_WAIT_MAX_S it goes anyway, and
the breakdown counts such keys apart), and its latency runs from sending it
to the first terminal bytes back: the app saves the grade (committed to the file) before
it redraws. The redraw's bytes are all the tab receives until its next key. At the end
the file must hold exactly as many grade events by the invited annotators as keys were
sent, every tab must have sent all of its keys, or the run fails.

The scenario (``--lead S``, ``--judge``) runs while the tabs grade. ``--lead S``: every S
seconds (start to start; a round that runs over starts the next at once) the lead runs
``raglabel eval DB``, ``raglabel export DB --qrels F`` and ``raglabel backup DB COPY``
one after another, each a whole process. ``--judge``: ``raglabel judge DB`` pre-fills
suggestions against the loopback chat server of the tests (tests/chat_server.py, in a
process of its own) that answers after JUDGE_LATENCY_S and fails JUDGE_FAULT_RATE of
calls (429s, 5xx, dropped and cut connections, broken JSON); each run asks under a new
model name, so a judge is asking and writing for the whole round.

Where the time goes, per grade (the breakdown table):

* the server's side, from ``RAGLABEL_SERVE_TRACE`` (raglabel/web/trace.py): key to
  server, server to the app's stdin, the app (stdin to its first output read back), and
  that output to the tab. A raglabel without the trace (an older snapshot) gives the
  latency alone;
* what was going on as the key was sent (at that moment, not over the wait, which is
  longer for a slow grade and would overlap more of everything): one of the lead's
  processes (from their start and end); SQLite's WAL write lock held by another tab's
  app or the judge, or its checkpoint lock held, from ``/proc/locks`` read every
  SAMPLE_S by a process of its own (holds shorter than that can be missed). Whether
  the grade's own app took the write lock as another writer let it go (it queued
  behind it), and how long it held it (its commit). And the most tasks runnable at
  once on the host in the RUNNABLE_WINDOW_S after the key (``/proc/loadavg``, same
  sampler): more than one a core means something waited for a core.

The peer is one tab alone (no lead, no judge), served the same way in the same run: the
table gives each round's p95 latency as a ratio to it. Memory is the resident size of
the server and its app processes, read from /proc while every tab is open. Every sample
goes to ``results/serve-<UTC time>.json``.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import json
import multiprocessing
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

import aiohttp
from common import (
    HERE,
    add_grades,
    add_keep,
    machine,
    make_parser,
    markdown_table,
    nearest_rank,
    parse,
    print_goals,
    raglabel_path,
    scratch_directory,
    utc_stamp,
    versions,
    write_results,
)

from raglabel.storage.demo import build_demo
from raglabel.storage.invites import add_invite
from raglabel.storage.project import Project
from raglabel.web.access import Site

#: Quiet this long means the app has finished drawing.
QUIET_S = 0.5
#: A tab moves to the next query after this many grades (the demo's queries have 27-39
#: candidates, some of them graded already).
GRADES_PER_QUERY = 10
#: A key goes once the tab has received nothing for this long, so that the first bytes
#: after it are its own redraw, not the tail of the last one.
QUIET_BEFORE_KEY_S = 0.15
#: The longest a key waits for that quiet (a tab that never stops drawing still grades).
QUIET_WAIT_MAX_S = 10.0
#: The Grade screen's head: the query's number among all, ``[1/30]``.
GRADE_SCREEN_HEAD = re.compile(rb"\[\d+/\d+\] ")
#: Goal: a grade shows as saved within this many milliseconds at the 95th percentile.
GOAL_P95_MS = 250.0
#: Goal (issue 30): and within this many at the 99th, lead and judge running.
GOAL_P99_MS = 50.0
#: The judge's stand-in model: seconds a reply takes, the share of calls that fail.
JUDGE_LATENCY_S = 0.3
JUDGE_FAULT_RATE = 0.05
JUDGE_CONCURRENCY = 4
#: How often the sampler reads /proc/locks and /proc/loadavg.
SAMPLE_S = 0.002
#: How long after a key the most runnable tasks are looked for.
RUNNABLE_WINDOW_S = 0.02
#: Bytes of the WAL index (-shm) that SQLite's unix VFS locks: the writer's, the
#: checkpointer's (WAL_WRITE_LOCK and WAL_CKPT_LOCK at offset 120).
WRITE_LOCK_BYTE = 120
CHECKPOINT_LOCK_BYTE = 121
#: ``raglabel judge``'s status when interrupted (Ctrl-C, or SIGINT from here).
JUDGE_INTERRUPTED = 130


@dataclass
class Grade:
    """One grade key: when it went, when the first bytes came back, what came back, and
    the server's stamps of it (monotonic seconds)."""

    tab: str
    sent: float
    first: float
    first_bytes: int
    redraw_bytes: int = 0
    redraw_frames: int = 0
    #: Sent while the screen still drew (no QUIET_BEFORE_KEY_S of quiet within
    #: QUIET_WAIT_MAX_S): its first bytes may not be its own redraw.
    unquiet: bool = False
    received: float | None = None
    written: float | None = None
    read: float | None = None
    out_bytes: int | None = None
    own_write_ms: float | None = None
    runnable: int | None = None
    during: list[str] = field(default_factory=list)

    @property
    def ms(self) -> float:
        return (self.first - self.sent) * 1000


@dataclass
class TabFigures:
    start_s: float = 0.0
    grades: list[Grade] = field(default_factory=list)
    error: str | None = None


@dataclass
class Span:
    """A process of the scenario: what, when (monotonic seconds), how it ended."""

    what: str
    pid: int
    start: float
    end: float
    status: int
    said: str


@dataclass
class Hold:
    """A lock on the WAL index held from ``start`` to ``end`` by process ``pid``."""

    lock: str
    pid: int
    start: float
    end: float


@dataclass
class Round:
    tabs: int
    scenario: str
    starts_s: list[float]
    grades: list[Grade]
    rss_mib: float
    landed: int
    planned: int
    errors: list[str]
    lead: list[Span] = field(default_factory=list)
    judge: list[Span] = field(default_factory=list)
    holds: list[Hold] = field(default_factory=list)
    chat_faults: dict[str, int] = field(default_factory=dict)
    traced: bool = False
    #: The tabs' app processes (pid to annotator), and the runnable tasks sampled.
    apps: dict[int, str] = field(default_factory=dict)
    runnable: list[tuple[float, int]] = field(default_factory=list)

    @property
    def latencies_ms(self) -> list[float]:
        return [g.ms for g in self.grades]


@dataclass(frozen=True)
class Scenario:
    """What runs beside the tabs: the lead's rounds every ``lead`` seconds (0: none),
    and the judge."""

    lead: float = 0.0
    judge: bool = False

    def describe(self) -> str:
        parts = [f"lead every {self.lead:g} s"] if self.lead else []
        parts += ["judge"] if self.judge else []
        return " + ".join(parts) or "alone"


# -- one tab --------------------------------------------------------------------------


class Screen:
    """Everything a tab receives, stamped as it arrives; and the frames' text until the
    query is open (the Grade screen is recognised by a word of its footer)."""

    def __init__(self) -> None:
        self.frames: list[tuple[float, int]] = []
        self.texts: list[bytes] = []
        self.keep_text = True
        self.arrived = asyncio.Event()
        self.closed: str | None = None

    async def read(self, socket: aiohttp.ClientWebSocketResponse) -> None:
        async for message in socket:
            if message.type == aiohttp.WSMsgType.BINARY:
                self.frames.append((time.monotonic(), len(message.data)))
                if self.keep_text:
                    self.texts.append(message.data)
                self.arrived.set()
        self.closed = "the tab's app ended"
        self.arrived.set()

    async def next_frame(self, after: int, timeout: float) -> tuple[float, int]:
        """The first frame with index ``after`` or later."""
        deadline = time.monotonic() + timeout
        while len(self.frames) <= after:
            if self.closed is not None:
                raise RuntimeError(self.closed)
            self.arrived.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no screen update in time")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.arrived.wait(), left)
        return self.frames[after]

    async def quiet(self, still: float, longest: float) -> bool:
        """Wait until nothing has arrived for ``still`` seconds (at most ``longest``);
        whether that came."""
        deadline = time.monotonic() + longest
        while self.frames:
            since = time.monotonic() - self.frames[-1][0]
            if since >= still:
                return True
            if time.monotonic() + still - since > deadline:
                return False
            await asyncio.sleep(still - since)
        return True


@dataclass
class TabPlan:
    """One tab's part of a round: who it is, and how it grades."""

    url: str
    site: Site
    annotator: str
    token: str
    grades: int
    pause: float
    seed: int
    all_open: asyncio.Barrier


async def open_query(socket: aiohttp.ClientWebSocketResponse, screen: Screen) -> None:
    """Enter on the Queries screen, until the Grade screen is drawn (its head numbers
    the query: ``[1/30]``; not its key bar, which an app that opened the query while
    its runs were still loading drew without keys). An app still starting on a loaded
    machine redraws on its own (the runs' scores arrive in the background), so any
    output is not proof; and a key it got before its table existed is lost, as a
    person's would be (they press again)."""
    for _ in range(5):
        await socket.send_json(["stdin", "\r"])
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if screen.closed is not None:
                raise RuntimeError(screen.closed)
            if any(GRADE_SCREEN_HEAD.search(text) for text in screen.texts):
                await screen.quiet(QUIET_S, 10)
                return
            await asyncio.sleep(0.05)
    raise TimeoutError(f"Enter never opened a query; the screen last drew: {last_text(screen)}")


def last_text(screen: Screen, chars: int = 300) -> str:
    """The visible text of the tab's last frames, escapes left out, for an error."""
    text = b"".join(screen.texts[-3:]).decode("utf-8", "replace")
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07", " ", text)
    return " ".join(text.split())[-chars:] or "nothing"


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
    started = time.monotonic()
    # compress=15 offers permessage-deflate as browsers do, so the server compresses.
    address = f"{plan.url}ws?width=120&height=32"
    async with session.ws_connect(address, headers=headers, compress=15) as socket:
        screen = Screen()
        reader = asyncio.create_task(screen.read(socket))
        try:
            await screen.next_frame(0, 120)
            figures.start_s = time.monotonic() - started
            await screen.quiet(QUIET_S, 30)
            await plan.all_open.wait()
            await open_query(socket, screen)
            screen.keep_text = False
            screen.texts.clear()
            rng = random.Random(plan.seed)
            for done in range(plan.grades):
                if done and done % GRADES_PER_QUERY == 0:
                    # On to the next query (untimed), as a person does once one is done:
                    # at a query's last passage the app stays there, redrawing little.
                    await socket.send_json(["stdin", "n"])
                    await screen.next_frame(len(screen.frames), 60)
                    await screen.quiet(QUIET_S, 10)
                await asyncio.sleep(plan.pause * rng.uniform(0.5, 1.5))
                still = await screen.quiet(QUIET_BEFORE_KEY_S, QUIET_WAIT_MAX_S)
                if figures.grades:
                    _close_redraw(figures.grades[-1], screen)
                index = len(screen.frames)
                sent = time.monotonic()
                await socket.send_json(["stdin", str(rng.randint(1, 5))])
                first, size = await screen.next_frame(index, 60)
                grade = Grade(plan.annotator, sent, first, size, unquiet=not still)
                figures.grades.append(grade)
            await screen.quiet(QUIET_S, 10)
            if figures.grades:
                _close_redraw(figures.grades[-1], screen)
            await socket.send_json(["stdin", "q"])
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader


def _close_redraw(grade: Grade, screen: Screen) -> None:
    """The grade's redraw: every frame from its first until now (the next key)."""
    frames = [size for at, size in screen.frames if at >= grade.first]
    grade.redraw_bytes = sum(frames)
    grade.redraw_frames = len(frames)


# -- the scenario ---------------------------------------------------------------------


def chat_server_process(conn: Connection, stop: Event) -> None:
    """Run the tests' chat server (faulty, slow) until ``stop``; send its URL, then the
    count of each fault it served. In a process of its own, so that its threads do not
    share this process's interpreter lock with the tabs being timed."""
    sys.path.insert(0, str(HERE.parent / "tests"))
    from chat_server import ChatServer

    with ChatServer(
        latency=JUDGE_LATENCY_S, fault_rate=JUDGE_FAULT_RATE, seed=30, retry_after=0.2
    ) as server:
        conn.send(server.base_url)
        stop.wait()
        conn.send(dict(Counter(r.fault for r in server.requests)))


def sampler_process(conn: Connection, shm: str, stop: Event) -> None:
    """Read /proc/locks and /proc/loadavg every SAMPLE_S until ``stop``; send every hold
    of the WAL write and checkpoint locks on ``shm`` as (lock, pid, start, end), and
    each change of the number of runnable tasks as (time, count)."""
    deadline = time.monotonic() + 120
    while not os.path.exists(shm) and time.monotonic() < deadline and not stop.is_set():
        time.sleep(0.05)
    holds: list[tuple[str, int, float, float]] = []
    runnable: list[tuple[float, int]] = []
    if os.path.exists(shm):
        st = os.stat(shm)
        device = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
        names = {str(WRITE_LOCK_BYTE): "write", str(CHECKPOINT_LOCK_BYTE): "checkpoint"}
        open_holds: dict[tuple[str, int], float] = {}
        with open("/proc/locks", "rb") as locks, open("/proc/loadavg", "rb") as load:
            while not stop.is_set():
                locks.seek(0)
                text = locks.read().decode()
                load.seek(0)
                # "0.52 0.58 0.59 3/412 12345": running/total; this process is one.
                running = int(load.read().split()[3].split(b"/")[0]) - 1
                now = time.monotonic()
                if not runnable or runnable[-1][1] != running:
                    runnable.append((now, running))
                held: set[tuple[str, int]] = set()
                for line in text.splitlines():
                    # "1: POSIX  ADVISORY  WRITE 5234 fe:00:2156772 120 120"
                    parts = line.split()
                    if len(parts) >= 8 and parts[5] == device and parts[3] == "WRITE":
                        lock = names.get(parts[6])
                        if lock is not None and parts[6] == parts[7]:
                            held.add((lock, int(parts[4])))
                for key in held - open_holds.keys():
                    open_holds[key] = now
                for key in open_holds.keys() - held:
                    holds.append((key[0], key[1], open_holds.pop(key), now))
                time.sleep(SAMPLE_S)
        now = time.monotonic()
        holds += [(lock, pid, start, now) for (lock, pid), start in open_holds.items()]
    conn.send({"holds": holds, "runnable": runnable})


@dataclass
class Helper:
    """A helper process of this script and the pipe it answers on."""

    process: multiprocessing.process.BaseProcess
    conn: Connection
    stop: Event

    @classmethod
    def start(cls, target: Callable[..., None], *args: object) -> Helper:
        context = multiprocessing.get_context("spawn")
        ours, theirs = context.Pipe()
        stop = context.Event()
        process = context.Process(target=target, args=(theirs, *args, stop), daemon=True)
        process.start()
        return cls(process, ours, stop)

    def finish(self, timeout: float = 30) -> Any:
        """Tell it to stop; what it sends last."""
        self.stop.set()
        answer = self.conn.recv() if self.conn.poll(timeout) else None
        self.process.join(timeout)
        return answer


async def timed_process(what: str, argv: list[str]) -> Span:
    """Run a raglabel command to its end; its span and its last line of output."""
    start = time.monotonic()
    child = await asyncio.create_subprocess_exec(
        *argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    output, _ = await child.communicate()
    end = time.monotonic()
    lines = output.decode(errors="replace").strip().splitlines()
    status = child.returncode if child.returncode is not None else -1
    return Span(what, child.pid, start, end, status, lines[-1] if lines else "")


def raglabel(*args: str) -> list[str]:
    return [sys.executable, "-m", "raglabel", *args]


async def lead_loop(db: Path, scratch: Path, every: float, done: asyncio.Event) -> list[Span]:
    """The lead's rounds until ``done``: eval, export, backup, one after another."""
    spans: list[Span] = []
    turn = 0
    while not done.is_set():
        begun = time.monotonic()
        turn += 1
        qrels = scratch / f"lead-{turn}.qrels"
        copy = scratch / f"lead-{turn}-backup.db"
        for what, argv in (
            ("eval", raglabel("eval", str(db))),
            ("export", raglabel("export", str(db), "--qrels", str(qrels))),
            ("backup", raglabel("backup", str(db), str(copy))),
        ):
            spans.append(await timed_process(what, argv))
        qrels.unlink(missing_ok=True)
        copy.unlink(missing_ok=True)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), max(0.0, every - (time.monotonic() - begun)))
    return spans


async def judge_loop(db: Path, base_url: str, done: asyncio.Event) -> list[Span]:
    """``raglabel judge`` runs one after another until ``done``, each under a new model
    name (so each has every candidate to ask); the one running then gets SIGINT."""
    spans: list[Span] = []
    turn = 0
    while not done.is_set():
        turn += 1
        argv = raglabel(
            "judge", str(db), "--base-url", base_url, "--model", f"bench-{turn}",
            "--concurrency", str(JUDGE_CONCURRENCY),
        )  # fmt: skip
        env = {**os.environ, "OPENAI_API_KEY": "not-needed-on-loopback"}
        start = time.monotonic()
        child = await asyncio.create_subprocess_exec(
            *argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
        )
        ended = asyncio.create_task(child.communicate())
        stop = asyncio.create_task(done.wait())
        await asyncio.wait({ended, stop}, return_when=asyncio.FIRST_COMPLETED)
        if not ended.done():
            with contextlib.suppress(ProcessLookupError):
                child.send_signal(signal.SIGINT)
        output, _ = await ended
        stop.cancel()
        lines = output.decode(errors="replace").strip().splitlines()
        status = child.returncode if child.returncode is not None else -1
        said = lines[0] if lines else ""
        spans.append(Span("judge", child.pid, start, time.monotonic(), status, said))
    return spans


# -- one round ------------------------------------------------------------------------


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


def tab_apps(server: int) -> dict[int, str]:
    """The server's app processes: pid to the annotator its command line names."""
    found: dict[int, str] = {}
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            # "pid (comm) state ppid ...": the name may hold spaces, not ")".
            parent = int(entry.read_text().rsplit(")", 1)[1].split()[1])
            if parent != server:
                continue
            argv = (entry.parent / "cmdline").read_bytes().decode().split("\0")
        except (OSError, IndexError, ValueError):
            continue
        if "--annotator" in argv:
            found[int(entry.parent.name)] = argv[argv.index("--annotator") + 1]
    return found


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


async def one_round(
    pristine: Path, scratch: Path, tabs: int, grades: int, pause: float, *, scenario: Scenario
) -> Round:
    name = f"serve-{tabs}-{'alone' if scenario == Scenario() else 'scenario'}"
    db = scratch / f"{name}.db"
    shutil.copyfile(pristine, db)
    names = [f"annotator{i:02d}" for i in range(tabs)]
    with Project.open(db) as project:
        tokens = [add_invite(project, annotator)[0] for annotator in names]
    trace = scratch / f"{name}.trace.jsonl"
    # The server's log, with whatever an app wrote to stderr before it ended.
    log = (scratch / f"{name}.log").open("w")
    server = subprocess.Popen(
        raglabel("serve", str(db), "--port", "0"),
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        env={**os.environ, "RAGLABEL_SERVE_TRACE": str(trace)},
    )
    sampler = Helper.start(sampler_process, f"{db}-shm")
    chat = Helper.start(chat_server_process) if scenario.judge else None
    lead: list[Span] = []
    judge: list[Span] = []
    try:
        assert server.stdout is not None
        url = server.stdout.readline().rsplit(" at ", 1)[1].strip()
        site = Site.make(db, url.rstrip("/"))
        base_url = chat.conn.recv() if chat is not None else ""
        barrier = asyncio.Barrier(tabs + 1)
        async with aiohttp.ClientSession() as session:
            work = [
                asyncio.create_task(
                    one_tab(
                        session,
                        TabPlan(url, site, names[seed], token, grades, pause, seed, barrier),
                    )
                )
                for seed, token in enumerate(tokens)
            ]
            done = asyncio.Event()
            beside: list[asyncio.Task[list[Span]]] = []
            try:
                await barrier.wait()
                rss = resident_mib(server.pid)
                apps = tab_apps(server.pid)
                if scenario.lead:
                    beside.append(asyncio.create_task(lead_loop(db, scratch, scenario.lead, done)))
                if chat is not None:
                    beside.append(asyncio.create_task(judge_loop(db, base_url, done)))
            except asyncio.BrokenBarrierError:
                rss = 0.0
                apps = {}
            figures = await asyncio.gather(*work)
            done.set()
            spans = await asyncio.gather(*beside)
            if scenario.lead:
                lead = spans[0]
            if chat is not None:
                judge = spans[-1]
    finally:
        server.terminate()
        server.wait(30)
        log.close()
        sampled = sampler.finish() or {"holds": [], "runnable": []}
        holds = [Hold(*hold) for hold in sampled["holds"]]
        runnable = [(at, count) for at, count in sampled["runnable"]]
        faults = chat.finish() if chat is not None else None
    every = [g for f in figures for g in f.grades]
    traced = _stamp_from_trace(trace, every)
    _note_overlaps(every, lead, judge, holds, apps)
    _note_runnable(every, runnable)
    return Round(
        tabs=tabs,
        scenario=scenario.describe(),
        starts_s=[f.start_s for f in figures],
        grades=every,
        rss_mib=rss,
        landed=landed(db, names),
        planned=tabs * grades,
        errors=[f.error for f in figures if f.error is not None],
        lead=lead,
        judge=judge,
        holds=holds,
        chat_faults=faults or {},
        traced=traced,
        apps=apps,
        runnable=runnable,
    )


def _stamp_from_trace(trace: Path, grades: list[Grade]) -> bool:
    """Put the server's stamps on each grade: its key's line (the first after it was
    sent, of its tab) and the first output the app wrote after that key reached it.
    False when the server wrote no trace (a raglabel without it)."""
    if not trace.exists():
        return False
    keys: dict[str, list[dict[str, Any]]] = {}
    outs: dict[str, list[dict[str, Any]]] = {}
    for line in trace.read_text().splitlines():
        entry = json.loads(line)
        (keys if entry["event"] == "key" else outs).setdefault(entry["annotator"], []).append(entry)
    for grade in grades:
        key = next((k for k in keys.get(grade.tab, []) if k["received"] >= grade.sent), None)
        if key is None:
            continue
        out = next((o for o in outs.get(grade.tab, []) if o["read"] >= key["written"]), None)
        grade.received, grade.written = key["received"], key["written"]
        if out is not None:
            grade.read, grade.out_bytes = out["read"], out["bytes"]
    return bool(keys)


def _note_runnable(grades: list[Grade], runnable: list[tuple[float, int]]) -> None:
    """The most tasks runnable at once (waiting for or on a core, system-wide) in the
    RUNNABLE_WINDOW_S after each key was sent: a window of one length for every grade,
    so that a slow grade is not more likely to see a peak for being slow."""
    times = [at for at, _ in runnable]
    for grade in grades:
        first = max(0, bisect.bisect_right(times, grade.sent) - 1)
        last = bisect.bisect_right(times, grade.sent + RUNNABLE_WINDOW_S)
        counts = [count for _, count in runnable[first:last]]
        grade.runnable = max(counts) if counts else None


def _note_overlaps(
    grades: list[Grade],
    lead: list[Span],
    judge: list[Span],
    holds: list[Hold],
    apps: dict[int, str],
) -> None:
    """Name what was going on as each grade's key was sent: a lead process, a write by
    the judge or by another tab's app, a checkpoint. At that moment, not over the whole
    wait: a slow grade's long wait would overlap more of everything, and look caused by
    it. Then whether its own app's write (found by its pid, timed as ``own_write_ms``)
    began as another writer's ended: it queued behind that writer."""
    judges = {span.pid for span in judge}

    def whose(pid: int, grade: Grade) -> str:
        if pid in judges:
            return "the judge"
        return "its own app" if apps.get(pid) == grade.tab else "another app"

    for grade in grades:
        at = grade.sent
        for span in lead:
            if span.start <= at < span.end:
                grade.during.append(f"key sent during lead {span.what}")
        own: Hold | None = None
        for hold in holds:
            if hold.start <= at < hold.end and not (
                hold.lock == "write" and whose(hold.pid, grade) == "its own app"
            ):
                what = "a checkpoint" if hold.lock == "checkpoint" else "a write"
                grade.during.append(f"key sent during {what} by {whose(hold.pid, grade)}")
            if (
                hold.lock == "write"
                and whose(hold.pid, grade) == "its own app"
                and hold.end > at
                and hold.start < grade.first
            ):
                own = hold
        if own is not None:
            grade.own_write_ms = (own.end - own.start) * 1000
            for hold in holds:
                # Sampled: the other's end and this start are seen in the same sample,
                # or the one after.
                if (
                    hold.lock == "write"
                    and hold.start < own.start
                    and abs(hold.end - own.start) <= 2 * SAMPLE_S
                    and whose(hold.pid, grade) != "its own app"
                ):
                    grade.during.append(f"queued behind a write by {whose(hold.pid, grade)}")
        grade.during = sorted(set(grade.during))


# -- the report -----------------------------------------------------------------------


def stats(values: Sequence[float]) -> str:
    if not values:
        return "-"
    return " / ".join(f"{nearest_rank(values, q):.0f}" for q in (0.5, 0.95, 0.99))


def breakdown(r: Round) -> list[list[str]]:
    """Rows of the where-the-time-goes table for one round."""
    rows: list[list[str]] = []

    def row(what: str, chosen: list[Grade]) -> None:
        if chosen:
            rows.append([what, str(len(chosen)), stats([g.ms for g in chosen])])

    row("every grade", r.grades)
    conditions = sorted({d for g in r.grades for d in g.during})
    for condition in conditions:
        row(condition, [g for g in r.grades if condition in g.during])
        row(f"not: {condition}", [g for g in r.grades if condition not in g.during])
    row("key sent during a lead process", [g for g in r.grades if _lead(g)])
    row("key sent with no lead process running", [g for g in r.grades if not _lead(g)])
    row("nothing of the above", [g for g in r.grades if not g.during])
    row("key sent while the screen still drew", [g for g in r.grades if g.unquiet])
    cores = os.cpu_count() or 1
    row(
        f"at most {cores} tasks runnable (one a core)",
        [g for g in r.grades if g.runnable is not None and g.runnable <= cores],
    )
    row(
        f"more than {cores} tasks runnable",
        [g for g in r.grades if g.runnable is not None and g.runnable > cores],
    )
    own = [g.own_write_ms for g in r.grades if g.own_write_ms is not None]
    if own:
        rows.append(["(its own app's write lock held, ms)", str(len(own)), stats(own)])
    return rows


def _lead(grade: Grade) -> bool:
    return any(d.startswith("key sent during lead ") for d in grade.during)


def split(r: Round) -> list[list[str]]:
    """Rows of the server's split of a grade's time (ms p50 / p95 / p99), over every
    grade and over the slowest 1% of them."""
    stamped = [g for g in r.grades if g.read is not None and g.received is not None]
    if not stamped:
        return []
    cutoff = nearest_rank([g.ms for g in stamped], 0.99)
    slow = [g for g in stamped if g.ms >= cutoff]
    parts: list[tuple[str, Callable[[Grade], float]]] = [
        ("tab to server", lambda g: (_f(g.received) - g.sent) * 1000),
        ("server to the app's stdin", lambda g: (_f(g.written) - _f(g.received)) * 1000),
        ("the app (key in, first output out)", lambda g: (_f(g.read) - _f(g.written)) * 1000),
        ("server to tab", lambda g: (g.first - _f(g.read)) * 1000),
    ]
    rows = [
        [what, stats([part(g) for g in stamped]), f"{sum(part(g) for g in slow) / len(slow):.1f}"]
        for what, part in parts
    ]
    mismatched = sum(1 for g in stamped if g.out_bytes != g.first_bytes)
    rows.append(["(first output not the tab's first frame)", str(mismatched), ""])
    return rows


def _f(value: float | None) -> float:
    assert value is not None
    return value


def sizes(r: Round) -> list[str]:
    first = [float(g.first_bytes) for g in r.grades]
    whole = [float(g.redraw_bytes) for g in r.grades if g.redraw_frames]
    frames = [float(g.redraw_frames) for g in r.grades if g.redraw_frames]
    return [stats(first), stats(whole), stats(frames)]


def scenario_lines(r: Round) -> list[str]:
    lines = []
    if r.lead:
        for what in ("eval", "export", "backup"):
            spans = [s for s in r.lead if s.what == what]
            failed = [s for s in spans if s.status != 0]
            secs = [s.end - s.start for s in spans]
            lines.append(
                f"lead {what}: {len(spans)} run(s), {len(failed)} failed,"
                f" {min(secs):.2f}-{max(secs):.2f} s each"
                + "".join(f"\n    failed (exit {s.status}): {s.said}" for s in failed)
            )
    if r.judge:
        broken = [
            s
            for s in r.judge
            if s.status not in (0, 1, JUDGE_INTERRUPTED) or "judge run stopped" in s.said
        ]
        answered = sum(_answers(s.said) for s in r.judge)
        lines.append(
            f"judge: {len(r.judge)} run(s), {answered} answers graded, {len(broken)} failed"
            + "".join(f"\n    failed (exit {s.status}): {s.said}" for s in broken)
        )
        total = sum(r.chat_faults.values())
        faulty = total - r.chat_faults.get("ok", 0)
        lines.append(f"chat server: {total} calls, {faulty} faulty ({_kinds(r.chat_faults)})")
    checkpoints = [h for h in r.holds if h.lock == "checkpoint"]
    if checkpoints:
        longest = max(h.end - h.start for h in checkpoints) * 1000
        lines.append(f"checkpoints seen: {len(checkpoints)}, longest {longest:.0f} ms")
    return lines


def _answers(said: str) -> int:
    found = re.search(r"(\d+) answers graded", said)
    return int(found.group(1)) if found else 0


def _kinds(faults: dict[str, int]) -> str:
    return ", ".join(f"{k} {n}" for k, n in sorted(faults.items()) if k != "ok") or "none"


def main(argv: Sequence[str] | None = None) -> int:
    parser = make_parser(__doc__)
    parser.add_argument(
        "--tabs", default="1,4,8,16", help="tab counts to try, comma-separated (default 1,4,8,16)"
    )
    add_grades(parser, 20, "grade keys each tab presses")
    parser.add_argument(
        "--pause", type=float, default=1.0, help="mean seconds between a tab's keys (default 1)"
    )
    parser.add_argument(
        "--lead",
        type=float,
        default=0.0,
        metavar="S",
        help="the lead's eval, export and backup every S seconds while the tabs grade"
        " (default: none)",
    )
    parser.add_argument(
        "--judge",
        action="store_true",
        help="raglabel judge against a faulty loopback server while the tabs grade",
    )
    add_keep(parser)
    args = parse(parser, argv)
    if args.lead < 0:
        parser.error("--lead must be 0 (none) or more seconds")
    scenario = Scenario(args.lead, args.judge)
    counts = sorted({int(n) for n in args.tabs.split(",")})
    plan = [(1, Scenario())] + [(n, scenario) for n in counts if (n, scenario) != (1, Scenario())]
    rounds: list[Round] = []
    began = datetime.now(UTC)
    with scratch_directory("raglabel-serve-bench-", args.keep) as scratch:
        pristine = scratch / "demo.db"
        build_demo(pristine, "owner", answers=True)
        for tabs, chosen in plan:
            print(f"{tabs} tab(s), {chosen.describe()}...", file=sys.stderr)
            rounds.append(
                asyncio.run(
                    one_round(pristine, scratch, tabs, args.grades, args.pause, scenario=chosen)
                )
            )
    return report(rounds, args, began)


def report(rounds: list[Round], args: Any, began: datetime) -> int:
    for r in rounds:
        for error in sorted(set(r.errors)):
            print(f"{r.tabs} tab(s): {r.errors.count(error)} tab(s) failed: {error}")
    measured = [r for r in rounds if r.grades]
    if not measured:
        print("no round measured anything")
        return 1
    # The first round is the peer, one tab alone; if it measured nothing, no ratio.
    peer = nearest_rank(rounds[0].latencies_ms, 0.95) if rounds[0].grades else None
    rows = []
    for r in measured:
        ms = r.latencies_ms
        p95 = nearest_rank(ms, 0.95)
        rows.append(
            [
                str(r.tabs),
                r.scenario,
                f"{nearest_rank(r.starts_s, 0.5):.1f} / {max(r.starts_s):.1f}",
                f"{nearest_rank(ms, 0.5):.0f}",
                f"{p95:.0f}",
                f"{nearest_rank(ms, 0.99):.0f}",
                f"{max(ms):.0f}",
                f"{p95 / peer:.2f}x" if peer else "-",
                f"{r.rss_mib:.0f} ({r.rss_mib / r.tabs:.0f} a tab)",
                f"{len(r.grades)} / {r.landed}",
            ]
        )
    print(
        markdown_table(
            [
                "tabs",
                "beside them",
                "app start s (median / max)",
                "grade p50 ms",
                "grade p95 ms",
                "grade p99 ms",
                "max ms",
                "p95 vs 1 tab alone",
                "RSS MiB",
                "grades sent / landed",
            ],
            rows,
        )
    )
    for r in measured:
        print(f"\n{r.tabs} tab(s), {r.scenario}: where the time goes (ms p50 / p95 / p99)\n")
        print(markdown_table(["grades", "count", "latency ms"], breakdown(r)))
        print()
        print(
            markdown_table(
                ["redraw", "first frame bytes", "bytes until the next key", "frames"],
                [["p50 / p95 / p99", *sizes(r)]],
            )
        )
        parts = split(r)
        if parts:
            print()
            print(markdown_table(["part", "ms p50 / p95 / p99", "mean in the slowest 1%"], parts))
        else:
            print("\n(no server trace: this raglabel's server does not write one)")
        for line in scenario_lines(r):
            print(line)
    goals: list[tuple[bool | None, str]] = []
    for r in measured:
        who = f"{r.tabs} tab(s), {r.scenario}"
        goals.append((_all_landed(r), f"{who}: every grade sent, every grade landed"))
        ms = r.latencies_ms
        goals.append((nearest_rank(ms, 0.95) <= GOAL_P95_MS, f"{who}: p95 <= {GOAL_P95_MS:.0f} ms"))
        goals.append((nearest_rank(ms, 0.99) <= GOAL_P99_MS, f"{who}: p99 <= {GOAL_P99_MS:.0f} ms"))
    print_goals(goals)
    out = write_results(
        f"serve-{utc_stamp(began)}",
        {
            "options": vars(args),
            "machine": machine(raglabel_path=raglabel_path()),
            "versions": versions("aiohttp", "textual", "textual-serve"),
            "rounds": [_as_json(r) for r in rounds],
        },
    )
    print(f"\nresults: {out}")
    return 0 if all(_all_landed(r) for r in rounds) else 1


def _all_landed(r: Round) -> bool:
    return not r.errors and len(r.grades) == r.planned == r.landed


def _as_json(r: Round) -> dict[str, Any]:
    found = asdict(r)
    found["grades"] = [{**asdict(g), "ms": g.ms} for g in r.grades]
    return found


if __name__ == "__main__":
    sys.exit(main())
