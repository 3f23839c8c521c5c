"""The Queries screen's filter: the queries whose id or text holds some words.

A big project has 100,000 queries. Matching them one by one in Python costs some 25 ms
a filter; most filters (an id, a rare word) match a few, and ``str.find`` over all of
them joined in one string finds those few in a few milliseconds. A filter that matches
many is cut short: after ``DENSE`` matches the rest are tested one by one, which costs
no more than testing them all would have.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from itertools import accumulate

import numpy as np
from numpy.typing import NDArray

#: Matches found by searching the joined text before the rest are tested one by one.
DENSE = 2000
#: Between a query's id and text, and between queries: no typed filter holds them, so
#: no match spans two fields or two queries.
_FIELDS = "\x00"
_QUERIES = "\x01"


class QueryFilter:
    """Case-insensitive substring match over the queries' ids and texts."""

    def __init__(self, ids: Sequence[str], texts: Sequence[str]) -> None:
        self._folded = [
            f"{ext.casefold()}{_FIELDS}{text.casefold()}"
            for ext, text in zip(ids, texts, strict=True)
        ]
        self._joined = _QUERIES.join(self._folded)
        # Where each query starts in the joined text, and where the text ends.
        self._starts = [0, *accumulate(len(folded) + 1 for folded in self._folded)]

    def matching(self, words: str) -> NDArray[np.int64]:
        """Indexes of the queries whose id or text holds ``words`` (case-folded), in
        index order; every query when ``words`` is empty."""
        needle = words.casefold()
        if not needle:
            return np.arange(len(self._folded), dtype=np.int64)
        if _FIELDS in needle or _QUERIES in needle:
            return np.zeros(0, np.int64)
        found: list[int] = []
        find, starts, at = self._joined.find, self._starts, 0
        while len(found) < DENSE:
            at = find(needle, at)
            if at < 0:
                return np.array(found, dtype=np.int64)
            query = bisect.bisect_right(starts, at) - 1
            found.append(query)
            at = starts[query + 1]  # one match is enough: on to the next query
        rest = found[-1] + 1
        found += [q for q, folded in enumerate(self._folded[rest:], rest) if needle in folded]
        return np.array(found, dtype=np.int64)
