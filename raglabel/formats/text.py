"""Text normalisation for matching answers (and, later, passages) by content."""

from __future__ import annotations

import re
import unicodedata

_SPACE = re.compile(r"\s+")


def normalize(text: str) -> str:
    """Unicode NFKC, case-folded, runs of white space collapsed to one space, trimmed."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()
