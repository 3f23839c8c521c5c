"""Each tab's app runs in a session of its own (raglabel/web/tab.py), so that Linux
shares the CPU with it as with a terminal window of its own rather than with the server
and whatever its starter runs beside it; and so a hangup meant for the server reaches
the server alone, which then ends every tab's app itself (raglabel/web/server.py); and an
app whose server was killed quits on its own."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from cli_helpers import start_serving

from raglabel.storage.invites import add_invite
from raglabel.storage.project import Project
from raglabel.web.access import Site
from raglabel.web.tab import Ending, TabApp

#: How long a real app may take to start, or end, on a busy 2-core machine.
PATIENCE = 60.0

#: A stand-in app: starts as Textual's web driver does, says its session, process group
#: and pid as its first screen, and quits.
SAYS_ITS_SESSION = """
import json, os, sys
out = sys.stdout.buffer
def packet(kind, payload):
    out.write(kind + len(payload).to_bytes(4, "big") + payload)
out.write(b"__GANGLION__\\n")
packet(b"D", f"{os.getsid(0)} {os.getpgid(0)} {os.getpid()}".encode())
packet(b"M", json.dumps({"type": "exit"}).encode())
out.flush()
"""


async def test_each_tabs_app_leads_a_session_of_its_own() -> None:
    from textual_serve.download_manager import DownloadManager

    screens: list[bytes] = []
    endings: asyncio.Queue[Ending] = asyncio.Queue()

    async def write_bytes(data: bytes) -> None:
        screens.append(data)

    async def nothing(*_: object) -> None: ...

    apps = [
        TabApp(
            shlex.join([sys.executable, "-c", textwrap.dedent(SAYS_ITS_SESSION)]),
            ended=endings.put,
            write_bytes=write_bytes,
            write_str=nothing,
            close=nothing,
            download_manager=DownloadManager(),
        )
        for _ in range(2)
    ]
    for app in apps:
        await app.start(80, 24)
    for app in apps:
        ending = await asyncio.wait_for(endings.get(), PATIENCE)
        assert not ending.failed, ending.output
        await app.stop()
    said = sorted(tuple(int(n) for n in screen.split()) for screen in screens)
    assert len(said) == 2
    for session, group, pid in said:
        assert session == group == pid  # a session leader (exec: no shell in between)
        assert session != os.getsid(0)
    assert said[0][0] != said[1][0]


def app_pids(server: int) -> list[int]:
    """The server's tab apps: its children running ``raglabel label``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            argv = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if parent == server and b"label" in argv:
            found.append(int(stat.parent.name))
    return found


async def open_tab(db: Path, url: str, name: str) -> aiohttp.ClientSession:
    """A signed-in tab whose app has drawn its first screen; its client session (the
    websocket stays open until that is closed)."""
    with Project.open(db) as opened:
        token = add_invite(opened, name)[0]
    site = Site.make(db.resolve(), url.rstrip("/"))
    headers = {"Origin": site.origin, "Cookie": f"{site.cookie_name}={token}"}
    client = aiohttp.ClientSession()
    socket = await client.ws_connect(f"{url.rstrip('/')}/ws?width=100&height=30", headers=headers)
    deadline = time.monotonic() + PATIENCE
    while time.monotonic() < deadline:
        message = await asyncio.wait_for(socket.receive(), PATIENCE)
        if message.type == aiohttp.WSMsgType.BINARY and db.name.encode() in message.data:
            return client
        assert message.type == aiohttp.WSMsgType.BINARY, message
    raise AssertionError("the tab's app drew no first screen")


def gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state == "Z":  # ended; its parent has not reaped it yet
            return True
        time.sleep(0.1)
    return False


@contextlib.asynccontextmanager
async def one_tab_served(db: Path) -> AsyncIterator[tuple[subprocess.Popen[str], int]]:
    """``raglabel serve`` with alice's tab open: the server's process and the app's pid.
    Whatever the test does to them, nothing is left running after it."""
    process, url = start_serving(db)
    client = None
    try:
        client = await open_tab(db, url, "alice")
        (app,) = app_pids(process.pid)
        yield process, app
    finally:
        if client is not None:
            await client.close()
        if process.poll() is None:
            process.kill()
            process.wait()


async def test_a_hangup_ends_the_server_and_it_ends_every_tabs_app(demo_db: Path) -> None:
    async with one_tab_served(demo_db) as (process, app):
        process.send_signal(signal.SIGHUP)
        assert process.wait(PATIENCE) == 0  # stopped as by Ctrl-C, not killed by it
        assert gone(app, PATIENCE), "the tab's app outlived the server"


async def test_a_tabs_app_quits_when_its_server_is_killed(demo_db: Path) -> None:
    # No hangup, no stop: the pipe to the app's stdin closes, and that alone must end it
    # (raglabel/tui/served_driver.py), or it runs on, holding the project file open.
    async with one_tab_served(demo_db) as (process, app):
        process.kill()
        process.wait()
        assert gone(app, PATIENCE), "the tab's app outlived its killed server"


def test_a_server_started_under_nohup_outlives_a_hangup(demo_db: Path) -> None:
    # nohup starts the server with SIGHUP ignored; the server leaves it so.
    process = subprocess.Popen(
        ["nohup", sys.executable, "-m", "raglabel", "serve", str(demo_db), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().startswith("serving ")
        process.send_signal(signal.SIGHUP)
        with pytest.raises(subprocess.TimeoutExpired):
            process.wait(2)
    finally:
        process.terminate()
        process.wait(PATIENCE)
