"""``raglabel.open_project``: a project file read from Python, never written.

The file is opened read-only (SQLite ``mode=ro``), so a notebook can read a project the
grading app is writing at the same moment, and nothing it does can change the file; one
in a folder this account may not write is read too (see ``Project.open_read``).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import TracebackType
from typing import Any

from raglabel.api.warn import warn
from raglabel.errors import InputError
from raglabel.storage.answer_items import answer_items
from raglabel.storage.answers import current_answer_grades
from raglabel.storage.items import passage_rows, query_rows
from raglabel.storage.labels import resolved_grades
from raglabel.storage.project import Project
from raglabel.storage.runs import ranked_ids, run_names
from raglabel.storage.schema import SCHEMA_VERSION

TABLES = ("queries", "passages", "grades", "runs", "answers", "answer_grades")


class ProjectReader:
    """Plain rows (lists of dicts) of each part of a project, or ``frame(name)`` for a
    polars DataFrame of the same rows."""

    def __init__(self, path: str | Path) -> None:
        target = Path(path)
        if not target.is_file():
            raise ValueError(f"{target}: no such project file")
        self.path = target
        try:
            self._project = Project.open_read(target, upgrade=False)
        except InputError as exc:
            raise ValueError(str(exc)) from None
        version = self._project.version
        if version != SCHEMA_VERSION:
            self._project.close()
            raise ValueError(
                f"{target}: a project of schema version {version}, this raglabel reads"
                f" {SCHEMA_VERSION}; open it once with `raglabel label` or `raglabel import`"
                " to upgrade it (reading never writes)"
            )
        self._conn = self._project.conn
        note = self._project.immutable_note
        if note is not None:
            # A reader may stay open for hours in a notebook: what it assumes is said.
            warn([f"{note}. Open it again after a change"])

    def close(self) -> None:
        self._project.close()

    def __enter__(self) -> ProjectReader:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def queries(self) -> list[dict[str, Any]]:
        return [{"query_id": ext, "text": text} for _, ext, text in query_rows(self._conn)]

    def passages(self) -> list[dict[str, Any]]:
        return [
            {"passage_id": ext, "title": title, "text": text}
            for ext, title, text in passage_rows(self._conn)
        ]

    def grades(self) -> list[dict[str, Any]]:
        """One grade per graded pair, resolved as ``raglabel eval DB`` resolves them."""
        ids = {row: ext for row, ext, _ in query_rows(self._conn)}
        return sorted(
            (
                {"query_id": ids[row], "passage_id": pid, "grade": grade}
                for row, pid, grade in resolved_grades(self._conn)
            ),
            key=lambda line: (line["query_id"], line["passage_id"]),
        )

    def runs(self) -> list[dict[str, Any]]:
        """Every stored ranking entry: run, query, passage and 1-based rank."""
        return [
            {"run": name, "query_id": qid, "passage_id": pid, "rank": rank}
            for name in run_names(self._conn)
            for qid, pids in ranked_ids(self._conn, name)
            for rank, pid in enumerate(pids, 1)
        ]

    def answers(self) -> list[dict[str, Any]]:
        """Every answer sample with its contexts' passage ids, in the order given."""
        return [
            {
                "system": item.system,
                "sample_id": item.sample_id,
                "query_id": item.qid,
                "question": item.question,
                "answer": item.answer,
                # A reference is a gold answer or a list of key facts: one column each,
                # so every row of a frame has one type per column.
                "reference": item.reference if isinstance(item.reference, str) else None,
                "key_facts": list(item.reference) if isinstance(item.reference, tuple) else None,
                "contexts": [chunk.pid for chunk in item.contexts],
            }
            for item in answer_items(self._conn)
        ]

    def answer_grades(self) -> list[dict[str, Any]]:
        """Each annotator's standing answer grades, as ``export --answer-grades`` writes."""
        return current_answer_grades(self._conn)

    def frame(self, name: str) -> Any:
        """One of ``TABLES`` as a polars DataFrame."""
        if name not in TABLES:
            raise ValueError(f"no table {name!r}; one of {', '.join(TABLES)}")
        rows = getattr(self, name)()
        return importlib.import_module("polars").DataFrame(rows, infer_schema_length=None)


def open_project(path: str | Path) -> ProjectReader:
    """Read a project file; it is opened read-only and never written."""
    return ProjectReader(path)
