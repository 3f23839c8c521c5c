"""The layer contract in pyproject.toml holds, and it can fail.

import-linter reads the contracts from ``[tool.importlinter]``; the failing cases run it
on a copy of the package with one deliberate violation each, so a contract that could
never fail (a misspelt module, a layer left out) shows up here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports over the ``raglabel`` package found first under ``root``."""
    tool = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if tool is None:
        pytest.fail(
            f"lint-imports is not installed beside {sys.executable}: pip install -e '.[test]'"
        )
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [tool, "--no-cache", "--config", str(root / "pyproject.toml")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_contracts_hold() -> None:
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "BROKEN" not in result.stdout


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("pristine")
    shutil.copytree(
        ROOT / "raglabel", copy / "raglabel", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    return copy


@pytest.mark.parametrize(
    ("module", "imported"),
    [
        # A lower layer reaching up, at each step of the stack.
        ("metrics/names.py", "raglabel.formats.notices"),
        ("formats/text.py", "raglabel.storage.items"),
        ("storage/items.py", "raglabel.analysis.evaluation"),
        ("analysis/evaluation.py", "raglabel.session.grading"),
        ("session/options.py", "raglabel.cli.main"),
        # Siblings stay independent.
        ("judge/flags.py", "raglabel.formats.text"),
        ("tui/keys.py", "raglabel.cli.main"),
        ("config/bindings.py", "raglabel.storage.items"),
        # The narrower rules: pure metrics, Textual in the tui only, the tui off SQLite.
        ("metrics/names.py", "sqlite3"),
        ("metrics/names.py", "polars"),
        ("session/options.py", "textual"),
        ("tui/widgets/status.py", "raglabel.storage.items"),
        ("tui/widgets/status.py", "sqlite3"),
    ],
)
def test_a_deliberate_violation_breaks_one_contract(
    pristine: Path, tmp_path: Path, module: str, imported: str
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(pristine, copy)
    target = copy / "raglabel" / module
    target.write_text(target.read_text(encoding="utf-8") + f"\nimport {imported}  # noqa\n")
    result = _lint(copy)
    assert result.returncode != 0, result.stdout
    # Long contract names wrap in lint-imports' output; read it unwrapped.
    text = " ".join(result.stdout.split())
    assert text.count("BROKEN") == 1, result.stdout
    importer = "raglabel." + module.split("/", maxsplit=1)[0]
    package = ".".join(imported.split(".")[:2])
    assert f"{importer} is not allowed to import {package}" in text, result.stdout


def test_no_two_modules_import_each_other() -> None:
    graph = grimp.build_graph("raglabel", exclude_type_checking_imports=True)
    pairs = sorted(
        (a, b)
        for a in graph.modules
        for b in graph.find_modules_directly_imported_by(a)
        if a < b and graph.direct_import_exists(importer=b, imported=a)
    )
    assert pairs == []


def test_every_package_says_what_it_owns() -> None:
    for init in sorted((ROOT / "raglabel").glob("*/__init__.py")):
        text = init.read_text(encoding="utf-8").lstrip()
        assert text.startswith('"""') and len(text.split('"""')[1].split()) >= 8, init


def test_the_architecture_layout_table_matches_the_tree() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = page.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    listed = {
        cell.strip("`").rstrip("/")
        for line in section.splitlines()
        if line.startswith("| `")
        for cell in [line.split("|")[1].strip()]
    }
    packages = {
        str(init.parent.relative_to(ROOT)) for init in (ROOT / "raglabel").glob("*/__init__.py")
    }
    assert packages <= listed, (
        f"add {sorted(packages - listed)} to docs/architecture.md's Layout table"
    )
    missing = sorted(path for path in listed if not (ROOT / path).exists())
    assert missing == [], f"docs/architecture.md's Layout table names {missing}, which do not exist"


def test_sql_is_written_only_in_storage() -> None:
    # Storage owns the schema: SQL anywhere else would break silently on a migration.
    statement = re.compile(r"\b(SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM|CREATE TABLE)\b")
    outside = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / "raglabel").rglob("*.py"))
        if "storage" not in path.relative_to(ROOT / "raglabel").parts
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if statement.search(line)
    ]
    assert outside == []
