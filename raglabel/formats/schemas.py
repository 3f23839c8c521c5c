"""JSON Schemas of raglabel's JSON formats, generated from their types through pydantic.

``python -m raglabel.formats.schemas`` rewrites ``schemas/``; a test fails when the
committed files drift from the types.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from raglabel.formats.agreement_report import AgreementReport
from raglabel.formats.assign_report import AssignList
from raglabel.formats.probe_report import ProbeDocument
from raglabel.formats.progress_report import ProgressReport
from raglabel.formats.report import Report
from raglabel.formats.samples import Sample
from raglabel.formats.suggestion_line import SuggestionLine

# Models and plain dataclasses alike: TypeAdapter reads the schema of either.
SCHEMAS: dict[str, Any] = {
    "report.schema.json": Report,
    "samples-line.schema.json": Sample,
    "suggestion-line.schema.json": SuggestionLine,
    "agree-report.schema.json": AgreementReport,
    "agree-probe.schema.json": ProbeDocument,
    "progress.schema.json": ProgressReport,
    "assign-list.schema.json": AssignList,
}


def render(model: Any) -> str:
    schema = TypeAdapter(model).json_schema(mode="serialization")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def write(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, model in SCHEMAS.items():
        path = folder / name
        path.write_text(render(model), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("schemas")
    for path in write(target):
        print(path)
