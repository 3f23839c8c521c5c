"""Where an evaluation's labels and runs come from: one class per path in.

Every source aligns runs to its own label set and says how (``kind``, shown in the
report's config as ``reader``). TREC files are read and aligned by
:mod:`raglabel.formats.trec.files`, which picks its reader by their size; samples and
a project's stored rankings become the reader's run table
(:class:`~raglabel.formats.trec.table.RunTable`) and go through the same alignment as a
small file's, or through polars when a project's runs are large. All of them give the
same numbers for the same input (tests check it), so which one runs is a question of
speed only.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
from numpy.typing import NDArray

from raglabel.formats.maps import GradeMap
from raglabel.formats.trec import files as trec_files
from raglabel.formats.trec.arrays import ArrayAlignment, read_run_table
from raglabel.formats.trec.table import RunTable, as_text
from raglabel.metrics.labels import LabelSet
from raglabel.metrics.run import RankedRun

if TYPE_CHECKING:
    import sqlite3

    import polars as pl

    from raglabel.storage.labels import LabelChoice

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
        from raglabel.formats.samples import read_samples

        samples = read_samples(path, grade_map, relevance_threshold)
        self._align = ArrayAlignment.from_rows(samples.qrels)
        self.labels = self._align.labels
        self.warnings = self._align.warnings  # the aligner appends to this very list
        self.warnings += samples.warnings
        # A sample's own k belongs to its query, so every run scored on it uses that k.
        self._k_override = samples.k_override
        self._run = self._align.run(name, samples.run, samples.k_override)
        self._answered = samples.answered

    def fingerprint(self) -> str:
        return self._align.fingerprint()

    def own_runs(self) -> list[RankedRun]:
        return [self._run]

    def answers(self) -> NDArray[np.bool_] | None:
        return np.array([q in self._answered for q in self.labels.query_ids], np.bool_)

    def run_file(self, name: str, path: Path) -> RankedRun:
        return _file_run(self._align, name, path, self._k_override)


class TrecFiles:
    """Qrels and run files, aligned by the TREC reader their size calls for."""

    source = "human"

    def __init__(self, files: trec_files.AlignedFiles) -> None:
        self._files = files
        self.kind = files.kind
        self.labels = files.labels
        self.warnings = files.warnings  # the reader appends to this very list

    def fingerprint(self) -> str:
        return self._files.fingerprint()

    def own_runs(self) -> list[RankedRun]:
        return []

    def answers(self) -> NDArray[np.bool_] | None:
        return None

    def run_file(self, name: str, path: Path) -> RankedRun:
        return self._files.run(name, path)


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

            from raglabel.formats.trec.align import Alignment

            self._polars = Alignment.from_qrels(
                pl.DataFrame(
                    {"qid": qrels.qids, "docid": qrels.docids, "grade": qrels.grades},
                    schema={"qid": pl.String, "docid": pl.String, "grade": pl.Int8},
                )
            )
            self.labels = self._polars.labels
            self.warnings = self._polars.warnings
        else:
            self._align = ArrayAlignment.from_rows(qrels)
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
        self._k_override = items.query_cutoffs(conn) or None
        texts = items.passage_texts(conn) if self._answers else {}
        self._runs = [self._stored(conn, name, texts) for name in runs.run_names(conn)]

    def fingerprint(self) -> str:
        return self._polars.fingerprint() if self._columnar else self._align.fingerprint()

    def own_runs(self) -> list[RankedRun]:
        return self._runs

    def answers(self) -> NDArray[np.bool_] | None:
        if not self._answers:
            return None
        return np.array([q in self._answers for q in self.labels.query_ids], np.bool_)

    def run_file(self, name: str, path: Path) -> RankedRun:
        if self._columnar:
            from raglabel.formats.trec.frames import read_run

            return self._polars.run(name, self._graded(read_run(path)), k_override=self._k_override)
        return _file_run(self._align, name, path, self._k_override, self._ungraded)

    def _graded(self, frame: pl.DataFrame) -> pl.DataFrame:
        """``frame``'s rows of the queries that have grades (see ``ungraded``)."""
        if not self._ungraded:
            return frame
        import polars as pl

        return frame.filter(~pl.col("qid").is_in(list(self._ungraded)))

    def _stored(self, conn: sqlite3.Connection, name: str, texts: dict[str, str]) -> RankedRun:
        from raglabel.storage import runs

        if self._columnar:
            import polars as pl

            frame = self._graded(runs.ranked_frame(conn, name))
            if self._answers:
                flags = self._contains(frame["qid"].to_list(), frame["docid"].to_list(), texts)
                frame = frame.with_columns(pl.Series("contains", flags, dtype=pl.Boolean))
            return self._polars.run(name, frame, in_list_order=True, k_override=self._k_override)
        qids: list[str] = []
        docids: list[str] = []
        for qid, ids in runs.ranked_ids(conn, name):
            if qid in self._ungraded:
                continue
            qids += [qid] * len(ids)
            docids += ids
        contains = None
        if self._answers:
            contains = np.array(self._contains(qids, docids, texts), dtype=np.bool_)
        table = RunTable(as_text(qids), as_text(docids), None, contains)
        return self._align.run(name, table, self._k_override)

    def _contains(self, qids: list[str], docids: list[str], texts: dict[str, str]) -> list[bool]:
        """Whether each entry's passage text holds its query's expected answer."""
        from raglabel.formats.text import normalize

        answers = {qid: normalize(answer) for qid, answer in self._answers.items()}
        flags: list[bool] = []
        for qid, pid in zip(qids, docids, strict=True):
            answer = answers.get(qid, "")
            flags.append(bool(answer) and answer in normalize(texts.get(pid, "")))
        return flags


def _file_run(
    align: ArrayAlignment,
    name: str,
    path: Path,
    k_override: dict[str, int] | None = None,
    left_out: frozenset[str] = frozenset(),
) -> RankedRun:
    """A run file aligned to a sample's or a small project's labels, without the rows of
    the queries ``left_out``."""
    table = read_run_table(path)
    if left_out:
        table = table.where(~np.isin(table.qids, as_text(sorted(left_out))))
    return align.run(name, table, k_override)


def open_files(
    qrels: Path, grade_map: GradeMap | None, run_paths: list[Path], reader: str = "auto"
) -> Source:
    """Qrels and run files through the reader asked for, or by their size (``auto``)."""
    return TrecFiles(trec_files.open_files(qrels, grade_map, run_paths, reader))
