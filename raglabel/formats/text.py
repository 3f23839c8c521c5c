"""Text normalisation for matching answers and passages by content."""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata

_SPACE = re.compile(r"\s+")


def normalize(text: str) -> str:
    """Unicode NFKC, case-folded, runs of white space collapsed to one space, trimmed."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


_DATE_LINE = re.compile(r"\s*date\s*:", re.IGNORECASE)
_SPEAKER = re.compile(r"^\s*(?:user|assistant)\s*:\s*", re.IGNORECASE | re.MULTILINE)


def normalize_passage(text: str) -> str:
    """A passage's text as content matching compares it.

    Some pipelines log a chunk as the JSON string of its text (``json.dumps``: in quotes,
    with ``\\n``, ``\\"`` and ``\\uXXXX`` escapes); such a text is read back first.
    Chunkers often prepend a ``Date: ...`` line or keep chat turns' ``user:`` and
    ``assistant:`` labels; neither is part of the passage, so both go before ``normalize``.
    """
    lines = json_unescaped(text).replace("\x00", " ").splitlines()
    while lines and (not lines[0].strip() or _DATE_LINE.match(lines[0])):
        lines.pop(0)
    return normalize(_SPEAKER.sub("", "\n".join(lines)))


def json_unescaped(text: str) -> str:
    """The string a JSON string literal stands for, when the whole text (white space
    aside) is one; any other text as it is. Only a whole literal is read: backslashes
    inside ordinary text (paths, LaTeX) are left alone."""
    stripped = text.strip()
    if len(stripped) < 2 or stripped[0] != '"' or stripped[-1] != '"':
        return text
    try:
        value = json.loads(stripped)
    except json.JSONDecodeError:
        return text
    return value if isinstance(value, str) else text


def content_id(text: str) -> str:
    """A stable id for a passage known only by its text: equal after normalisation, equal id."""
    digest = hashlib.sha256(normalize_passage(text).encode("utf-8")).hexdigest()
    return f"text:{digest[:16]}"
