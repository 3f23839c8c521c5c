"""A large run file in blocks of whole queries, so that memory does not grow with it.

TREC runs list each query's lines together. Cut where one query's lines end and the
next one's begin, a file falls into blocks that can each be parsed, ranked and graded
alone, and only one or two blocks exist at a time. Whether the file really is grouped
is the caller's to check (a query met in two blocks); this module only cuts.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

from raglabel.formats.lines import BYTE_ORDER_MARK

#: About how much of the file one block holds. Sixteen megabytes keep a 10M-line run's
#: evaluation near 300 MB at its peak and cost little against larger blocks.
BLOCK_BYTES = 16 << 20


def in_blocks(path: Path) -> bool:
    """Whether a run file is large enough to be read in blocks of queries."""
    return path.is_file() and path.stat().st_size > 2 * BLOCK_BYTES


#: glibc's mallopt parameters (malloc.h): the most malloc arenas, the free memory at a
#: heap's top that is given back, the size from which a block is mapped on its own.
_M_ARENA_MAX, _M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -8, -1, -3
#: Arenas for a process that reads a run in blocks: as many as the threads that work
#: at once on the two-core machines the goals are measured on.
_ARENAS = 2
#: Arrays up to this size come from the arenas (glibc's largest mmap threshold): every
#: block's arrays are a few megabytes, allocated and freed again block after block.
_MMAP_BYTES = 32 << 20
#: Freed memory kept at the top of a heap, for the next block's arrays (a gigabyte
#: made no difference to the faults nor to the peak).
_TRIM_BYTES = 64 << 20


def share_malloc_arenas() -> None:
    """Let the threads that read, check and grade blocks share two malloc arenas.

    glibc gives a thread that allocates beside others an arena of its own (up to eight
    per core), and once a freed array of a few megabytes has raised its mmap threshold,
    each arena holds on to tens of megabytes it freed: a 10M-line evaluation peaked near
    390 MB with them and near 270 MB with two, at the same CPU time. glibc settles how
    many arenas it may make when a second thread first allocates, so this must come
    before any thread starts. Elsewhere (another C library: no mallopt) nothing changes.
    Only for the eval command in a process of its own: the cap holds for the rest of
    the process, and a notebook's other work has threads of its own.

    Freed memory is also kept for the next block instead of being given back to the
    kernel, which faulted it in afresh, page by page, for every block: a 10M-line
    evaluation took 121k to 129k page faults, now 79k to 88k (30M lines: 216k, now
    154k). The peak grows by about 30 MB (arrays share the arenas' heaps instead of
    being mapped alone), and still not with the run: 310-340 MB at 10M and 30M lines.
    """
    if not sys.platform.startswith("linux"):
        return  # (on Windows, CDLL(None) is no C library at all: it raises TypeError)
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError, TypeError):
        return
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt(_M_ARENA_MAX, _ARENAS)
    mallopt(_M_MMAP_THRESHOLD, _MMAP_BYTES)
    mallopt(_M_TRIM_THRESHOLD, _TRIM_BYTES)


class QueryTooLargeError(Exception):
    """One query's lines do not fit in a block: the file is better read whole."""


def query_blocks(path: Path, block_bytes: int | None = None) -> Iterator[bytes]:
    """The file's bytes in order, each block ending where a query's lines end.

    A block holds whole lines, and every line of the query it ends with: the lines of
    the query the buffer ends in are carried over to the next block. The cut goes by the
    first field of a line (up to its first space), as the readers split it.
    """
    block_bytes = BLOCK_BYTES if block_bytes is None else block_bytes
    buffer = bytearray(block_bytes)
    view = memoryview(buffer)
    held = 0
    # Reading into one buffer again and again: a fresh block of memory for every read
    # costs more in page faults than the copying.
    with open(path, "rb", buffering=0) as handle:
        # A byte order mark is no part of the first line (nor of its query's id).
        if handle.read(len(BYTE_ORDER_MARK)) != BYTE_ORDER_MARK:
            handle.seek(0)
        while True:
            got = handle.readinto(view[held:])
            filled = held + (got or 0)
            if filled < block_bytes:
                if filled:
                    yield bytes(view[:filled])
                return
            cut = _last_query_start(buffer, filled)
            if cut == 0:
                raise QueryTooLargeError(f"a query of {path} fills more than {block_bytes} bytes")
            yield bytes(view[:cut])
            held = filled - cut
            buffer[:held] = bytes(view[cut:filled])


def _last_query_start(buffer: bytearray, filled: int) -> int:
    """Where the lines of the last query begin among the first ``filled`` bytes (a
    partial last line counts with it), or 0 when they are all one query's."""
    complete = buffer.rfind(b"\n", 0, filled) + 1
    if complete == 0:
        return 0
    line = buffer.rfind(b"\n", 0, complete - 1) + 1
    space = buffer.find(b" ", line, complete)
    # A line without a space is cut as its own query; the parser rejects it anyway.
    prefix = bytes(buffer[line : space + 1 if space >= 0 else complete])
    while line > 0:
        before = buffer.rfind(b"\n", 0, line - 1) + 1
        if not buffer.startswith(prefix, before):
            break
        line = before
    return line
