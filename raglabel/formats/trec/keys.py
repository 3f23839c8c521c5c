"""64-bit keys of (query, passage id) pairs, and what the aligners do with them: the
labels' index of pairs (:class:`PairIndex`, which also finds a pair judged twice), a
filter of bits that rules out most rows without a label before any search, and a test
that no pair is met twice in a query without a hash set of all keys. numpy only: the
small-input path imports it too.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

_FNV_OFFSET, _FNV_PRIME = np.uint64(0xCBF29CE484222325), np.uint64(0x100000001B3)
# An odd 64-bit constant (the golden ratio's): spreads query indexes over all bits.
_MIX = np.uint64(0x9E3779B97F4A7C15)
# MurmurHash3's 64-bit finalizer (its shift and two multipliers): see pair_keys.
_FINAL_SHIFT = np.uint64(33)
_FINAL_1, _FINAL_2 = np.uint64(0xFF51AFD7ED558CCD), np.uint64(0xC4CEB9FE1A85EC53)


def pair_keys(qidx: NDArray[np.int64], docids: NDArray[np.bytes_]) -> NDArray[np.uint64]:
    """Equal (query index, docid) pairs get equal keys; different ones almost never do.

    FNV-1a over the 8-byte words of each id, skipping all-zero words (padding only: ids
    hold no NUL byte) so that the key does not depend on the array's width; then the
    query's index mixed in, and every bit spread over the low ones.

    The spreading matters: a product's low bits depend only on its factors' low bits,
    so FNV's low 32 bits see only the first four bytes of each word. Ids such as
    ``doc12_3`` and ``doc12_4`` then shared them, and the users of the low bits (the
    labels' filter, :func:`distinct_in_blocks`) lost their use: on 100,000 run rows of
    such ids, 80% of rows passed a filter meant to pass one in sixteen, and every run
    was sorted again to look for repeats.
    """
    if docids.size == 0:
        return np.zeros(0, dtype=np.uint64)
    width = -(-docids.itemsize // 8) * 8
    words = np.ascontiguousarray(docids.astype(f"S{width}")).view(np.uint64)
    keys = np.full(docids.size, _FNV_OFFSET, dtype=np.uint64)
    for word in words.reshape(docids.size, -1).T:
        keys = np.where(word != 0, (keys ^ word) * _FNV_PRIME, keys)
    keys ^= qidx.astype(np.uint64) * _MIX
    keys ^= keys >> _FINAL_SHIFT
    keys *= _FINAL_1
    keys ^= keys >> _FINAL_SHIFT
    keys *= _FINAL_2
    keys ^= keys >> _FINAL_SHIFT
    return keys


def distinct(values: NDArray[Any]) -> NDArray[Any]:
    """Sorted distinct values; np.unique without return arrays imports numpy.ma (20 ms)."""
    ordered = np.sort(values)
    keep = np.ones(ordered.size, dtype=np.bool_)
    keep[1:] = ordered[1:] != ordered[:-1]
    return ordered[keep]


def id_blocks(qids: NDArray[np.bytes_]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Start and length of each run of equal ids (files list a query's rows together)."""
    if qids.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    values = _as_integers(qids)
    starts = np.concatenate([[0], np.flatnonzero(values[1:] != values[:-1]) + 1])
    return starts.astype(np.int64), np.diff(np.append(starts, qids.size)).astype(np.int64)


def _as_integers(ids: NDArray[np.bytes_]) -> NDArray[Any]:
    """Ids 1, 2, 4 or 8 bytes wide as unsigned integers of that width, equal exactly when
    the ids are (the zero padding is part of both); other widths as they are. numpy
    compares fixed-width bytes forty times slower than integers (0.6 ms for 100,000 ids
    of 4 bytes); widening other widths to these costs a copy, which cost more than it
    saved (8.2 ms against 5.7 for a million ids of 5 bytes)."""
    if ids.itemsize not in (1, 2, 4, 8):
        return ids
    return np.ascontiguousarray(ids).view(f"u{ids.itemsize}")


# A plain class with slots: no code generated at every eval's start-up.
class PairIndex:
    """Labels' (query id, passage id) pairs indexed for lookups: the distinct query ids
    sorted as bytes, each row's place among them, and the rows in the order of their
    pair keys (:func:`pair_keys`)."""

    __slots__ = ("ids", "key_order", "keys_sorted", "qidx")

    def __init__(self, qids: NDArray[np.bytes_], docids: NDArray[np.bytes_]) -> None:
        # Ids are looked up once per block of equal ids, not once per row.
        starts, lengths = id_blocks(qids)
        self.ids = distinct(qids[starts])
        self.qidx = np.repeat(np.searchsorted(self.ids, qids[starts]), lengths).astype(np.int64)
        keys = pair_keys(self.qidx, docids)
        # Any order of equal keys will do: neighbours are compared on the ids (repeated
        # pairs, collisions), and a lookup tells colliding pairs apart on them too. The
        # default sort is twice as fast as the stable one.
        self.key_order = np.argsort(keys).astype(np.int64)
        self.keys_sorted = keys[self.key_order]

    def repeats(self, docids: NDArray[np.bytes_]) -> bool:
        """Whether some (query, passage) pair is in two rows (``docids``: the rows' own)."""
        keys = self.keys_sorted
        meets = keys[1:] == keys[:-1]
        if not meets.any():
            return False
        # Every row of a run of equal keys, compared as ids: a repeated pair whose key
        # also met another pair's need not lie next to its twin in the sorted order.
        shared = np.zeros(keys.size, dtype=np.bool_)
        shared[:-1] |= meets
        shared[1:] |= meets
        rows = self.key_order[shared]
        pairs = list(zip(self.qidx[rows].tolist(), docids[rows].tolist(), strict=True))
        return len(set(pairs)) < len(pairs)


#: Filter bits per label key, and the most bits: about one row in sixteen without a
#: grade passes the filter to the binary search (one in eight past four million labels).
_FILTER_SLOTS_PER_KEY = 16
_MAX_FILTER_SLOTS = 1 << 26


def key_filter(keys: NDArray[np.uint64]) -> NDArray[np.uint8]:
    """Marks, at each key's low bits, that some key has them: a power-of-two table of
    bits that no key is missing from (so it only rules rows out) and that few other keys
    hit. Bits, not bytes: every row of a run looks a key up in it at random, and a
    megabyte of bits stays in the core's cache where eight of bytes did not (the lookups
    cost twice as much)."""
    wanted = max(keys.size * _FILTER_SLOTS_PER_KEY, 8)
    slots = min(1 << (wanted - 1).bit_length(), _MAX_FILTER_SLOTS)
    # Marked as bytes, then packed: setting bits in place (bitwise_or.at) is slower than
    # the rest of the labels' reading.
    marks = np.zeros(slots, dtype=np.bool_)
    marks[keys & np.uint64(slots - 1)] = True
    return np.packbits(marks, bitorder="little")


#: Rows whose keys are looked up in the filter at a time: a block of a large run is one
#: go, and a project's whole stored run (tens of millions of rows at once) does not
#: hold the lookup's temporaries, ten bytes a row, for all of them at the same time.
_FILTER_ROWS = 1 << 20


def filtered_rows(marks: NDArray[np.uint8], keys: NDArray[np.uint64]) -> NDArray[np.intp]:
    """The rows whose keys pass the filter (:func:`in_filter`), in order."""
    if keys.size <= _FILTER_ROWS:
        return np.flatnonzero(in_filter(marks, keys))
    parts = [
        np.flatnonzero(in_filter(marks, keys[start : start + _FILTER_ROWS])) + start
        for start in range(0, keys.size, _FILTER_ROWS)
    ]
    return np.concatenate(parts)


def in_filter(marks: NDArray[np.uint8], keys: NDArray[np.uint64]) -> NDArray[np.bool_]:
    """Whether each key's low bits are marked in ``marks`` (see :func:`key_filter`)."""
    # In place wherever it can be, and the bit's place within its byte cut down to a
    # byte first: every pass over a block's keys is eight bytes a row (half as many
    # passes as before, and half the time).
    low = keys & np.uint64((marks.size << 3) - 1)
    shift = low.astype(np.uint8)  # the low eight bits, of which the bit's place is three
    shift &= np.uint8(7)
    low >>= np.uint64(3)
    # Below the table's size, the byte positions are the same numbers as signed indexes.
    byte = np.take(marks, low.astype(np.intp, copy=False))  # no copy where intp is 64 bits
    byte >>= shift
    byte &= np.uint8(1)
    marked: NDArray[np.bool_] = byte.view(np.bool_)
    return marked


def distinct_in_blocks(
    keys: NDArray[np.uint64], starts: NDArray[np.int64], qidx: NDArray[np.integer]
) -> bool:
    """True when no key occurs twice in a query; False when that is not sure.

    When every query is one block of rows, the blocks are laid out as rows of a table
    and each row sorted: short sorts that stay in cache, of the keys' low 32 bits,
    cost a fraction of a hash set of all keys. Bits that meet in a row (about once in
    ten million rows of 1,000) are then compared as whole keys.
    """
    n = keys.size
    if n < 2:
        return True
    lengths = np.diff(starts, append=n)
    width = int(lengths.max())
    heads = np.sort(qidx[starts])
    if bool((heads[1:] == heads[:-1]).any()) or width * starts.size > 2 * n:
        return False  # a query split over blocks, or blocks too uneven to pad cheaply
    if width == 1:
        return True
    low = keys.astype(np.uint32)
    if int(lengths.min()) == width:
        table = low.reshape(starts.size, width)
    else:
        # Padding counts up along each row, so it never repeats within the row.
        table = np.broadcast_to(np.arange(width, dtype=np.uint32), (starts.size, width)).copy()
        table[np.arange(width) < lengths[:, None]] = low
    table.sort(axis=1)
    meets = np.flatnonzero(table[:, 1:] == table[:, :-1])
    if meets.size > 64:
        return False
    for row, col in zip(*np.divmod(meets, width - 1), strict=True):
        block = keys[starts[row] : starts[row] + lengths[row]]
        meeting = block[block.astype(np.uint32) == table[row, col]]
        if np.unique(meeting).size < meeting.size:
            return False
    return True
