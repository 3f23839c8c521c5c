"""The layer contracts in pyproject.toml can fail: import-linter, run on a copy of the
package with one deliberate violation each, reports exactly that contract broken, so a
contract that could never fail (a misspelt module, a layer left out) shows up here.

That the contracts hold on the real package is a step of .ci/run (``lint-imports``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


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
