"""Headless Chromium for the tests, driven over the DevTools protocol.

Debian's ``chromium`` (``apt-get install chromium``) is started with its own empty
profile and a DevTools port; each tab is driven through its websocket with aiohttp,
which raglabel already depends on through textual-serve. No browser build is ever
downloaded, and no driver program is needed.

A machine without Chromium skips the browser tests, except under ``CI=true``, where a
missing browser is a failure: ``.ci/run`` installs it, and a skipped browser test there
would hide a broken install.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import aiohttp
import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Screenshots the browser tests take; gitignored.
SHOTS = ROOT / "tests" / "screenshots"
CANDIDATES = ("chromium", "chromium-browser", "google-chrome")


def chromium_path() -> str | None:
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


def require_chromium() -> str:
    """The browser's path; skips the test without one, but fails it under CI."""
    path = chromium_path()
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but Chromium is missing: .ci/run installs it with apt-get")
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    return path


# Flags that keep Chromium off the network: this machine's network is closed, and a
# browser phoning home would only slow every start.
FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--mute-audio",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
)


class Tab:
    """One page target: commands by id, events kept until a test waits for them."""

    def __init__(self, socket: aiohttp.ClientWebSocketResponse) -> None:
        self._socket = socket
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.events: list[dict[str, Any]] = []
        self._event_added = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for message in self._socket:
            if message.type != aiohttp.WSMsgType.TEXT:
                continue
            data = json.loads(message.data)
            if "id" in data:
                future = self._pending.pop(data["id"], None)
                if future is not None and not future.done():
                    future.set_result(data)
            else:
                self.events.append(data)
                self._event_added.set()

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        ident = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[ident] = future
        await self._socket.send_str(json.dumps({"id": ident, "method": method, "params": params}))
        reply = await asyncio.wait_for(future, 30)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        result: dict[str, Any] = reply.get("result", {})
        return result

    async def wait_event(self, method: str, timeout: float = 20) -> dict[str, Any]:
        """The first event of that name not yet taken, waiting for it if need be."""
        deadline = time.monotonic() + timeout
        while True:
            for i, event in enumerate(self.events):
                if event.get("method") == method:
                    del self.events[i]
                    return event
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no {method} within {timeout} s")
            self._event_added.clear()
            with suppress(TimeoutError):
                await asyncio.wait_for(self._event_added.wait(), left)

    async def goto(self, url: str) -> int:
        """Open the URL and wait for its load event; the document's HTTP status."""
        await self.send("Page.enable")
        await self.send("Network.enable")
        # Every tab behaves as the focused one, so keys typed into two tabs both count.
        await self.send("Emulation.setFocusEmulationEnabled", enabled=True)
        self.events.clear()
        await self.send("Page.navigate", url=url)
        await self.wait_event("Page.loadEventFired")
        status = 0
        for event in self.events:
            if event.get("method") != "Network.responseReceived":
                continue
            if event["params"].get("type") == "Document":
                status = int(event["params"]["response"]["status"])
        return status

    async def evaluate(self, expression: str) -> Any:
        result = await self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        return result.get("result", {}).get("value")

    async def text(self) -> str:
        value = await self.evaluate("document.body ? document.body.innerText : ''")
        return str(value or "")

    async def press(self, key: str) -> None:
        """Type one key as a keyboard does (down, its character, up): a printable
        character, or "Enter"."""
        if key == "Enter":
            base: dict[str, Any] = {"key": key, "code": key, "windowsVirtualKeyCode": 13}
            text = "\r"
        else:
            code = f"Digit{key}" if key.isdigit() else f"Key{key.upper()}"
            base = {"key": key, "code": code, "windowsVirtualKeyCode": ord(key.upper())}
            text = key
        await self.send("Input.dispatchKeyEvent", type="keyDown", text=text, **base)
        await self.send("Input.dispatchKeyEvent", type="keyUp", **base)

    async def click(self, x: float, y: float) -> None:
        for kind in ("mousePressed", "mouseReleased"):
            await self.send(
                "Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1
            )

    async def pixels(self) -> bytes:
        result = await self.send("Page.captureScreenshot", format="png")
        return base64.b64decode(result["data"])

    async def settle(
        self, since: bytes | None = None, quiet: float = 0.3, timeout: float = 60
    ) -> bytes:
        """Wait until the page looks different from ``since`` (if given) and then the
        same in two looks ``quiet`` seconds apart: a screen drawn on a canvas has no
        DOM to wait on. The last look."""
        deadline = time.monotonic() + timeout
        last = await self.pixels()
        while time.monotonic() < deadline:
            await asyncio.sleep(quiet)
            now = await self.pixels()
            if now == last and (since is None or now != since):
                return now
            last = now
        raise TimeoutError(f"the page kept changing (or never changed) for {timeout} s")

    async def screenshot(self, name: str) -> bytes:
        """A PNG of the page, also kept as tests/screenshots/NAME.png for a person."""
        result = await self.send("Page.captureScreenshot", format="png")
        data = base64.b64decode(result["data"])
        SHOTS.mkdir(parents=True, exist_ok=True)
        (SHOTS / f"{name}.png").write_bytes(data)
        return data

    async def close(self) -> None:
        self._reader.cancel()
        await self._socket.close()


class Browser:
    """A headless Chromium process with a DevTools port; `tab()` opens a page."""

    def __init__(self, executable: str, width: int = 1280, height: int = 800) -> None:
        self._profile = tempfile.TemporaryDirectory(
            prefix="raglabel-chromium-", ignore_cleanup_errors=True
        )
        self.process = subprocess.Popen(
            [
                executable,
                *FLAGS,
                f"--window-size={width},{height}",
                f"--user-data-dir={self._profile.name}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            # A group of its own, so closing ends the renderer and helper
            # processes too, not only the one we started.
            start_new_session=True,
        )
        self.port = self._wait_for_port()
        self._session: aiohttp.ClientSession | None = None
        self._tabs: list[Tab] = []

    def _wait_for_port(self) -> int:
        marker = Path(self._profile.name) / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"chromium exited with {self.process.returncode}")
            if marker.exists():
                first = marker.read_text().splitlines()[:1]
                if first and first[0].isdigit():
                    return int(first[0])
            time.sleep(0.05)
        raise TimeoutError("chromium opened no DevTools port within 30 s")

    async def tab(self, *, own_cookies: bool = False) -> Tab:
        """A new tab; with ``own_cookies``, in a fresh browser context (an incognito
        window of its own), so two people's sign-ins do not share one cookie jar."""
        if self._session is None:
            self._session = aiohttp.ClientSession()
        base = f"http://127.0.0.1:{self.port}"
        if own_cookies:
            async with self._session.get(f"{base}/json/version") as response:
                version = await response.json(content_type=None)
            browser = await self._session.ws_connect(version["webSocketDebuggerUrl"])
            control = Tab(browser)
            context = await control.send("Target.createBrowserContext")
            target = await control.send(
                "Target.createTarget",
                url="about:blank",
                browserContextId=context["browserContextId"],
            )
            self._tabs.append(control)
            url = f"ws://127.0.0.1:{self.port}/devtools/page/{target['targetId']}"
        else:
            async with self._session.put(f"{base}/json/new?about:blank") as response:
                url = (await response.json(content_type=None))["webSocketDebuggerUrl"]
        socket = await self._session.ws_connect(url, max_msg_size=0)
        tab = Tab(socket)
        self._tabs.append(tab)
        return tab

    async def close(self) -> None:
        for tab in self._tabs:
            await tab.close()
        if self._session is not None:
            await self._session.close()
        self._signal_group(signal.SIGTERM)
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        # Helpers that outlive the main process (crashpad, a renderer still
        # flushing) keep writing into the profile; end them before removing it.
        self._signal_group(signal.SIGKILL)
        for attempt in range(20):
            try:
                shutil.rmtree(self._profile.name)
                break
            except FileNotFoundError:
                break
            except OSError:
                if attempt == 19:
                    raise
                time.sleep(0.1)

    def _signal_group(self, number: signal.Signals) -> None:
        with suppress(ProcessLookupError):
            os.killpg(self.process.pid, number)


@asynccontextmanager
async def chromium(width: int = 1280, height: int = 800) -> AsyncIterator[Browser]:
    """A started browser (the test is skipped without one, outside CI), closed after."""
    browser = Browser(require_chromium(), width, height)
    try:
        yield browser
    finally:
        await browser.close()
