"""Argument types that refuse absurd values while parsing, before anything is opened.

Each is an argparse ``type``: a bad value becomes argparse's own usage error, which names
the option (``argument --depth: must be a whole number from 1 to 1,000,000, got 0``) and
exits 2. Numbers are bounded, so no value reaches an allocation, a sleep or SQLite that
it would overflow; paths are checked for being a folder where a file is wanted.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path

#: The first bytes of every SQLite file.
SQLITE_HEADER = b"SQLite format 3\x00"

#: Options whose value may start with a minus sign: a grade map's first label can be
#: negative (``--grade-map -1:1,0:2``), which argparse, seeing ``-1:1,0:2`` after a
#: space, would take for an unknown option.
DASH_VALUE_OPTIONS = ("--grade-map",)
#: A value that starts with a negative label and its colon: a map, never an option.
_NEGATIVE_PAIR = re.compile(r"-\d+\s*:")


#: The shortest abbreviation of an option above that argparse also reads as it: no other
#: option of any command starts so (tests/unit/test_input_recognition.py checks).
_SHORTEST = len("--grade")


def _dash_value_option(word: str) -> bool:
    """``word`` names an option whose value may start with a dash: in full, or
    abbreviated as argparse allows (``--grade``)."""
    return len(word) >= _SHORTEST and any(name.startswith(word) for name in DASH_VALUE_OPTIONS)


def join_dash_values(words: Sequence[str]) -> list[str]:
    """``words`` with each ``--grade-map -1:1,...`` written ``--grade-map=-1:1,...``, the
    form argparse reads whatever the value starts with. Nothing after ``--`` changes."""
    out: list[str] = []
    rest = iter(words)
    for word in rest:
        out.append(word)
        if word == "--":
            out.extend(rest)
            break
        if _dash_value_option(word):
            value = next(rest, None)
            if value is None:
                break
            if value == "--":  # the end of options, not a value
                out.append(value)
                out.extend(rest)
                break
            if _NEGATIVE_PAIR.match(value):
                out[-1] = f"{word}={value}"
            else:
                out.append(value)
    return out


def int_in(low: int, high: int) -> Callable[[str], int]:
    """Whole numbers from ``low`` to ``high``."""

    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            shown = text if len(text) <= 40 else text[:40] + "..."
            raise argparse.ArgumentTypeError(f"{shown!r} is not a whole number") from None
        if not low <= value <= high:
            shown = str(value) if len(str(value)) <= 40 else "a number that large"
            raise argparse.ArgumentTypeError(
                f"must be a whole number from {low:,} to {high:,}, got {shown}"
            )
        return value

    return parse


def float_in(low: float, high: float, *, above: bool = False) -> Callable[[str], float]:
    """Finite numbers from ``low`` (or just above it, with ``above``) to ``high``."""

    def parse(text: str) -> float:
        try:
            value = float(text.strip())
        except ValueError:
            shown = text if len(text) <= 40 else text[:40] + "..."
            raise argparse.ArgumentTypeError(f"{shown!r} is not a number") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text.strip()}")
        if (value <= low if above else value < low) or value > high:
            bound = f"above {_shown(low)}" if above else f"at least {_shown(low)}"
            raise argparse.ArgumentTypeError(
                f"must be {bound} and at most {_shown(high)}, got {value:g}"
            )
        return value

    return parse


def _shown(number: float) -> str:
    return f"{int(number):,}" if number == int(number) else f"{number:g}"


def input_file(text: str) -> str:
    """A file to read: it exists and is not a folder."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: is a folder, not a file")
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{text}: no such file")
    return text


def output_file(text: str) -> str:
    """A file to write: not a folder, and in a folder that exists."""
    path = Path(text)
    if not text or path.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: is a folder; give the path of a file")
    parent = path.parent
    if not parent.is_dir():
        what = f"{str(parent)!r} is a file, not a folder"
        if not parent.exists():
            what = f"folder {str(parent)!r} does not exist"
        raise argparse.ArgumentTypeError(f"{text}: {what}")
    return text


def project_file(text: str) -> str:
    """An existing project file's path: a folder is named as one (opening it says the rest)."""
    if Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text}: is a folder, not a project file")
    return text


def new_file(text: str) -> str:
    """A file to create: not a folder, in a folder that exists."""
    if Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text}: is a folder; give the path of a new file")
    return output_file(text)


def is_sqlite(path: Path) -> bool:
    """Whether ``path`` is a readable file that starts as SQLite files do."""
    try:
        with path.open("rb") as handle:
            return handle.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


def same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file (through links, case-folding file systems or
    different spellings), or would once ``a`` is created."""
    try:
        return a.exists() and b.exists() and a.samefile(b)
    except OSError:
        return False


def project_companions(db: Path) -> list[Path]:
    """The project file and the files SQLite keeps beside it."""
    return [db, *(db.with_name(db.name + suffix) for suffix in ("-wal", "-shm", "-journal"))]


def writes_over_project(target: Path, db: Path) -> bool:
    """Whether writing ``target`` would overwrite the project ``db`` or its WAL."""
    resolved = target.resolve()
    for companion in project_companions(db):
        if companion.resolve() == resolved or same_file(target, companion):
            return True
    return False


class LazyWidthFormatter(argparse.HelpFormatter):
    """argparse's help formatter, measuring the terminal only when it formats.

    argparse makes a formatter for every option added to a parser (to check its metavar),
    and measuring the terminal imports shutil, with zlib, bz2 and lzma: about 2 ms of a
    quick ``raglabel eval``, for help it does not print. The width and help position are
    the ones argparse computes itself, worked out at the first use instead.
    """

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        self._measure = width is None
        self._asked_position = max_help_position
        super().__init__(prog, indent_increment, max_help_position, width=width or 80)

    def format_help(self) -> str:
        if self._measure:
            import shutil

            self._measure = False
            self._width = shutil.get_terminal_size().columns - 2
            self._max_help_position = min(
                self._asked_position, max(self._width - 20, self._indent_increment * 2)
            )
        return super().format_help()


class LazyWidthRawDescription(LazyWidthFormatter, argparse.RawDescriptionHelpFormatter):
    """:class:`LazyWidthFormatter` keeping the description's and epilog's line breaks."""
