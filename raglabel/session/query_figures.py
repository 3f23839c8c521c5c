"""Each query's figures at the session's cutoff, kept in step with the grades: every
run's RA-nWG and the holes (the Queries screen's columns and the labeling queue), and
each query's metrics panel.

The columns are computed over every query at once when the grades or the cutoff change,
or taken from the runs' thread as the runs land, and then query by query after a grade.
A panel is computed once per change of its query, by whoever asks for it first.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from raglabel.session.live_metrics import LiveMetrics, QueryPanel, hole_counts_of, ra_nwg_of
from raglabel.session.loading import LoadedRuns


class QueryFigures:
    def __init__(self, board: LiveMetrics) -> None:
        self.board = board  # its book is the session's, whichever that is now
        # Empty while there are none (the runs are still to come).
        self.ra: NDArray[np.float64] = np.zeros((0, 0))  # runs x queries, NaN = NA
        self.holes: NDArray[np.int64] = np.zeros(0, np.int64)
        self._panels: dict[int, QueryPanel] = {}

    def clear(self) -> None:
        """No figures until the runs are in."""
        self._panels = {}
        self.ra = np.zeros((0, 0))
        self.holes = np.zeros(0, np.int64)

    def rescore(self, k: int) -> None:
        """Every query's figures at cutoff ``k``, from scratch."""
        self._panels = {}
        self.ra = self.board.ra_nwg_all(k)
        self.holes = self.board.hole_counts(k)

    def land(self, loaded: LoadedRuns, regraded: list[int], k: int) -> None:
        """Take the figures the runs' thread computed on its snapshot, and compute again
        on this thread only the queries that differ from it now: those whose entries were
        graded again (opened, graded or replayed meanwhile) and those whose grade counts
        differ from the snapshot's. What is shown is what ``rescore`` would give; the
        whole-array work over every query (seconds on a big project, every key waiting
        for it) stays in the thread."""
        self._panels.clear()  # as rescore: the panels come from the figures now
        cat, book = self.board.catalog, self.board.book
        stale = np.flatnonzero((loaded.counts != book.counts).any(axis=1))
        redo = np.union1d(np.array(regraded, dtype=np.int64), stale).astype(np.int64)
        ra = loaded.ra
        assert ra is not None  # (the session rescores them all otherwise)
        if redo.size:
            ra[:, redo] = ra_nwg_of(
                cat.queries,
                book.counts,
                cat.runs,
                book.run_grades,
                k=k,
                config=self.board.config,
                which=redo,
            )
        holes = loaded.holes
        if holes is not None and redo.size:
            found = hole_counts_of(cat.runs, book.run_grades, k, redo)
            if found is None:
                holes = None
            else:
                holes[redo] = found
        self.ra = ra
        # A top K with unnamed entries is named first, which only this thread can do.
        self.holes = self.board.hole_counts(k) if holes is None else holes

    def panel(self, q: int, k: int) -> QueryPanel:
        found = self._panels.get(q)
        if found is None:
            found = self._panels[q] = self.board.panel(q, k)
        return found

    def forget(self, q: int) -> None:
        """Query ``q``'s grades changed: its panel is computed again when asked for."""
        self._panels.pop(q, None)

    def refresh(self, q: int, k: int) -> None:
        """Query ``q``'s grades changed: its figures, at once."""
        self.forget(q)
        if self.ra.size:
            values = self.panel(q, k).values
            self.ra[:, q] = [values[name]["ra_nwg"] for name in self.board.catalog.run_names]
        if self.holes.size:
            self.holes[q] = len(self.board.holes(q, k))
