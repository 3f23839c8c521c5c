"""Layering and packaging: what each layer may import, every package ships, schemas in sync.

ruff, ruff format, mypy and lint-imports are steps of .ci/run of their own, before the
tests, so a lint failure stops CI in seconds rather than after the suite.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from raglabel.formats.schemas import SCHEMAS, render

ROOT = Path(__file__).resolve().parents[2]


def _imported_by(module: str) -> set[str]:
    code = f"import sys, {module}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    return {name.split(".")[0] for name in out.split()}


@pytest.mark.parametrize(
    ("module", "forbidden"),
    [
        ("raglabel.metrics", {"textual", "polars", "rich", "sqlite_utils", "httpx", "sqlite3"}),
        ("raglabel.formats.trec.frames", {"textual", "rich", "sqlite_utils", "httpx"}),
        ("raglabel.analysis.evaluation", {"textual", "rich", "sqlite_utils", "httpx"}),
        ("raglabel.cli.main", {"textual", "polars", "numpy", "pydantic", "rich"}),
        ("raglabel.cli.label_cmd", {"textual", "polars", "numpy", "pydantic", "rich"}),
        (
            "raglabel.config.keymap",
            {"textual", "polars", "numpy", "rich", "sqlite3", "httpx", "pydantic"},
        ),
        # The app's start pays for what it imports; these it needs only later, or never.
        ("raglabel.tui.app", {"pydantic", "sqlite_utils", "polars", "httpx"}),
        ("raglabel.storage.adjudication", {"textual", "rich", "polars", "httpx"}),
        ("raglabel.formats.corpus", {"textual", "rich", "sqlite3", "sqlite_utils", "httpx"}),
        ("raglabel.storage.grades", {"textual", "rich", "polars", "httpx"}),
        ("raglabel.storage.importer", {"textual", "rich", "httpx"}),
        ("raglabel.storage.export", {"textual", "rich", "polars", "httpx"}),
        # The judge's HTTP client stays out of storage and out of the app's start.
        ("raglabel.judge.runner", {"textual", "polars", "sqlite3", "sqlite_utils"}),
        ("raglabel.storage.judgments", {"textual", "rich", "polars", "httpx"}),
        ("raglabel.analysis.agreement", {"textual", "rich", "httpx", "sqlite_utils"}),
    ],
)
def test_layers_import_only_what_they_need(module: str, forbidden: set[str]) -> None:
    # The metrics core stays pure numpy; the CLI entry point stays light so that
    # `raglabel --help` and every command start fast; nothing but the app loads Textual.
    assert not (_imported_by(module) & forbidden)


def test_help_builds_every_parser_without_heavy_imports() -> None:
    # `raglabel --help` registers every command, so each command module's top-level
    # imports (and the defaults its help text shows) are paid on every start.
    code = (
        "import sys; from raglabel.cli.main import build_parser; build_parser();"
        " print('\\n'.join(sorted(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    loaded = {name.split(".")[0] for name in out.split()}
    heavy = {"numpy", "polars", "pandas", "httpx", "pydantic", "hashlib", "textual", "rich"}
    assert not (loaded & heavy)


def test_eval_path_never_loads_textual() -> None:
    code = (
        "import sys; from raglabel.cli import eval_inputs, render;"
        " import raglabel.analysis.evaluation; "
        "print('textual' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_every_package_ships() -> None:
    # Packages are listed in pyproject.toml (the demo corpus is mapped in from fixtures/),
    # so a new subpackage missing from the list would be left out of a plain pip install.
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = {
        ".".join(path.parent.relative_to(ROOT).parts)
        for path in (ROOT / "raglabel").rglob("*.py")
        if "__pycache__" not in path.parts
    }
    listed = set(setuptools["packages"])
    assert on_disk <= listed, f"add {sorted(on_disk - listed)} to packages in pyproject.toml"
    assert setuptools["package-dir"] == {"raglabel.demo_corpus": "fixtures/demo"}
    assert listed - on_disk == {"raglabel.demo_corpus"}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_committed_schemas_match_models(name: str) -> None:
    committed = (ROOT / "schemas" / name).read_text(encoding="utf-8")
    assert committed == render(SCHEMAS[name]), (
        f"schemas/{name} is stale: run `python -m raglabel.formats.schemas`"
    )
    json.loads(committed)
