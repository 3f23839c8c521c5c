"""``raglabel eval DB``: the project's runs, scored with the project's resolved labels."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from raglabel.cli.eval_inputs import Backend
from raglabel.formats.rows import RowAlignment, RunRows
from raglabel.formats.text import normalize
from raglabel.metrics.run import RankedRun
from raglabel.storage.labels import LabelChoice, ResolvedLabels, resolved_labels
from raglabel.storage.project import Project

#: Above this many stored entries, runs go through the columnar aligner.
LARGE_RUN_ENTRIES = 500_000


class DatabaseBackend(Backend):
    """Labels resolved from the grade log; stored runs already in rank order."""

    kind = "database"

    def __init__(self, project: Project, choice: LabelChoice) -> None:
        self._conn = project.conn
        self.resolved: ResolvedLabels = resolved_labels(project.conn, choice)
        self.source = self.resolved.source
        entries = project.conn.execute("SELECT coalesce(sum(entries), 0) FROM run").fetchone()[0]
        self._columnar = entries > LARGE_RUN_ENTRIES
        if self._columnar:
            import polars as pl

            from raglabel.formats.align import Alignment

            qrels = self.resolved.qrels
            self._polars = Alignment.from_qrels(
                pl.DataFrame(
                    {"qid": qrels.qids, "docid": qrels.docids, "grade": qrels.grades},
                    schema={"qid": pl.String, "docid": pl.String, "grade": pl.Int8},
                )
            )
            self.labels = self._polars.labels
            self.warnings = self._polars.warnings
        else:
            super().__init__(RowAlignment.from_qrels(self.resolved.qrels), [])
        self._answers = dict(
            project.conn.execute(
                "SELECT ext_id, expected_answer FROM query WHERE expected_answer IS NOT NULL"
            )
        )
        self._k = dict(project.conn.execute("SELECT ext_id, k FROM query WHERE k IS NOT NULL"))
        names = [row[0] for row in project.conn.execute("SELECT name FROM run ORDER BY id")]
        self.sample_runs = [self._stored(name) for name in names]

    def fingerprint(self) -> str:
        if self._columnar:
            return self._polars.fingerprint()
        return super().fingerprint()

    def answers(self) -> NDArray[np.bool_] | None:
        if not self._answers:
            return None
        return np.array([q in self._answers for q in self.labels.query_ids], np.bool_)

    def run_file(self, name: str, path: Path) -> RankedRun:
        if self._columnar:
            from raglabel.formats.trec import read_run

            return self._polars.run(name, read_run(path))
        return super().run_file(name, path)

    def _stored(self, name: str) -> RankedRun:
        rows = self._conn.execute(
            "SELECT q.ext_id, r.passage_ids, r.scores FROM ranking r"
            " JOIN query q ON q.id = r.query_id JOIN run ON run.id = r.run_id"
            " WHERE run.name = ?",
            (name,),
        ).fetchall()
        contains = self._contains(rows) if self._answers else None
        k_override = self._k or None
        if self._columnar:
            return self._stored_columnar(name, rows, contains, k_override)
        qids: list[str] = []
        docids: list[str] = []
        for qid, blob, _ in rows:
            ids = bytes(blob).decode("utf-8").split("\n")
            qids += [qid] * len(ids)
            docids += ids
        stored = RunRows(qids, docids, None, contains)
        return self._align.run(name, stored, k_override)

    def _stored_columnar(
        self,
        name: str,
        rows: list[tuple[str, bytes, bytes | None]],
        contains: list[bool] | None,
        k_override: dict[str, int] | None,
    ) -> RankedRun:
        import polars as pl

        # One string split in polars instead of ten million Python strings.
        joined = pl.Series("docid", [bytes(blob).decode("utf-8") for _, blob, _ in rows])
        lists = joined.str.split("\n")
        lengths = lists.list.len().to_numpy()
        frame = pl.DataFrame(
            {
                "qid": pl.Series([qid for qid, _, _ in rows]).gather(
                    np.repeat(np.arange(len(rows)), lengths)
                ),
                "docid": lists.explode(),
            }
        )
        if contains is not None:
            frame = frame.with_columns(pl.Series("contains", contains, dtype=pl.Boolean))
        return self._polars.run(name, frame, in_list_order=True, k_override=k_override)

    def _contains(self, rows: list[tuple[str, bytes, bytes | None]]) -> list[bool]:
        texts = _passage_texts(self._conn)
        flags: list[bool] = []
        for qid, blob, _ in rows:
            answer = normalize(self._answers.get(qid) or "")
            ids = bytes(blob).decode("utf-8").split("\n")
            if not answer:
                flags += [False] * len(ids)
            else:
                flags += [answer in normalize(texts.get(pid, "")) for pid in ids]
        return flags


def _passage_texts(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT ext_id, text FROM passage WHERE text IS NOT NULL"))
