"""When the app runs Python's full garbage collections: at rest, never under a key.

The session freezes what it holds for good (catalog, runs, grades), so a full
collection walks only the app's own objects: Textual's widgets, styles and strips,
tens of thousands of them. CPython runs a full collection once the long-lived objects
grew by a quarter of what the last one found, and after a freeze that is the app's
few alone: a quarter more comes within a few keys. Each took tens of milliseconds,
and hundreds on a busy machine, inside whatever key was being answered: the slowest
opens of a big project. Here the young and middle collections go on as before; the
full ones wait for a moment without input.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

#: How long without input counts as rest.
REST_S = 2.0
#: A threshold no count of middle collections reaches: the automatic full collection
#: never runs while the collector is held.
_NEVER = 1 << 30


class Collector:
    """Holds back automatic full collections and runs them when the app is at rest."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._last_input = clock()
        self._saved: tuple[int, int, int] | None = None

    def hold(self) -> None:
        if self._saved is None:
            self._saved = gc.get_threshold()
            young, middle, _ = self._saved
            gc.set_threshold(young, middle, _NEVER)

    def release(self) -> None:
        """Give back the thresholds found at :meth:`hold` (the app is closing)."""
        if self._saved is not None:
            gc.set_threshold(*self._saved)
            self._saved = None

    def input_seen(self) -> None:
        self._last_input = self._clock()

    def due(self) -> bool:
        """Whether a full collection should run now: the app is at rest, and as many
        middle collections happened since the last full one as would have started one."""
        if self._saved is None or self._clock() - self._last_input < REST_S:
            return False
        return gc.get_count()[2] >= self._saved[2]

    def collect_if_due(self) -> bool:
        if not self.due():
            return False
        gc.collect()
        return True
