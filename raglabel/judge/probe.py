"""The passages of a probe: a graded passage altered in one way known to sway LLM
assessors, so that asking the judge about it beside the passage as it is shows whether
the judge's grade moves for a reason that is not relevance.

Two alterations, both appended after a blank line so the passage itself stays whole and
first:

- ``length``: unrelated text of about the passage's own length (``pad``), taken from
  other passages of the project that are candidates of other queries and not of this
  one, in an order drawn from a seed (``filler``);
- ``stuffing``: the query's words, in the query's order (``stuff``).

Pure text: no I/O; the draws take a ``random.Random`` the caller seeds.
"""

from __future__ import annotations

import random
import re
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Final

LENGTH: Final = "length"
STUFFING: Final = "stuffing"
PROBES: Final = (LENGTH, STUFFING)
#: What each probe does to a passage, in the words reports use.
DOES: Final = {
    LENGTH: "the passage padded with unrelated text of about its own length, appended after"
    " a blank line: passages that are candidates of other queries (pooled from a run, or"
    " named by a label) and not of this one, in an order drawn from the seed, the last cut"
    " at a space",
    STUFFING: "the query's words (in its order) appended to the passage after a blank line",
}
#: Between the passage and what is appended, and between two passages of a filler.
BREAK: Final = "\n\n"
#: Fewer donors than this are shuffled whole; more are drawn one index at a time.
_SHUFFLE_BELOW: Final = 4096
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Filler:
    """Unrelated text for one passage: the text, and the donor passages it came from."""

    text: str
    donors: tuple[int, ...]  # positions in the list of texts it was drawn from

    @property
    def chars(self) -> int:
        return len(self.text)


def filler(
    length: int, texts: Sequence[str], excluded: Collection[int], rng: random.Random
) -> Filler:
    """About ``length`` characters of unrelated text: ``texts`` (other passages; those at
    the positions in ``excluded`` left out, as are empty ones) in an order ``rng`` draws,
    joined by a blank line, and cut at the last white space at or before ``length`` (at
    ``length`` itself when the last donor has none in its second half). Shorter when the
    donors run out; empty when there are none."""
    parts: list[str] = []
    used: list[int] = []
    size = 0
    for at in _draw_order(len(texts), rng):
        if size >= length:
            break
        text = texts[at].strip()
        if at in excluded or not text:
            continue
        parts.append(text)
        used.append(at)
        size += len(text) + (len(BREAK) if len(parts) > 1 else 0)
    joined = BREAK.join(parts)
    if len(joined) > length:
        cut = max(joined.rfind(space, 0, length + 1) for space in " \n\t")
        joined = joined[: cut if cut > length // 2 else length].rstrip()
    return Filler(joined, tuple(used))


def _draw_order(n: int, rng: random.Random) -> Iterator[int]:
    """Each of ``range(n)`` once, in an order ``rng`` draws: a shuffle for a small list,
    else indices drawn one at a time, repeats skipped, so a filler of a few passages
    from a project of a million costs a few draws, not a million."""
    if n < _SHUFFLE_BELOW:
        order = list(range(n))
        rng.shuffle(order)
        yield from order
        return
    seen: set[int] = set()
    while len(seen) < n:
        at = rng.randrange(n)
        if at not in seen:
            seen.add(at)
            yield at


def pad(passage: str, extra: Filler) -> str:
    """The passage, a blank line, then the filler (the passage alone when it is empty)."""
    return f"{passage}{BREAK}{extra.text}" if extra.text else passage


def query_words(query: str) -> str:
    """The query's words (runs of letters, digits and ``_``), in order, spaced."""
    return " ".join(_WORD.findall(query))


def stuff(passage: str, query: str) -> str:
    """The passage, a blank line, then the query's words."""
    words = query_words(query)
    return f"{passage}{BREAK}{words}" if words else passage


def alter(probe: str, passage: str, query: str, extra: Filler) -> str:
    """The passage as ``probe`` alters it (``extra`` is the filler of ``length``)."""
    if probe == LENGTH:
        return pad(passage, extra)
    if probe == STUFFING:
        return stuff(passage, query)
    raise ValueError(f"no probe named {probe!r}; the probes are {', '.join(PROBES)}")
