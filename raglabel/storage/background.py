"""SQL run in a thread of its own while the caller works on: SQLite lets go of the GIL
while it writes, so a bulk write and the numpy or polars work beside it share the cores."""

from __future__ import annotations

import threading
from collections.abc import Callable


def in_background(work: Callable[[], None]) -> Callable[[], None]:
    """Start ``work`` in a thread; the returned call waits for it and raises what it
    raised. The caller must call it before touching what ``work`` touches."""
    failed: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # handed to the waiting thread
            failed.append(exc)

    thread = threading.Thread(target=run, name="raglabel-import-write")
    try:
        thread.start()
    except BaseException:
        # An interrupt inside start() can come once the thread runs: it is waited out.
        _wait_out(thread)
        raise

    def wait() -> None:
        interrupted = _wait_out(thread)
        if interrupted is not None:
            raise interrupted
        if failed:
            raise failed[0]

    return wait


def _wait_out(thread: threading.Thread) -> KeyboardInterrupt | None:
    """Join ``thread`` whatever comes meanwhile, and give back the interrupt that came.

    An interrupt (Ctrl-C) must not leave the thread writing on the connection while the
    caller rolls back and closes it: the thread is waited out, then the interrupt goes
    on."""
    interrupted: KeyboardInterrupt | None = None
    while thread.is_alive():
        try:
            thread.join()
        except KeyboardInterrupt as exc:
            interrupted = exc
    return interrupted
