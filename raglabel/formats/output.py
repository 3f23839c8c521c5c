"""Writing output files so that a failure never leaves half a file behind."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from raglabel.errors import InputError


@contextmanager
def atomic_text(path: Path, newline: str | None = None) -> Iterator[TextIO]:
    """A text handle on a file beside ``path`` that replaces ``path`` only on success.

    A symlink is followed: the file it names is replaced and the link stays. A target
    that is not a regular file (a pipe, a terminal, ``/dev/stdout``) cannot be replaced,
    and holds nothing a half write could spoil: it is written straight through."""
    if _straight_through(path):
        try:
            with path.open("w", encoding="utf-8", newline=newline) as handle:
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


def _straight_through(path: Path) -> bool:
    # /dev/stdout and /proc/self/fd/1 name whatever the process writes to, even when
    # that is a regular file: replacing it would cut the shell's redirection off.
    if str(path).startswith(("/dev/", "/proc/")):
        return True
    try:
        return not stat.S_ISREG(path.stat().st_mode)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise InputError(path, f"cannot write: {exc.strerror}") from None
