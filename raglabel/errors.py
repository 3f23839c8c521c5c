"""Errors that reach the user: each names what was wrong and where."""

from __future__ import annotations

from pathlib import Path


class InputError(Exception):
    """Bad input: a file, a line (when there is one) and what is wrong with it; a column
    too when a parser knows it (``file:line:col: message``, as compilers write it)."""

    def __init__(
        self,
        source: str | Path | None,
        message: str,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        self.source = None if source is None else str(source)
        self.line = line
        self.column = column
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.source or ""
        if self.line is not None:
            where = f"{where}:{self.line}"
            if self.column is not None:
                where = f"{where}:{self.column}"
        return f"{where}: {self.message}" if where else self.message


class UsageError(Exception):
    """Options that do not fit together; reported like argparse's own errors (exit 2)."""


class StorageError(Exception):
    """The project file refused a write (read-only, disk full, locked too long, I/O
    error). The transaction was rolled back: nothing of it was saved."""


class RaglabelWarning(UserWarning):
    """What the command line prints as ``warning: ...``, raised through ``warnings.warn``
    by the Python API, so a notebook shows it and ``warnings.filterwarnings`` can make it
    an error or silence it."""
