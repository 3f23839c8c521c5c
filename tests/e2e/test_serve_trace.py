"""``RAGLABEL_SERVE_TRACE``: the server's stamps of each key and each packet of screen
output (raglabel/web/trace.py), which benchmarks/serve.py sets beside its own to split a
grade's latency into the app's part and the relay's. The app process is replaced by an
echo, as in test_serve.py, so each check runs in milliseconds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest
from aiohttp import WSMsgType, web
from aiohttp.test_utils import TestClient, TestServer

from raglabel.storage.invites import add_invite
from raglabel.storage.project import Project
from raglabel.web import server as server_module
from raglabel.web.access import Site
from raglabel.web.server import GradingServer
from raglabel.web.trace import ENV_TRACE

PUBLIC = "http://127.0.0.1:8000"


class Echo:
    """Stands in for a tab's app: answers each key with one packet of output."""

    sends: ClassVar[list[Callable[[bytes], Awaitable[None]]]] = []

    def __init__(self, command: str, *, write_bytes: Callable[[bytes], Awaitable[None]], **_: Any):
        self.write_bytes = write_bytes
        Echo.sends.append(write_bytes)

    async def start(self, width: int, height: int) -> None: ...

    async def send_bytes(self, data: bytes) -> bool:
        await self.write_bytes(b"screen after " + data)
        return True

    async def set_terminal_size(self, width: int, height: int) -> None: ...

    async def blur(self) -> None: ...

    async def focus(self) -> None: ...

    async def stop(self) -> None: ...


@pytest.fixture
def echo(monkeypatch: pytest.MonkeyPatch) -> type[Echo]:
    Echo.sends = []
    monkeypatch.setattr(server_module, "TabApp", Echo)
    return Echo


async def grade_twice(db: Path, name: str) -> list[bytes]:
    """Open one tab as ``name``, press two keys, and return what came back."""
    with Project.open(db) as project:
        token = add_invite(project, name)[0]
    site = Site.make(db, PUBLIC)
    grading = GradingServer(db, site, "5")
    got: list[bytes] = []
    try:
        async with TestClient(TestServer(grading.application())) as http:
            headers = {"Cookie": f"{site.cookie_name}={token}", "Origin": PUBLIC}
            socket = await http.ws_connect("/ws", headers=headers)
            for key in ("3", "1"):
                await socket.send_json(["stdin", key])
                message = await socket.receive()
                assert message.type == WSMsgType.BINARY
                got.append(message.data)
            await socket.close()
    finally:
        grading.close()
    return got


async def test_the_trace_stamps_each_key_and_the_output_it_brought(
    demo_db: Path, tmp_path: Path, echo: type[Echo], monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = tmp_path / "trace.jsonl"
    monkeypatch.setenv(ENV_TRACE, str(trace))
    before = time.monotonic()
    assert await grade_twice(demo_db, "alice") == [b"screen after 3", b"screen after 1"]
    after = time.monotonic()
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    # The echo answers inside the key's write: its output line comes before the key's.
    assert [(e["event"], e["bytes"]) for e in lines] == [
        ("out", 14),
        ("key", 1),
        ("out", 14),
        ("key", 1),
    ]
    assert {(e["tab"], e["annotator"]) for e in lines} == {(1, "alice")}
    stamps = [
        stamp
        for e in lines
        for stamp in (
            (e["received"], e["written"]) if e["event"] == "key" else (e["read"], e["sent"])
        )
    ]
    # One clock (monotonic, as the benchmark's), in order within each line and overall.
    assert before <= stamps[0] and stamps[-1] <= after
    first_key, second_key = lines[1], lines[3]
    assert first_key["received"] <= lines[0]["read"] <= lines[0]["sent"] <= first_key["written"]
    assert first_key["written"] <= second_key["received"] <= lines[2]["read"]


async def test_without_the_variable_output_goes_straight_to_the_websocket(
    demo_db: Path, echo: type[Echo], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV_TRACE, raising=False)
    assert await grade_twice(demo_db, "bob") == [b"screen after 3", b"screen after 1"]
    # The app writes with the websocket's own send: no wrapper, no stamps taken.
    (send,) = echo.sends
    assert isinstance(getattr(send, "__self__", None), web.WebSocketResponse)


def test_a_bad_trace_path_is_refused_before_serving_is_said(demo_db: Path, tmp_path: Path) -> None:
    target = tmp_path / "no such folder" / "trace.jsonl"
    env = {**os.environ, ENV_TRACE: str(target)}
    done = subprocess.run(
        [sys.executable, "-m", "raglabel", "serve", str(demo_db), "--port", "0"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "serving" not in done.stdout
    assert f"{target}: RAGLABEL_SERVE_TRACE names it" in done.stderr
