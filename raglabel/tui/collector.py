"""When the app runs Python's full garbage collections: at rest, never under a key.

The session freezes what it holds for good (catalog, runs, grades), so a full
collection walks only the app's own objects: Textual's widgets, styles and strips,
tens of thousands of them. CPython runs a full collection once the long-lived objects
grew by a quarter of what the last one found, and after a freeze that is the app's
few alone: a quarter more comes within a few keys. Each took tens of milliseconds,
and hundreds on a busy machine, inside whatever key was being answered: the slowest
opens of a big project. Here the young and middle collections go on as before; the
full ones wait for a moment without input (or, if keys never stop, for many times the
usual count).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

#: How long without input counts as rest.
REST_S = 2.0
#: Held back this many times over, a full collection runs even without rest: memory
#: held by cycles must not grow for as long as keys keep coming.
BACKSTOP = 10
#: A threshold no count of middle collections reaches: the automatic full collection
#: never runs while the collector is held.
_NEVER = 1 << 30


class _Holds:
    """The thresholds found by the first hold, and how many holds are on: two apps in
    one process (tests, an embedding) hold and release in any order."""

    saved: tuple[int, int, int] | None = None
    count = 0


_HOLDS = _Holds()


class Collector:
    """Holds back automatic full collections and runs them when the app is at rest."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._last_input = clock()
        self._held = False

    def hold(self) -> None:
        if self._held:
            return
        if _HOLDS.count == 0:
            found = gc.get_threshold()
            # A collector whose full collections are not counted in middle collections
            # (CPython 3.14's incremental one ignores the third threshold) has nothing
            # to hold back here.
            if found[2] <= 0:
                return
            _HOLDS.saved = found
            gc.set_threshold(found[0], found[1], _NEVER)
        _HOLDS.count += 1
        self._held = True

    def release(self) -> None:
        """Give back the thresholds found at the first :meth:`hold` once no app holds
        them (the app is closing)."""
        if not self._held:
            return
        self._held = False
        _HOLDS.count -= 1
        if _HOLDS.count == 0 and _HOLDS.saved is not None:
            gc.set_threshold(*_HOLDS.saved)
            _HOLDS.saved = None

    def input_seen(self) -> None:
        self._last_input = self._clock()

    def due(self) -> bool:
        """Whether a full collection should run now: as many middle collections happened
        since the last full one as would have started one, and the app is at rest (or
        they are many times that many)."""
        if not self._held or _HOLDS.saved is None:
            return False
        counted, usual = gc.get_count()[2], _HOLDS.saved[2]
        if counted >= BACKSTOP * usual:
            return True
        return counted >= usual and self._clock() - self._last_input >= REST_S

    def collect_if_due(self) -> bool:
        if not self.due():
            return False
        gc.collect()
        return True
