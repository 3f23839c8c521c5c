"""The Python API's warnings: what the command line prints as ``warning: ...``, raised
as :class:`~raglabel.errors.RaglabelWarning` so a notebook shows it under the cell."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterable
from types import FrameType

from raglabel.errors import RaglabelWarning


def warn(texts: Iterable[str]) -> None:
    """Each text as a :class:`RaglabelWarning`, attributed to the first line outside
    raglabel (the notebook's call), however deep in the API it is raised: Python's
    once-per-line filter then counts the user's lines, and the message points at one."""
    level = 1  # warnings.warn's own count: 1 is this function
    frame = sys._getframe(0)
    while frame.f_back is not None and _ours(frame):
        frame = frame.f_back
        level += 1
    for text in texts:
        warnings.warn(text, RaglabelWarning, stacklevel=level)


def _ours(frame: FrameType) -> bool:
    name = str(frame.f_globals.get("__name__", ""))
    return name == "raglabel" or name.startswith("raglabel.")
