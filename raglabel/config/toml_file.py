"""Reading the TOML files users write (key files, metric config files) with errors that
name the file and the line, like every other input raglabel reads."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from raglabel.errors import InputError
from raglabel.formats.limits import check_line

_AT_LINE = re.compile(r"\(at line (\d+), (column \d+)\)$")


def read_toml(path: Path, what: str) -> tuple[dict[str, Any], str]:
    """The parsed table and the text, or an InputError at the line that is wrong."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(path, f"no such {what}") from None
    except IsADirectoryError:
        raise InputError(path, f"is a folder, not a {what}") from None
    except OSError as exc:
        raise InputError(path, f"cannot read the {what}: {exc.strerror or exc}") from None
    for number, raw in enumerate(data.split(b"\n"), start=1):
        check_line(path, raw, number)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        start = data.rfind(b"\n", 0, exc.start) + 1
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            path, f"is not UTF-8 text (byte {exc.start - start + 1} of the line)", line
        ) from None
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        found = _AT_LINE.search(message)
        at = int(found.group(1)) if found else None
        # The line goes where every error's line goes; the column stays in the words.
        message = _AT_LINE.sub(lambda m: f"({m.group(2)})", message)
        raise InputError(path, f"is not valid TOML: {message}", at) from None
    return table, text


def line_of(text: str, key: str, table: str | None = None) -> int | None:
    """The line where ``key`` is set (inside ``[table]`` when given), for messages about
    a value TOML parsed but raglabel cannot use."""
    section: str | None = None
    pattern = re.compile(rf"""^\s*(?:{re.escape(key)}|"{re.escape(key)}"|'{re.escape(key)}')\s*=""")
    for number, line in enumerate(text.splitlines(), 1):
        header = re.match(r"^\s*\[\s*([^\]]+?)\s*\]", line)
        if header:
            section = header.group(1).strip("\"'")
            if table is None and section == key:
                return number
            continue
        if (table is None or section == table) and pattern.match(line):
            return number
    # Inline and dotted tables (metrics = { alpha = 1 }, metrics.alpha = 1): the first
    # line that sets the key anywhere.
    anywhere = re.compile(rf"""(?:^|[\s{{.,])["']?{re.escape(key)}["']?\s*=""")
    for number, line in enumerate(text.splitlines(), 1):
        if anywhere.search(line.split("#", 1)[0]):
            return number
    return None
