"""Matching retrieved text to known passages when a run carries text but no stable ids.

Texts are compared after ``normalize_passage``. A chunk whose normalised text equals a
passage's is that passage; otherwise a chunk found inside one passage's text (a span
the chunker cut out of it) is that passage. Short chunks are not span-matched: a
few words occur inside too many passages to say which one was retrieved.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

from raglabel.formats.context_ids import FileTexts, How
from raglabel.formats.text import content_id, normalize_passage

#: Shortest normalised chunk (in characters) that may match as a span of a passage.
MIN_SPAN_CHARS = 40


class PassageIndex(FileTexts):
    """Known passages' normalised texts, searchable for equality and for contained spans;
    the texts this import stores under their own ids are kept as :class:`FileTexts` keeps
    a file's."""

    def __init__(self, passages: Iterable[tuple[str, str]]) -> None:
        super().__init__()
        self._exact: dict[str, str] = {}
        self._ids: list[str] = []
        self._position: dict[str, int] = {}
        self._starts: list[int] = []
        parts: list[str] = []
        position = 0
        for ext_id, text in passages:
            norm = normalize_passage(text)
            if not norm:
                continue
            self._exact.setdefault(norm, ext_id)
            self._position[ext_id] = len(self._ids)
            self._ids.append(ext_id)
            self._starts.append(position)
            parts.append(norm)
            position += len(norm) + 1
        # One string, passages separated by NUL (which normalisation removes), so a
        # single C-speed find() scans the whole corpus for a span.
        self._haystack = "\x00".join(parts)

    def match(self, text: str, prefer: Iterable[str] = ()) -> tuple[str, How]:
        """The passage id this text is, and how it was found; unmatched text gets a new id.

        ``prefer`` lists passages to try first (e.g. the query's gold passages), so a
        span that two passages share, or a text that duplicate passages hold, goes to the
        one the labels name.
        """
        self._flush()
        norm = normalize_passage(text)
        preferred = list(prefer)
        hit = self._exact.get(norm) or self._added.get(norm)
        if hit is not None:
            same = next(
                (p for p in preferred if p in self._position and self._text_of(p) == norm), hit
            )
            return self._count(same, "exact")
        if len(norm) >= MIN_SPAN_CHARS:
            for ext_id in preferred:
                if norm in self._text_of(ext_id):
                    return self._count(ext_id, "span")
            found = self._haystack.find(norm)
            if found >= 0:
                index = bisect.bisect_right(self._starts, found) - 1
                return self._count(self._ids[index], "span")
        new_id = content_id(text)
        self._added[norm] = new_id
        return self._count(new_id, "new")

    def _store(self, ext_id: str, norm: str) -> None:
        """A passage stored during this import under its own id (``remember``): later
        text equal to it (another file of the same import) is that passage, not a new
        one; a text the project holds stays its passage's."""
        if norm and norm in self._exact:
            self._remembered.setdefault(ext_id, norm)
            return
        super()._store(ext_id, norm)

    def known_text(self, ext_id: str) -> str | None:
        """The normalised text of passage ``ext_id``: the project's, else the first one
        this import stored under that id; None when there is neither."""
        if ext_id in self._position:
            return self._text_of(ext_id)
        return super().known_text(ext_id)

    def _text_of(self, ext_id: str) -> str:
        index = self._position.get(ext_id)
        if index is None:
            return ""
        end = self._starts[index + 1] - 1 if index + 1 < len(self._starts) else None
        return self._haystack[self._starts[index] : end]
