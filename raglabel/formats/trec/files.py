"""Qrels and run files aligned to the labels, by the reader their size calls for.

One entry (:func:`open_files`) for every evaluation of TREC files. Small inputs go
through numpy arrays (:mod:`.arrays`: importing and starting polars would cost more
than the work); larger ones through polars (:mod:`.large`), which reads a large run in
blocks of whole queries. Both rank as trec_eval does and give the same numbers, which
the tests check; ``kind`` says which one ran (the report's ``reader``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from raglabel.formats.maps import GradeMap
from raglabel.formats.trec.arrays import align_qrels, read_run_table
from raglabel.metrics.labels import LabelSet
from raglabel.metrics.run import RankedRun

#: Below this many input bytes, numpy arrays beat importing and starting polars.
SMALL_INPUT_BYTES = 8 << 20


class AlignedFiles(Protocol):
    """Labels read from a qrels file, and run files aligned to them."""

    kind: str  # which reader: "python" (numpy arrays) or "polars"
    labels: LabelSet
    warnings: list[str]  # what the reader noticed, in the order it noticed it

    def fingerprint(self) -> str: ...

    def run(self, name: str, path: Path) -> RankedRun: ...


class SmallFiles:
    """Qrels and run files of a few megabytes, aligned on numpy arrays."""

    kind = "python"

    def __init__(self, qrels: Path, grade_map: GradeMap | None) -> None:
        self._arrays = align_qrels(qrels, grade_map)
        self.labels = self._arrays.labels
        self.warnings = self._arrays.warnings  # the aligner appends to this very list

    def fingerprint(self) -> str:
        return self._arrays.fingerprint()

    def run(self, name: str, path: Path) -> RankedRun:
        return self._arrays.run(name, read_run_table(path))


def open_files(
    qrels: Path, grade_map: GradeMap | None, run_paths: list[Path], reader: str = "auto"
) -> AlignedFiles:
    """The labels of ``qrels``, through the reader asked for or by the inputs' size
    (``auto``); the first run starts being read at once by the polars reader."""
    if reader == "auto":
        size = sum(p.stat().st_size for p in (qrels, *run_paths) if p.is_file())
        reader = "python" if size <= SMALL_INPUT_BYTES else "polars"
    if reader == "polars":
        # Imported only when chosen: it loads polars, which a small input never needs.
        from raglabel.formats.trec.large import LargeFiles

        return LargeFiles(qrels, grade_map, run_paths[0] if run_paths else None)
    return SmallFiles(qrels, grade_map)
