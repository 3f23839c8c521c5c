"""One browser tab's grading app: the command that starts it, and how its process is read.

textual-serve's ``AppService`` starts the command and relays keys to it; how the
process's output is read is raglabel's own, because AppService's reader never tells
anyone that an app failed: it copies the app's error output to the server's stdout and
leaves the browser tab waiting forever on a blank page. Here the error output is kept,
and an app that ends before it starts, or with a non-zero status, is reported with its
error's line, so the page and the server's log can both say what went wrong.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shlex
import sys
from asyncio.subprocess import Process
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual_serve.app_service import AppService

#: The line Textual's web driver writes before its first packet: the app has started.
STARTED = b"__GANGLION__\n"
#: Lines an app may print before that line; more means it is not starting.
PRELUDE_LINES = 20
#: How long an app that said it is done (or never started) may take to end before it
#: is killed: a lingering process would hold the tab open.
EXIT_GRACE = 5.0
#: How much of an app's error output is kept, from its start and from its end (a
#: traceback names its exception last).
KEPT_BYTES = 32 * 1024
#: The longest error line a page shows.
LINE_CHARS = 300

_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
#: Characters a Rich traceback (Textual's own) draws its frame with.
_FRAME = "│╭╰╮╯─┃┏┗┓┛━"
_ERROR = re.compile(r"\berror\b", re.IGNORECASE)
_TRACEBACK_HEADINGS = ("Traceback ", "During handling", "The above exception")


def interpreter_flags() -> list[str]:
    """``-P``, which keeps Python from putting the current folder first on the import
    path, so a ``raglabel/`` folder there (a checkout, an older copy) cannot stand in for
    the package the server runs. ``-P`` rather than ``-I``: ``-I`` would also drop
    ``PYTHONPATH`` and the user's site-packages, where raglabel may be installed; and the
    tab keeps the server's current folder, the one relative paths were given from.

    No flag when the server's own raglabel is the one in the current folder (``python
    -m raglabel serve`` in a checkout that is not installed): the tab then imports that
    same copy, as the current folder comes first without ``-P``.
    """
    package_root = Path(__file__).resolve().parents[2]  # raglabel/web/tab.py -> the root
    try:
        here = Path.cwd().resolve()
    except OSError:  # the current folder was removed: nothing there can shadow anything
        return ["-P"]
    return [] if here == package_root else ["-P"]


def tab_command(project: Path, annotator: str, cutoffs: str) -> str:
    """The shell command that runs one tab's app, every argument quoted."""
    return shlex.join(
        [
            sys.executable,
            *interpreter_flags(),
            "-m",
            "raglabel",
            "label",
            str(project),
            "--annotator",
            annotator,
            "--locked",
            "-k",
            cutoffs,
        ]
    )


def error_line(output: str) -> str:
    """The line of an app's error output that says what went wrong: a traceback's
    exception line (``ImportError: ...``, its last), else the first line that says
    ``error`` (a warning may come before it), else the first line written."""
    lines = [_ESCAPES.sub("", line).rstrip() for line in output.splitlines()]
    lines = [line for line in lines if line.strip()]
    if not lines:
        return ""
    errors = [text for text in lines if _ERROR.search(text)]
    line = (errors or lines)[0].strip()
    if any("Traceback (most recent call last)" in text for text in lines):
        # Plain tracebacks indent their frames and Rich's draw them in a box: the
        # exception's own line is the last one that starts at the margin.
        found = [
            text
            for text in lines
            if not text[0].isspace()
            and text[0] not in _FRAME
            and not text.startswith(_TRACEBACK_HEADINGS)
        ]
        if found:
            line = found[-1].strip()
    return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"


@dataclass(frozen=True)
class Ending:
    """How a tab's app ended: whether it had started, whether it said it was done, its
    exit status, and what it wrote on stderr (and on stdout before it started)."""

    started: bool
    said_done: bool
    status: int
    output: str

    @property
    def failed(self) -> bool:
        """Anything but an app that started, then quit by itself with status 0."""
        return not (self.started and self.said_done and self.status == 0)

    @property
    def line(self) -> str:
        """The error's line, or what the exit status says when the app wrote none."""
        said = error_line(self.output)
        if said:
            return said
        if self.status < 0:
            return f"the app was ended by signal {-self.status}"
        if not self.started:
            return f"the app ended with status {self.status} before it started, saying nothing"
        return f"the app ended with status {self.status}, saying nothing"


class TabApp(AppService):
    """textual-serve's AppService with a reader that says how the app ended (see the
    module): ``ended`` hears it once the process is gone, failure or not."""

    def __init__(
        self,
        command: str,
        *,
        ended: Callable[[Ending], Awaitable[None]],
        **options: Any,
    ) -> None:
        # AppService runs the command through a shell; ``exec`` makes the app that
        # shell's own process, so ending the process ends the app, not only its shell.
        super().__init__(f"exec {command}", **options)
        self._ended = ended

    async def _open_app_process(self, width: int = 80, height: int = 24) -> Process:
        """Start the app as AppService does, but in a session of its own.

        With autogroups on (``/proc/sys/kernel/sched_autogroup_enabled`` is 1, the
        default of a Linux built with them), the kernel shares the CPU between
        sessions first and then shares a session's part between its processes: in the
        server's session, every tab's app would share one part with the server and
        with whatever else the person who started it runs there (the lead's eval,
        export and backup, a judge run), and a grade would wait behind those for a
        core (benchmarks/serve.py measures it; docs/benchmarks.md has the figures).
        Each tab is an interactive session, as each terminal window is. It also keeps
        a Ctrl-C or hangup meant for the server from reaching the apps: the server
        ends them itself (``stop``), on SIGHUP too (``serve``)."""
        environment = self._build_environment(width=width, height=height)
        self._process = process = await asyncio.create_subprocess_shell(
            self.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=environment,
            start_new_session=True,
        )
        assert process.stdin is not None
        self._stdin = process.stdin
        return process

    async def run(self) -> None:
        """Relay the app's packets until it ends, then say how it ended.

        Started by AppService's ``start``; its ``stop`` (quit, then wait for this) ends it.
        """
        process = self._process
        assert process is not None and process.stdout is not None and process.stderr is not None
        errors = asyncio.create_task(_kept(process.stderr))
        before: list[bytes] = []
        started = said_done = False
        try:
            started = await _prelude(process.stdout, before)
            if started:
                said_done = await self._relay(process.stdout)
            status = await _exit_status(process, process.stdout)
        except asyncio.CancelledError:
            # Only when the server itself stops: end the app, report nothing. Not raised
            # again, as AppService's ``stop`` awaits this task to know the app is gone.
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
            errors.cancel()
            return
        output = b"".join(before).decode("utf-8", "replace") + await errors
        await self._ended(Ending(started, said_done, status, output))

    async def _relay(self, stdout: asyncio.StreamReader) -> bool:
        """The app's packets to the browser; whether the app said it was done (its
        ``exit`` packet) before its output ended."""
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionResetError):
            while True:
                kind = await stdout.readexactly(1)
                size = int.from_bytes(await stdout.readexactly(4), "big")
                payload = await stdout.readexactly(size)
                if kind == b"D":
                    await self.on_data(payload)
                elif kind == b"P":
                    await self.on_packed(payload)
                elif kind == b"M":
                    # The app's exit packet comes before its last words on stderr (a
                    # crash's traceback): the tab closes once the process has ended.
                    if _meta_type(payload) == "exit":
                        return True
                    await self.on_meta(payload)
        return False


def _meta_type(payload: bytes) -> object:
    try:
        meta = json.loads(payload)
    except ValueError:
        return None
    return meta.get("type") if isinstance(meta, dict) else None


async def _prelude(stdout: asyncio.StreamReader, before: list[bytes]) -> bool:
    """Whether the app started: its web driver's first line came. Whatever it printed
    before is kept in ``before``, as part of what it said."""
    for _ in range(PRELUDE_LINES):
        try:
            line = await stdout.readline()
        except ValueError:  # a line longer than the stream's limit: not a starting app
            return False
        if line == STARTED:
            return True
        if not line:
            return False
        before.append(line)
    return False


async def _exit_status(process: asyncio.subprocess.Process, stdout: asyncio.StreamReader) -> int:
    """The app's exit status once it has ended; killed if it has not within EXIT_GRACE."""

    async def drain_and_wait() -> int:
        while await stdout.read(1 << 16):
            pass  # output after its exit packet, or junk instead of starting: unread
        return await process.wait()

    try:
        return await asyncio.wait_for(drain_and_wait(), EXIT_GRACE)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        return await process.wait()


async def _kept(stream: asyncio.StreamReader) -> str:
    """Everything the stream says until it ends, or its first and last KEPT_BYTES."""
    head = bytearray()
    tail = bytearray()
    skipped = 0
    while chunk := await stream.read(1 << 16):
        room = KEPT_BYTES - len(head)
        head += chunk[:room]
        tail += chunk[room:] if room > 0 else chunk
        if len(tail) > KEPT_BYTES:
            skipped += len(tail) - KEPT_BYTES
            del tail[:-KEPT_BYTES]
    gap = f"\n[... {skipped} bytes left out ...]\n".encode() if skipped else b""
    return bytes(head + gap + tail).decode("utf-8", "replace")
