"""Writing output files so that a failure never leaves half a file behind."""

from __future__ import annotations

import os
import re
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from raglabel.errors import InputError


@contextmanager
def atomic_text(path: Path, newline: str | None = None) -> Iterator[TextIO]:
    """A text handle on a file beside ``path`` that replaces ``path`` only on success.

    A symlink is followed: the file it names is replaced and the link stays. The
    process's own streams (``/dev/stdout``, ``/proc/self/fd/1``) are written where they
    stand, after what was already written there (a ``>>`` redirect keeps its file). A
    target that is not a regular file (a pipe, a terminal) cannot be replaced, and holds
    nothing a half write could spoil: it is written straight through."""
    stream = _own_stream(path)
    if stream is not None or _special(path):
        try:
            if stream is not None:
                for own in (sys.stdout, sys.stderr):
                    own.flush()  # what the process printed before stays before
                target = os.fdopen(os.dup(stream), "w", encoding="utf-8", newline=newline)
            else:
                target = path.open("w", encoding="utf-8", newline=newline)
            with target as handle:
                yield handle
        except OSError as exc:
            raise InputError(path, f"cannot write: {exc.strerror}") from None
        return
    real = Path(os.path.realpath(path))
    tmp = real.with_name(f".{real.name}.tmp-{os.getpid()}")
    try:
        with tmp.open("w", encoding="utf-8", newline=newline) as handle:
            yield handle
        tmp.replace(real)
    except OSError as exc:
        raise InputError(path, f"cannot write: {exc.strerror}") from None
    finally:
        tmp.unlink(missing_ok=True)


_STREAMS = {"/dev/stdout": 1, "/dev/stderr": 2}
_STREAM_PATH = re.compile(r"/(?:dev/fd|proc/self/fd)/(\d+)")


def _own_stream(path: Path) -> int | None:
    """The descriptor ``path`` names when it is one of the process's own."""
    text = os.path.abspath(path)
    if text in _STREAMS:
        return _STREAMS[text]
    named = _STREAM_PATH.fullmatch(text)
    return None if named is None else int(named.group(1))


def _special(path: Path) -> bool:
    """Whether ``path`` exists and is not a regular file (a pipe, a device)."""
    try:
        return not stat.S_ISREG(path.stat().st_mode)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise InputError(path, f"cannot write: {exc.strerror}") from None
