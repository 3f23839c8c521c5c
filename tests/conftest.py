"""Fixtures shared by the tests of the grading session and the app."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from raglabel.storage.demo import build_demo

#: The annotator whose grades the demo project holds (its first 20 queries).
ME = "ann"


@pytest.fixture(scope="module")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("demo") / "demo.db"
    build_demo(path, ME)
    return path


@pytest.fixture
def demo_db(demo_template: Path, tmp_path: Path) -> Path:
    path = tmp_path / "demo.db"
    shutil.copy(demo_template, path)
    return path
