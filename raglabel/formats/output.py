"""Writing output files so that a failure never leaves half a file behind."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from raglabel.errors import InputError


@contextmanager
def atomic_text(path: Path, newline: str | None = None) -> Iterator[TextIO]:
    """A text handle on a file beside ``path`` that replaces ``path`` only on success."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with tmp.open("w", encoding="utf-8", newline=newline) as handle:
            yield handle
        tmp.replace(path)
    except OSError as exc:
        raise InputError(path, f"cannot write: {exc.strerror}") from None
    finally:
        tmp.unlink(missing_ok=True)
