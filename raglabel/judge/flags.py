"""Passages a person should look at before trusting any judge: ones that talk to the
grader, and ones stuffed with the query's words to look relevant.

Heuristics, tuned to be quiet on ordinary prose: a flag asks for a human, it never
changes a grade.
"""

from __future__ import annotations

import re
from collections import Counter

_ADDRESSING = re.compile(
    "|".join(
        (
            r"\b(?:this|the following|the above|the below|the present) (?:passage|document|text"
            r"|chunk|context|snippet|page) is (?:highly |very |extremely |the most |most |"
            r"clearly |perfectly )?(?:relevant|decisive)\b",
            r"\bignore (?:all |any )?(?:the )?(?:previous|prior|above|earlier|other) "
            r"(?:instructions?|prompts?|rules|passages?)",
            r"\b(?:grade|rate|score|mark|rank) (?:this|it|me)(?: passage| document| text)?"
            r" (?:as |with )?(?:a |an )?(?:[1-5]|five|highest|top|maximum)\b",
            r"\bas an? (?:ai|a\.i\.|(?:ai |large )?language model|llm)\b",
            r"\b(?:you are|you're) (?:an? )?(?:ai|assistant|language model|llm|grader|judge"
            r"|evaluator|relevance (?:model|judge))\b",
            r"\b(?:dear|attention|note to|hey)(?: the)? (?:ai|assistant|model|llm|grader|judge"
            r"|evaluator|reviewer|language model)s?\s*[:,!]",
            r"\brelevance (?:score|grade|rating|label)\s*[:=]",
            r"\"grade\"\s*:",
            r"^\s*(?:system|assistant)\s*:",
            r"<\|?(?:im_start|im_end|system|endoftext)\|?>",
            r"\[/?inst\]",
        )
    ),
    re.IGNORECASE | re.MULTILINE,
)
_WORD = re.compile(r"\w+")
_STOP_WORDS = (
    "the and for with that this from what which who whom whose how why when where are was"
    " were been being have has had does did can could should would will shall may might"
    " not but into onto about than then there their they them its it's you your our"
    " any all some more most such only also very just over under after before between"
)
_STOP = frozenset(_STOP_WORDS.split())
MIN_WORDS = 12  # below this, a passage is too short for density to mean anything
DENSITY = 0.4  # share of a passage's words that are query terms
REPEATS = 6  # one query term this often, with at least half DENSITY


def flag_passage(query: str, passage: str) -> str | None:
    """Why the passage needs a human look, or None."""
    found = _ADDRESSING.search(passage)
    if found:
        return f"addresses the grader: {_clip(found.group(0))!r}"
    return _stuffing(query, passage)


def _stuffing(query: str, passage: str) -> str | None:
    terms = {w for w in _WORD.findall(query.lower()) if len(w) >= 3 and w not in _STOP}
    words = _WORD.findall(passage.lower())
    if not terms or len(words) < MIN_WORDS:
        return None
    counts = Counter(w for w in words if w in terms)
    hits = sum(counts.values())
    density = hits / len(words)
    top, top_count = counts.most_common(1)[0] if counts else ("", 0)
    if density >= DENSITY or (top_count >= REPEATS and density >= DENSITY / 2):
        return (
            f"stuffed with the query's words: {density:.0%} of its words are query terms"
            f" ({top!r} {top_count} times)"
        )
    return None


def _clip(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
