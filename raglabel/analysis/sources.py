"""Where an evaluation's labels and runs come from: one class per path in.

Every source aligns runs to its own label set and says how (``kind``, shown in the
report's config as ``reader``). Files go through numpy arrays when they are small and
polars when parsing speed matters; samples and stored rankings through row lists, or
polars when a project's runs are large. All of them give the same numbers for the same
input (tests check it), so which one runs is a question of speed only.
"""

from __future__ import annotations

from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
from numpy.typing import NDArray

from raglabel.formats.arrays import align_qrels, read_run_arrays
from raglabel.formats.blocks import in_blocks
from raglabel.formats.maps import GradeMap
from raglabel.metrics.labels import LabelSet
from raglabel.metrics.run import RankedRun

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Iterator
    from concurrent.futures import Future

    import polars as pl

    # The row reader is imported only for samples and stored runs.
    from raglabel.formats.rows import RowAlignment
    from raglabel.storage.labels import LabelChoice

#: Below this many input bytes, numpy arrays beat importing and starting polars.
SMALL_INPUT_BYTES = 8 << 20

#: Above this many stored entries, a project's runs go through the columnar aligner.
LARGE_RUN_ENTRIES = 500_000


class Source(Protocol):
    """Labels, and the runs aligned to them."""

    kind: str  # which reader aligned the runs
    source: str  # which grades the labels are ("human", or with judge fill)
    labels: LabelSet
    warnings: list[str]  # what the readers noticed, for stderr and the report

    def fingerprint(self) -> str: ...

    def own_runs(self) -> list[RankedRun]:
        """The runs that come with the labels (a samples file's, a project's)."""
        ...

    def answers(self) -> NDArray[np.bool_] | None:
        """Per query, whether it has an expected answer (for containment), else None."""
        ...

    def run_file(self, name: str, path: Path) -> RankedRun: ...


class SampleSource:
    """A samples file: its gold passages are the labels and its rankings one run."""

    kind = "python"
    source = "human"

    def __init__(
        self, name: str, path: Path, grade_map: GradeMap | None, relevance_threshold: int = 4
    ) -> None:
        from raglabel.formats.rows import RowAlignment
        from raglabel.formats.samples import read_samples

        samples = read_samples(path, grade_map, relevance_threshold)
        self._align = RowAlignment.from_qrels(samples.qrels)
        self.labels = self._align.labels
        self.warnings = self._align.warnings  # the aligner appends to this very list
        self.warnings += samples.warnings
        # A sample's own k belongs to its query, so every run scored on it uses that k.
        self._k_override = samples.k_override
        self._run = self._align.run(name, samples.run, samples.k_override)
        self._answered = samples.answered

    def fingerprint(self) -> str:
        return self._align.fingerprint

    def own_runs(self) -> list[RankedRun]:
        return [self._run]

    def answers(self) -> NDArray[np.bool_] | None:
        return np.array([q in self._answered for q in self.labels.query_ids], np.bool_)

    def run_file(self, name: str, path: Path) -> RankedRun:
        return _rows_run(self._align, name, path, self._k_override)


class NumpyFiles:
    """Qrels and run files of a few megabytes, aligned on numpy arrays."""

    kind = "python"
    source = "human"

    def __init__(self, qrels: Path, grade_map: GradeMap | None) -> None:
        self._arrays = align_qrels(qrels, grade_map)
        self.labels = self._arrays.labels
        self.warnings = self._arrays.warnings

    def fingerprint(self) -> str:
        return self._arrays.fingerprint()

    def own_runs(self) -> list[RankedRun]:
        return []

    def answers(self) -> NDArray[np.bool_] | None:
        return None

    def run_file(self, name: str, path: Path) -> RankedRun:
        return self._arrays.run(name, *read_run_arrays(path))


class PolarsFiles:
    """Qrels and run files through the columnar reader, where parsing speed matters."""

    kind = "polars"
    source = "human"

    def __init__(
        self, qrels: Path, grade_map: GradeMap | None, first_run: Path | None = None
    ) -> None:
        from concurrent.futures import ThreadPoolExecutor

        from raglabel.formats.align import Alignment
        from raglabel.formats.trec import read_qrels, read_run

        # The first run is parsed while the labels are read and keyed: those steps leave
        # much of the second core idle. Its errors come out when it is asked for.
        self._ahead: dict[Path, Future[pl.DataFrame]] = {}
        self._early: dict[Path, _EarlyBlocks] = {}
        if first_run is not None:
            if in_blocks(first_run):
                self._early[first_run] = _EarlyBlocks(first_run)
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

    def own_runs(self) -> list[RankedRun]:
        return []

    def answers(self) -> NDArray[np.bool_] | None:
        return None

    def run_file(self, name: str, path: Path) -> RankedRun:
        from raglabel.formats.trec import read_run

        ahead = self._ahead.pop(path, None)
        early = self._early.pop(path, None)
        if early is not None or (ahead is None and in_blocks(path)):
            ranked = self._run_in_blocks(name, path, early)
            if ranked is not None:
                return ranked
        frame = read_run(path) if ahead is None else ahead.result()
        return self._polars.run(name, frame)

    def _run_in_blocks(
        self, name: str, path: Path, early: _EarlyBlocks | None = None
    ) -> RankedRun | None:
        """A large run read in blocks of whole queries, so that memory stays flat; None
        when it has to be read whole (saying so when the file is not grouped)."""
        from raglabel.formats.align import NOT_GROUPED, NotInBlocks
        from raglabel.formats.blocks import QueryTooLargeError

        if early is None:
            early = _EarlyBlocks(path, start=False)
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


class _EarlyBlocks:
    """A run's blocks (:func:`~raglabel.formats.trec.read_run_blocks`), the first one
    read and parsed on a thread of its own from the start (``start``), so that it is
    ready when the labels are.

    The thread only takes the first block; the caller's thread takes the rest once it
    has that one, so the reader is never resumed by two threads at a time. An error of
    the first block (a missing file, a query too large) comes out of iterating, as it
    would from the reader itself.
    """

    def __init__(self, path: Path, *, start: bool = True) -> None:
        from concurrent.futures import ThreadPoolExecutor

        from raglabel.formats.trec import read_run_blocks

        self._frames = read_run_blocks(path)
        self._first: Future[tuple[bool, pl.DataFrame | None]] | None = None
        # Kept until close(), whoever took the first block: the thread must be done with
        # the reader before the reader is closed, even when an interrupt came while the
        # first block was awaited.
        self._thread: Future[tuple[bool, pl.DataFrame | None]] | None = None
        if start:
            pool = ThreadPoolExecutor(max_workers=1)
            self._first = self._thread = pool.submit(_first_block, self._frames)
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
        from concurrent.futures import wait

        self._first = None
        if self._thread is not None:
            # Its error, if any, was never asked for and has no one to go to.
            wait([self._thread])
            self._thread = None
        self._frames.close()


def _first_block(
    frames: Iterator[pl.DataFrame | None],
) -> tuple[bool, pl.DataFrame | None]:
    """(True, the first block) or (False, None) when there is none (a block the quick
    reader refused is None too)."""
    for frame in frames:
        return True, frame
    return False, None


class ProjectSource:
    """A project file: labels resolved from the grade log, runs already in rank order."""

    kind = "database"

    def __init__(self, db: Path, choice: LabelChoice) -> None:
        from raglabel.storage import items, runs
        from raglabel.storage.labels import resolved_labels
        from raglabel.storage.project import Project

        project = Project.open_read(db)
        conn = project.conn
        resolved = resolved_labels(conn, choice)
        self.source = resolved.source
        self._columnar = runs.stored_entries(conn) > LARGE_RUN_ENTRIES
        qrels = resolved.qrels
        if self._columnar:
            import polars as pl

            from raglabel.formats.align import Alignment

            self._polars = Alignment.from_qrels(
                pl.DataFrame(
                    {"qid": qrels.qids, "docid": qrels.docids, "grade": qrels.grades},
                    schema={"qid": pl.String, "docid": pl.String, "grade": pl.Int8},
                )
            )
            self.labels = self._polars.labels
            self.warnings = self._polars.warnings
        else:
            from raglabel.formats.rows import RowAlignment

            self._align = RowAlignment.from_qrels(qrels)
            self.labels = self._align.labels
            self.warnings = self._align.warnings
        if project.immutable_note is not None:
            self.warnings.append(project.immutable_note)
        # A query nobody has graded yet is in no metric: the project's one line says so
        # (inputs.ungraded_line), and its rows are left out of every run before they are
        # aligned, where each run would warn of it again.
        graded = set(self.labels.query_ids)
        queries = items.query_ids(conn)
        self.project_queries = len(queries)
        self.ungraded = sorted(q for q in queries if q not in graded)
        self._ungraded = frozenset(self.ungraded)
        self._answers = items.expected_answers(conn)
        # A query's own k (a sample's metadata.k) holds for stored runs and run files alike.
        self._k_override = k_override = items.query_cutoffs(conn) or None
        texts = items.passage_texts(conn) if self._answers else {}
        self._runs = [self._stored(conn, name, texts, k_override) for name in runs.run_names(conn)]

    def fingerprint(self) -> str:
        return self._polars.fingerprint() if self._columnar else self._align.fingerprint

    def own_runs(self) -> list[RankedRun]:
        return self._runs

    def answers(self) -> NDArray[np.bool_] | None:
        if not self._answers:
            return None
        return np.array([q in self._answers for q in self.labels.query_ids], np.bool_)

    def run_file(self, name: str, path: Path) -> RankedRun:
        if self._columnar:
            import polars as pl

            from raglabel.formats.trec import read_run

            frame = read_run(path)
            if self._ungraded:
                frame = frame.filter(~pl.col("qid").is_in(list(self._ungraded)))
            return self._polars.run(name, frame, k_override=self._k_override)
        from raglabel.formats.rows import RunRows, read_run_rows

        rows = read_run_rows(path)
        if self._ungraded:
            keep = [i for i, qid in enumerate(rows.qids) if qid not in self._ungraded]
            rows = RunRows(
                [rows.qids[i] for i in keep],
                [rows.docids[i] for i in keep],
                None if rows.scores is None else [rows.scores[i] for i in keep],
                None if rows.contains is None else [rows.contains[i] for i in keep],
            )
        return self._align.run(name, rows, self._k_override)

    def _stored(
        self,
        conn: sqlite3.Connection,
        name: str,
        texts: dict[str, str],
        k_override: dict[str, int] | None,
    ) -> RankedRun:
        from raglabel.storage import runs

        if self._columnar:
            import polars as pl

            frame = runs.ranked_frame(conn, name)
            if self._ungraded:
                frame = frame.filter(~pl.col("qid").is_in(list(self._ungraded)))
            if self._answers:
                flags = self._contains(frame["qid"].to_list(), frame["docid"].to_list(), texts)
                frame = frame.with_columns(pl.Series("contains", flags, dtype=pl.Boolean))
            return self._polars.run(name, frame, in_list_order=True, k_override=k_override)
        from raglabel.formats.rows import RunRows

        qids: list[str] = []
        docids: list[str] = []
        for qid, ids in runs.ranked_ids(conn, name):
            if qid in self._ungraded:
                continue
            qids += [qid] * len(ids)
            docids += ids
        contains = self._contains(qids, docids, texts) if self._answers else None
        return self._align.run(name, RunRows(qids, docids, None, contains), k_override)

    def _contains(self, qids: list[str], docids: list[str], texts: dict[str, str]) -> list[bool]:
        """Whether each entry's passage text holds its query's expected answer."""
        from raglabel.formats.text import normalize

        answers = {qid: normalize(answer) for qid, answer in self._answers.items()}
        flags: list[bool] = []
        for qid, pid in zip(qids, docids, strict=True):
            answer = answers.get(qid, "")
            flags.append(bool(answer) and answer in normalize(texts.get(pid, "")))
        return flags


def _rows_run(
    align: RowAlignment, name: str, path: Path, k_override: dict[str, int] | None = None
) -> RankedRun:
    from raglabel.formats.rows import read_run_rows

    return align.run(name, read_run_rows(path), k_override)


def open_files(
    qrels: Path, grade_map: GradeMap | None, run_paths: list[Path], reader: str = "auto"
) -> Source:
    """Qrels and run files through the reader asked for, or by their size (``auto``)."""
    if reader == "auto":
        size = sum(p.stat().st_size for p in (qrels, *run_paths) if p.is_file())
        reader = "python" if size <= SMALL_INPUT_BYTES else "polars"
    if reader == "polars":
        return PolarsFiles(qrels, grade_map, run_paths[0] if run_paths else None)
    return NumpyFiles(qrels, grade_map)
