"""``raglabel serve``: an aiohttp server that gives each signed-in browser tab its own app.

Each websocket starts ``raglabel label DB --annotator NAME --locked`` through
textual-serve's ``AppService`` (see raglabel/web/tab.py), which runs the command with
Textual's web driver and relays the terminal stream. The annotator travels in that
command line, built for the one connection: nothing process-wide changes, so two tabs
connecting at once cannot swap names. The routes are raglabel's own (textual-serve's
``Server`` would serve anyone, and its page fetches a font from the internet); only
``AppService``, the script, the stylesheet and the fonts are textual-serve's, hence the
pinned version.

A tab the server ends for a reason (its invite revoked, its app failed) first gets an
ENDED message the page shows, then a close code of its own: 4001 for the invite, 4002
for the app.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
import socket
import time
from collections.abc import Awaitable, Callable
from functools import partial
from importlib.resources import files
from pathlib import Path

from aiohttp import WSMsgType, web
from textual_serve.download_manager import DownloadManager

from raglabel.storage.invites import invited_annotator, invites
from raglabel.storage.project import Project
from raglabel.web.access import INVITE_PARAMETER, Site
from raglabel.web.pages import (
    ENDED,
    app_failed,
    invite_gone,
    refusal_page,
    signed_in_page,
    terminal_page,
)
from raglabel.web.tab import Ending, TabApp, tab_command
from raglabel.web.trace import RelayTrace, TabTrace

log = logging.getLogger("raglabel.serve")

#: How often an open tab's invite is checked again, so a revoke ends live tabs too.
RECHECK_SECONDS = 10.0
#: Terminal sizes a browser may ask for: anything else is a bug or an attack.
MAX_CELLS = 1000
#: Security headers on every page: no framing, no referrer carrying a token away.
HEADERS = {
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}

STATIC = Path(str(files("textual_serve") / "static"))
#: Close codes of a tab the server ended: its invite is gone; its app failed.
CLOSE_REVOKED = 4001
CLOSE_FAILED = 4002


def _size(value: str | None, default: int) -> int:
    try:
        number = int(value or default)
    except ValueError:
        return default
    return min(max(number, 1), MAX_CELLS)


class GradingServer:
    """The routes, the open tabs, and the project's invites (read-only connection)."""

    def __init__(self, project: Path, site: Site, cutoffs: str) -> None:
        self.project = project
        self.site = site
        self.cutoffs = cutoffs
        self.tabs: set[asyncio.Task[None]] = set()
        self._invites = Project.reader(project)
        self._downloads = DownloadManager()
        # Where each key and screen update spent its time, when RAGLABEL_SERVE_TRACE asks.
        self._trace = RelayTrace.from_environment()

    def close(self) -> None:
        self._invites.close()
        if self._trace is not None:
            self._trace.close()

    def application(self) -> web.Application:
        app = web.Application(middlewares=[self._headers])
        base = self.site.base_path
        # Behind a proxy that keeps the public path, the routes live under it; one
        # that strips it reaches the root ones.
        prefixes = {"", base} if base else {""}
        for prefix in sorted(prefixes):
            app.router.add_get(f"{prefix}/", self.index)
            app.router.add_get(f"{prefix}/ws", self.websocket)
            app.router.add_static(f"{prefix}/static", STATIC, show_index=False)
        app.on_shutdown.append(self._close_tabs)
        return app

    @web.middleware
    async def _headers(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        response = await handler(request)
        if response.prepared:  # a websocket: its handshake went out long ago
            return response
        for name, value in HEADERS.items():
            response.headers.setdefault(name, value)
        if response.content_type == "text/html":
            # Pages name the annotator and come from a cookie: never cached. The
            # script and fonts under /static are the same for everyone.
            response.headers.setdefault("Cache-Control", "no-store")
        return response

    def _annotator(self, token: str | None) -> str | None:
        return None if not token else invited_annotator(self._invites, token)

    def _refuse(self, status: int, message: str, heading: str | None = None) -> web.Response:
        return web.Response(
            status=status, text=refusal_page(status, message, heading), content_type="text/html"
        )

    def _replaced(self, annotator: str) -> bool:
        """Whether the annotator, whose token no longer works, holds a newer invite."""
        return any(invite.annotator == annotator for invite in invites(self._invites))

    async def index(self, request: web.Request) -> web.StreamResponse:
        invite = request.query.get(INVITE_PARAMETER)
        if invite is not None:
            annotator = self._annotator(invite)
            if annotator is None:
                log.info("refused an invite link that is not valid")
                return self._refuse(
                    401,
                    "This invite link is not valid: revoked, replaced or mistyped. Ask the "
                    "project's owner for a new one.",
                )
            log.info("%s signed in", annotator)
            response = web.Response(
                text=signed_in_page(annotator=annotator, target=f"{self.site.base_path}/"),
                content_type="text/html",
            )
            response.headers.add("Set-Cookie", self.site.set_cookie_header(invite))
            response.headers.add("Set-Cookie", self.site.set_name_cookie_header(annotator))
            return response
        cookies = request.headers.get("Cookie")
        token = self.site.cookie_token(cookies)
        annotator = self._annotator(token)
        remembered = self.site.cookie_annotator(cookies)
        if annotator is None and token is not None and remembered is not None:
            # A token that once signed this browser in as ``remembered``, and no longer
            # works: the owner revoked or replaced that invite.
            replaced = self._replaced(remembered)
            log.info("refused %s's %s invite", remembered, "replaced" if replaced else "revoked")
            return self._refuse(
                401,
                invite_gone(remembered, replaced=replaced),
                "Invite replaced" if replaced else "Invite revoked",
            )
        if annotator is None:
            return self._refuse(
                401,
                "This raglabel server grades by invitation: open the invite link you were "
                "given. A link that no longer works was revoked or replaced: ask the "
                "project's owner for a new one.",
            )
        page = terminal_page(
            static_url=f"{self.site.public_url}/static/",
            websocket_url=self.site.websocket_url(),
            annotator=annotator,
            project=self.project.name,
        )
        return web.Response(text=page, content_type="text/html")

    async def websocket(self, request: web.Request) -> web.StreamResponse:
        # A page on another site can open a websocket here with the browser's cookies
        # attached (SameSite does not cover every case); the Origin header says where
        # the page came from, and only this server's own pages may drive an app.
        if not self.site.same_origin(request.headers.get("Origin")):
            log.info("refused a websocket from origin %r", request.headers.get("Origin"))
            return self._refuse(403, "This websocket belongs to pages of this server only.")
        token = self.site.cookie_token(request.headers.get("Cookie"))
        annotator = self._annotator(token)
        if token is None or annotator is None:
            return self._refuse(401, "No valid invite: open your invite link first.")
        socket = web.WebSocketResponse(heartbeat=15)
        await socket.prepare(request)
        width = _size(request.query.get("width"), 80)
        height = _size(request.query.get("height"), 24)
        traced = None if self._trace is None else self._trace.tab(annotator)
        send = socket.send_bytes if traced is None else traced.timed_output(socket.send_bytes)
        service = TabApp(
            tab_command(self.project, annotator, self.cutoffs),
            ended=partial(self._app_ended, socket, annotator),
            write_bytes=send,
            write_str=socket.send_str,
            close=partial(self._close, socket),
            download_manager=self._downloads,
        )
        task = asyncio.current_task()
        if task is not None:
            self.tabs.add(task)
        log.info("%s opened a tab (%d open)", annotator, len(self.tabs))
        watch = asyncio.create_task(self._watch(socket, token, annotator))
        try:
            await service.start(width, height)
            await self._relay(socket, service, traced)
        finally:
            watch.cancel()
            await service.stop()
            if task is not None:
                self.tabs.discard(task)
            log.info("%s closed a tab (%d open)", annotator, len(self.tabs))
        return socket

    @staticmethod
    async def _close(socket: web.WebSocketResponse) -> None:
        """The app ended: the tab shows that it has."""
        await socket.close()

    @staticmethod
    async def _end(socket: web.WebSocketResponse, kind: str, text: str, code: int) -> None:
        """Tell the page why its tab ends, then close it with ``code``."""
        if socket.closed:
            return
        with contextlib.suppress(ConnectionError, RuntimeError):  # the browser left
            await socket.send_json([ENDED, {"kind": kind, "text": text}])
        await socket.close(code=code, message=kind.encode())

    async def _app_ended(
        self, socket: web.WebSocketResponse, annotator: str, ending: Ending
    ) -> None:
        """The tab's app process is gone: close the tab, saying why if it failed; the
        log has whatever the app wrote on stderr."""
        output = ending.output.strip()
        if not ending.failed:
            if output:
                log.warning("%s's tab's app wrote on ending:\n%s", annotator, output)
            await self._close(socket)
            return
        what = "stopped with an error" if ending.started else "could not start"
        log.error(
            "%s's tab: the grading app %s (exit status %d): %s%s",
            annotator,
            what,
            ending.status,
            ending.line,
            f"\n{output}" if output else "",
        )
        await self._end(
            socket, "failed", app_failed(ending.line, started=ending.started), CLOSE_FAILED
        )

    async def _relay(
        self, socket: web.WebSocketResponse, service: TabApp, traced: TabTrace | None = None
    ) -> None:
        """The browser's keys, sizes and focus changes, to the app process."""
        async for message in socket:
            received = 0.0 if traced is None else time.monotonic()
            if message.type != WSMsgType.TEXT:
                continue
            try:
                envelope = json.loads(message.data)
                kind, data = envelope[0], envelope[1]
            except (ValueError, TypeError, IndexError, KeyError):
                continue  # the browser script never sends these; drop, do not crash
            if kind == "stdin" and isinstance(data, str):
                key = data.encode("utf-8")
                await service.send_bytes(key)
                if traced is not None:
                    traced.key(received, len(key))
            elif kind == "resize" and isinstance(data, dict):
                width = _size(str(data.get("width")), 80)
                height = _size(str(data.get("height")), 24)
                await service.set_terminal_size(width, height)
            elif kind == "ping":
                await socket.send_json(["pong", data])
            elif kind == "blur":
                await service.blur()
            elif kind == "focus":
                await service.focus()

    async def _watch(self, socket: web.WebSocketResponse, token: str, annotator: str) -> None:
        """Close the tab once its invite is revoked or replaced."""
        while not socket.closed:
            await asyncio.sleep(RECHECK_SECONDS)
            if self._annotator(token) != annotator:
                replaced = self._replaced(annotator)
                how = "replaced" if replaced else "revoked"
                log.info("%s's invite was %s: closing the tab", annotator, how)
                gone = invite_gone(annotator, replaced=replaced)
                await self._end(socket, "revoked", f"This tab has closed. {gone}", CLOSE_REVOKED)
                return

    async def _close_tabs(self, app: web.Application) -> None:
        for task in list(self.tabs):
            task.cancel()
        for task in list(self.tabs):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


def listen(host: str, port: int) -> socket.socket:
    """A listening socket, bound before anything else so ``--port 0`` is known at once
    (the public URL and the invite links hold it)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
        listener.listen(128)
    except OSError:
        listener.close()
        raise
    listener.setblocking(False)
    return listener


async def serve(server: GradingServer, listener: socket.socket) -> None:
    """Run until SIGINT, SIGTERM or SIGHUP, then end every open tab's app and return.
    Each app runs in a session of its own (raglabel/web/tab.py), so a closed terminal
    hangs up on the server alone, and it ends them."""
    runner = web.AppRunner(server.application(), handle_signals=False, access_log=None)
    await runner.setup()
    try:
        await web.SockSite(runner, listener).start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        ending = [signal.SIGINT, signal.SIGTERM]
        # A hangup ends it as its terminal closes, unless it was started to outlive
        # the terminal (``nohup`` ignores SIGHUP, and so does the server then).
        if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
            ending.append(signal.SIGHUP)
        for sig in ending:
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
    finally:
        await runner.cleanup()
        server.close()
