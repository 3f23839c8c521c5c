"""``raglabel.open_project``: every part of a project read back, the file never written."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import raglabel
from raglabel.api.project import TABLES
from raglabel.storage.demo import build_demo

if TYPE_CHECKING:
    from cli_helpers import Cli

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "fixtures" / "demo"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("api") / "demo.db"
    build_demo(path, "ann")
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_every_part_reads_back_as_the_sources_and_the_cli_say(
    demo: Path, cli: Cli, tmp_path: Path
) -> None:
    before = digest(demo)
    with raglabel.open_project(demo) as project:
        queries = project.queries()
        assert [q["query_id"] for q in queries] == [
            json.loads(line)["id"] for line in (DEMO / "queries.jsonl").read_text().splitlines()
        ]
        assert len(project.passages()) == len((DEMO / "passages.jsonl").read_text().splitlines())
        # A run reads back in the file's rank order.
        bm25 = [(r["query_id"], r["passage_id"]) for r in project.runs() if r["run"] == "bm25"]
        lines = [line.split() for line in (DEMO / "runs" / "bm25.run").read_text().splitlines()]
        ranked = sorted(lines, key=lambda f: (f[0], int(f[3])))
        assert bm25[:100] == [(f[0], f[2]) for f in ranked][:100]
        # Grades are eval's resolved labels: the qrels export of the same file.
        exported = tmp_path / "qrels.txt"
        code, _, err = cli("export", demo, "--qrels", exported)
        assert code == 0, err
        written = {
            (f[0], f[2]) for f in (line.split() for line in exported.read_text().splitlines())
        }
        assert {(g["query_id"], g["passage_id"]) for g in project.grades()} == written
        # Answer grades are what export --answer-grades writes.
        target = tmp_path / "grades.jsonl"
        code, _, err = cli("export", demo, "--answer-grades", target)
        assert code == 0, err
        assert project.answer_grades() == [
            json.loads(line) for line in target.read_text().splitlines()
        ]
        answers = project.answers()
        assert {a["system"] for a in answers} == {"grounded", "embellished"}
        assert all(len(a["contexts"]) == 5 for a in answers)
        for name in TABLES:
            assert project.frame(name).height == len(getattr(project, name)())
    assert digest(demo) == before  # read-only: not a byte changed


def test_a_file_of_another_schema_version_or_none_is_refused(tmp_path: Path) -> None:
    old = tmp_path / "old.db"
    shutil.copyfile(ROOT / "tests" / "data" / "project-v1.db", old)
    before = digest(old)
    with pytest.raises(ValueError, match="schema version 1"):
        raglabel.open_project(old)
    assert digest(old) == before  # not upgraded behind the user's back
    with pytest.raises(ValueError, match="no such project file"):
        raglabel.open_project(tmp_path / "missing.db")


def test_an_unknown_table_is_refused(demo: Path) -> None:
    with raglabel.open_project(demo) as project, pytest.raises(ValueError, match="no table"):
        project.frame("nope")
