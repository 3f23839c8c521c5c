"""When each key and each piece of screen output passed through ``raglabel serve``: the
server's side of a tab's latency, for benchmarks/serve.py to split it into the app's
part and the relay's.

Off unless ``RAGLABEL_SERVE_TRACE`` names a file when the server starts; then the server
appends one JSON object a line to it: a key (``"key"``: when the websocket message was
read, and when its bytes were written to the app's stdin) or a packet of terminal output
(``"out"``: when it was read from the app's stdout, and when the websocket send
returned), each with the tab's number, its annotator and the bytes. Times are
``time.monotonic()``, on Linux one clock for every process of the host, so a client on
the same host can set them beside its own. Off, the relay pays one test for None a
message.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TextIO

from raglabel.errors import InputError

#: The environment variable that turns the trace on, naming the file it appends to.
ENV_TRACE = "RAGLABEL_SERVE_TRACE"


class RelayTrace:
    """The trace file, shared by every tab of one server."""

    def __init__(self, handle: TextIO) -> None:
        self._handle = handle
        self._tabs = 0

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> RelayTrace | None:
        """The trace ``RAGLABEL_SERVE_TRACE`` asks for, or None when it is unset or empty."""
        target = environ.get(ENV_TRACE)
        if not target:
            return None
        try:
            # Appended, not replaced: a file given twice keeps both servers' lines.
            return cls(Path(target).open("a", encoding="utf-8"))
        except OSError as exc:
            why = f"{ENV_TRACE} names it, but it cannot be opened to append to ({exc.strerror})"
            raise InputError(target, why) from None

    def tab(self, annotator: str) -> TabTrace:
        """The record of one more tab, numbered from 1 in the order they open."""
        self._tabs += 1
        return TabTrace(self, self._tabs, annotator)

    def write(self, entry: dict[str, object]) -> None:
        # Buffered: the lines reach the file when the buffer fills or the server stops,
        # so tracing adds no system call to most messages.
        self._handle.write(json.dumps(entry) + "\n")

    def close(self) -> None:
        self._handle.close()


class TabTrace:
    """One tab's lines of the trace."""

    def __init__(self, trace: RelayTrace, number: int, annotator: str) -> None:
        self._trace = trace
        self.number = number
        self.annotator = annotator

    def key(self, received: float, size: int) -> None:
        """A key message read at ``received`` whose ``size`` bytes the app's stdin has
        taken now."""
        self._entry("key", received, time.monotonic(), size)

    def timed_output(
        self, send: Callable[[bytes], Awaitable[None]]
    ) -> Callable[[bytes], Awaitable[None]]:
        """``send`` (the websocket's), noting when each packet came from the app (the
        relay calls it as soon as it has read one) and when the send returned."""

        async def timed(payload: bytes) -> None:
            read = time.monotonic()
            await send(payload)
            self._entry("out", read, time.monotonic(), len(payload))

        return timed

    def _entry(self, event: str, first: float, second: float, size: int) -> None:
        start, end = ("received", "written") if event == "key" else ("read", "sent")
        self._trace.write(
            {
                "event": event,
                "tab": self.number,
                "annotator": self.annotator,
                start: first,
                end: second,
                "bytes": size,
            }
        )
