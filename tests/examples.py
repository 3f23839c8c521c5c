"""How many examples each Hypothesis property of the suite draws, and each loop over
seeds or widths written as one.

Two profiles, registered in ``conftest.py``: ``thorough`` draws each property's own count,
the one written at the property (``@examples(200)``), and is what the README's test
command and ``.ci/run`` ask for (``--hypothesis-profile=thorough``); ``quick``, the default,
draws a quarter of it, at least ``QUICK_LEAST``, for the loop run while changing code
(docs/tests.md). Either way a property that failed once replays its failing example
first, from Hypothesis' example database in ``.hypothesis/``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from hypothesis import settings

T = TypeVar("T")

#: The profiles' own ``max_examples``, for the properties that name no count; a property's
#: count is scaled by the loaded profile's over THOROUGH's.
THOROUGH = 100
QUICK = 25
#: A quick run of a property never draws fewer examples than this.
QUICK_LEAST = 10


def register() -> None:
    """Both profiles, ``quick`` loaded; ``--hypothesis-profile`` loads another after."""
    settings.register_profile("thorough", max_examples=THOROUGH)
    settings.register_profile("quick", max_examples=QUICK)
    settings.load_profile("quick")


def count(written: int, loaded: int | None = None) -> int:
    """The examples a property written for ``written`` draws under the loaded profile (or
    one whose ``max_examples`` is ``loaded``)."""
    if loaded is None:
        loaded = settings.default.max_examples
    if loaded >= THOROUGH:
        return written
    return min(written, max(QUICK_LEAST, round(written * loaded / THOROUGH)))


def examples(written: int, **more: Any) -> settings:
    """The settings of a property written for ``written`` examples, without a deadline
    (a shared 2-core machine makes any deadline flaky); ``more`` as ``settings`` takes."""
    return settings(max_examples=count(written), deadline=None, **more)


def thinned(cases: Sequence[T], loaded: int | None = None) -> list[T]:
    """``cases`` as the loaded profile takes them: all under ``thorough``; under ``quick``
    as many as ``count`` gives, spread evenly, the first and the last kept."""
    wanted = count(len(cases), loaded)
    if wanted >= len(cases):
        return list(cases)
    step = (len(cases) - 1) / (wanted - 1)
    return [cases[round(i * step)] for i in range(wanted)]


def header() -> str:
    """pytest's header line: which profile this run draws by."""
    if settings.default.max_examples >= THOROUGH:
        return "property examples: thorough (each property's own count)"
    return (
        "property examples: quick (a quarter of each property's count;"
        " --hypothesis-profile=thorough for all)"
    )
