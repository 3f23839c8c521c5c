"""Qrels and run files through polars, where parsing speed matters.

A run larger than a couple of blocks (:func:`~raglabel.formats.trec.blocks.in_blocks`)
is read, ranked and graded a block of whole queries at a time, so that memory stays
flat; one that cannot be (not grouped by query, a query larger than a block, a block
the quick parser refuses) is read whole, with the same result. The first run starts
being read while the labels are.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import closing
from pathlib import Path

import polars as pl

from raglabel.formats.maps import GradeMap
from raglabel.formats.trec.align import NOT_GROUPED, Alignment, NotInBlocks
from raglabel.formats.trec.blocks import QueryTooLargeError, in_blocks
from raglabel.formats.trec.frames import read_qrels, read_run, read_run_blocks
from raglabel.metrics.run import RankedRun


class LargeFiles:
    """Qrels and run files through the columnar reader."""

    kind = "polars"

    def __init__(
        self, qrels: Path, grade_map: GradeMap | None, first_run: Path | None = None
    ) -> None:
        # The first run is parsed while the labels are read and keyed: those steps leave
        # much of the second core idle. Its errors come out when it is asked for.
        self._ahead: dict[Path, Future[pl.DataFrame]] = {}
        self._early: dict[Path, EarlyBlocks] = {}
        if first_run is not None:
            if in_blocks(first_run):
                self._early[first_run] = EarlyBlocks(first_run)
            else:
                pool = ThreadPoolExecutor(max_workers=1)
                self._ahead[first_run] = pool.submit(read_run, first_run)
                pool.shutdown(wait=False)
        try:
            self._polars = Alignment.from_qrels(read_qrels(qrels, grade_map))
        except BaseException:
            # Bad labels or an interrupt: the first block's reading stops with them
            # rather than holding its file and buffers for as long as the error lives.
            for early in self._early.values():
                early.close()
            raise
        self.labels = self._polars.labels
        self.warnings = self._polars.warnings
        # The fingerprint is wanted only for the report, after the runs: it is taken
        # beside their blocks (the labels' frame is read only, by both).
        pool = ThreadPoolExecutor(max_workers=1)
        self._fingerprint = pool.submit(self._polars.fingerprint)
        pool.shutdown(wait=False)

    def fingerprint(self) -> str:
        return self._fingerprint.result()

    def run(self, name: str, path: Path) -> RankedRun:
        ahead = self._ahead.pop(path, None)
        early = self._early.pop(path, None)
        if early is not None or (ahead is None and in_blocks(path)):
            ranked = self._run_in_blocks(name, path, early)
            if ranked is not None:
                return ranked
        frame = read_run(path) if ahead is None else ahead.result()
        return self._polars.run(name, frame)

    def _run_in_blocks(
        self, name: str, path: Path, early: EarlyBlocks | None = None
    ) -> RankedRun | None:
        """A large run read in blocks of whole queries, so that memory stays flat; None
        when it has to be read whole (saying so when the file is not grouped)."""
        if early is None:
            early = EarlyBlocks(path, start=False)
        with closing(early) as frames:
            try:
                return self._polars.run_in_blocks(name, iter(frames))
            except NotInBlocks as refusal:
                if str(refusal) == NOT_GROUPED:
                    self.warnings.append(
                        f"run {name!r}: {NOT_GROUPED}, so it was read whole, not in blocks"
                        " of queries (memory grows with the file; sorting it by query,"
                        " as TREC runs are, keeps it flat)"
                    )
            except QueryTooLargeError:
                pass
        return None


class EarlyBlocks:
    """A run's blocks (:func:`~raglabel.formats.trec.frames.read_run_blocks`), the first
    one read and parsed on a thread of its own from the start (``start``), so that it is
    ready when the labels are.

    The thread only takes the first block; the caller's thread takes the rest once it
    has that one, so the reader is never resumed by two threads at a time. An error of
    the first block (a missing file, a query too large) comes out of iterating, as it
    would from the reader itself.
    """

    def __init__(self, path: Path, *, start: bool = True) -> None:
        self._frames = read_run_blocks(path)
        self._first: Future[tuple[bool, pl.DataFrame | None]] | None = None
        # Kept until close(), whoever took the first block: the thread must be done with
        # the reader before the reader is closed, even when an interrupt came while the
        # first block was awaited.
        self._thread: Future[tuple[bool, pl.DataFrame | None]] | None = None
        if start:
            pool = ThreadPoolExecutor(max_workers=1)
            self._first = self._thread = pool.submit(first_block, self._frames)
            pool.shutdown(wait=False)

    def __iter__(self) -> Iterator[pl.DataFrame | None]:
        if self._first is not None:
            got, frame = self._first.result()
            self._first = None
            if not got:
                return
            yield frame
            # Let go of it as the reader lets go of each block once the caller moved on:
            # held here, the first block stayed in memory through the whole run.
            del frame
            self._thread = None
        yield from self._frames

    def close(self) -> None:
        self._first = None
        if self._thread is not None:
            # Its error, if any, was never asked for and has no one to go to.
            wait([self._thread])
            self._thread = None
        self._frames.close()


def first_block(
    frames: Iterator[pl.DataFrame | None],
) -> tuple[bool, pl.DataFrame | None]:
    """(True, the first block) or (False, None) when there is none (a block the quick
    reader refused is None too)."""
    for frame in frames:
        return True, frame
    return False, None
