"""An answer cut into sentences, as character spans into its text.

The spans are what a person marks as unsupported and what the answer-grades file stores,
so they must be stable and exact: every non-space character belongs to exactly one span,
spans never hold leading or trailing whitespace, and ``text[start:end]`` is the sentence.

A sentence ends at ``.``, ``!`` or ``?`` (with any closing quotes or brackets after it)
when whitespace follows, and at every line break: generated answers put list items and
headings on lines of their own. A period does not end a sentence after an abbreviation
that never ends one ("e.g.", "Dr."), after an initial ("J. Smith"), after a list number
at the start of a line ("2. Open Settings"), when the next word starts in lower case
("5 p.m. on Fridays"), before a number after "No." or "Fig.", or inside a number or a
name ("3.5", "example.com": no space follows). The full-width stops of Chinese and
Japanese end a sentence with no space after.
"""

from __future__ import annotations

import re

Span = tuple[int, int]

#: Abbreviations (lower case, without their final period) that a sentence never ends on.
NEVER_END = frozenset(
    {
        "e.g",
        "i.e",
        "cf",
        "vs",
        "viz",
        "approx",
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "st",
        "jr",
        "sr",
        "ca",
    }
)
#: Abbreviations that stand before a number ("No. 5", "Fig. 3"): no end when a digit
#: follows, while "The answer is no. Then" still ends on "no.".
BEFORE_NUMBER = frozenset({"no", "nos", "vol", "pp", "fig", "figs", "eq", "eqs", "p"})

# The punctuation run that may end a sentence, the closers that stay with it, then the
# whitespace after it.
_END = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s|$)|[。！？]+[」』）]*")


def _ends_sentence(text: str, punct_start: int, punct_end: int, line_start: int) -> bool:
    punct = text[punct_start:punct_end]
    if not punct.startswith("."):
        return True  # "!", "?", "...?" and the full-width stops always end one
    if punct.startswith("..."):
        return _next_is_not_lower(text, punct_end)
    word_start = punct_start
    while word_start > line_start and not text[word_start - 1].isspace():
        word_start -= 1
    # Opening quotes or brackets do not belong to the word ("(e.g. this)").
    word = text[word_start:punct_start].lstrip("\"'“‘([")
    if word.casefold() in NEVER_END:
        return False
    if word.casefold() in BEFORE_NUMBER and _next_char(text, punct_end).isdigit():
        return False
    if len(word) == 1 and word.isalpha() and word.isupper():
        return False  # an initial: "J. Smith"
    if word.isdigit() and word_start == _first_char(text, line_start):
        return False  # a numbered list item: "2. Open Settings"
    return _next_is_not_lower(text, punct_end)


def _first_char(text: str, line_start: int) -> int:
    position = line_start
    while position < len(text) and text[position] in " \t":
        position += 1
    return position


def _next_char(text: str, position: int) -> str:
    """The next character on the line after spaces and tabs; "" at a line's end."""
    while position < len(text) and text[position] in " \t":
        position += 1
    if position >= len(text) or text[position] in "\r\n":
        return ""
    return text[position]


def _next_is_not_lower(text: str, position: int) -> bool:
    """Whether the next word on the line (if any) does not start in lower case; a line
    break or the end of the text counts as a start in upper case."""
    return not _next_char(text, position).islower()


def sentence_spans(text: str) -> list[Span]:
    """The sentences of ``text`` as ``(start, end)`` character offsets, end exclusive."""
    spans: list[Span] = []
    line_start = 0
    for line in text.splitlines(keepends=True):
        cut = line_start
        body_end = line_start + len(line.rstrip("\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029"))
        for found in _END.finditer(text, line_start, body_end):
            if _ends_sentence(text, found.start(), found.end(), line_start):
                _add(spans, text, cut, found.end())
                cut = found.end()
        _add(spans, text, cut, body_end)
        line_start += len(line)
    return spans


def _add(spans: list[Span], text: str, start: int, end: int) -> None:
    """The span ``start:end`` without its surrounding whitespace, unless nothing is left."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if start < end:
        spans.append((start, end))
