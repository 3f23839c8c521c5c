"""Other judges' labels (``import --judgments MODEL=FILE``): a file of raglabel's own
``export --suggestions`` imports back, and a model name ``agree`` could confuse with
its own raters, an annotator or another model is refused before anything is written."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from raglabel.errors import InputError, UsageError
from raglabel.judge.prompt import Template
from raglabel.storage.importer import ImportRequest, run_import
from raglabel.storage.judgments import JudgmentLog, Setting
from raglabel.storage.project import Project

if TYPE_CHECKING:
    from cli_helpers import Cli

LLMJUDGE = Path(__file__).parents[1] / "data" / "llmjudge"
SETTING = Setting("http://127.0.0.1:1/v1", Template.builtin(), {})


def jsonl(path: Path, *lines: dict[str, object]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def new_project(tmp_path: Path) -> Path:
    db = tmp_path / "p.db"
    Project.create(db).close()
    return db


def imported(db: Path, request: ImportRequest) -> None:
    with Project.open(db) as project:
        run_import(project, request)


def dump(db: Path) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def suggestions(db: Path, model: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(
            "SELECT q.ext_id, p.ext_id, s.grade, s.reason FROM suggestion s"
            " JOIN query q ON q.id = s.query_id JOIN passage p ON p.id = s.passage_id"
            " WHERE s.model = ? ORDER BY 1, 2",
            (model,),
        ).fetchall()
    finally:
        conn.close()


# -- an export of suggestions imports back -------------------------------------------------


def test_an_export_of_suggestions_imports_back(cli: Cli, tmp_path: Path) -> None:
    db = tmp_path / "lj.db"
    assert cli("init", db)[0] == 0
    code, _, err = cli("import", db, "--judgments", f"gpt4o={LLMJUDGE / 'gpt4o.qrels'}")
    assert code == 0, err
    exported = tmp_path / "suggestions.jsonl"
    assert cli("export", db, "--jsonl", exported, "--suggestions")[0] == 0
    assert '"passage_id"' in exported.read_text() and '"doc_id"' not in exported.read_text()
    code, out, err = cli("import", db, "--judgments", f"again={exported}")
    assert code == 0, err
    assert "240 suggestions (jsonl, grades as given)" in out + err
    assert suggestions(db, "again") == suggestions(db, "gpt4o")
    assert len(suggestions(db, "again")) == 240


def test_a_line_gives_its_passage_once(tmp_path: Path) -> None:
    db = new_project(tmp_path)
    before = dump(db)
    both = jsonl(
        tmp_path / "both.jsonl",
        {"query_id": "q1", "passage_id": "d1", "grade": 2},
        {"query_id": "q1", "doc_id": "d2", "passage_id": "d2", "grade": 2},
    )
    with pytest.raises(InputError, match=r"both.jsonl:2: .*doc_id or passage_id, not both"):
        imported(db, ImportRequest(judgments=[("m", both)]))
    neither = jsonl(tmp_path / "neither.jsonl", {"query_id": "q1", "grade": 2})
    with pytest.raises(InputError, match=r"neither.jsonl:1: .*doc_id or passage_id; this line"):
        imported(db, ImportRequest(judgments=[("m", neither)]))
    assert dump(db) == before


def test_an_export_of_several_models_or_of_failures_is_refused_by_line(tmp_path: Path) -> None:
    db = new_project(tmp_path)
    before = dump(db)
    mixed = jsonl(
        tmp_path / "mixed.jsonl",
        {"query_id": "q1", "passage_id": "d1", "grade": 2, "model": "a"},
        {"query_id": "q1", "passage_id": "d2", "grade": 3, "model": "a"},
        {"query_id": "q1", "passage_id": "d1", "grade": 4, "model": "b"},
    )
    with pytest.raises(
        InputError, match=r"mixed.jsonl:3: this line names model 'b', line 1 named 'a'"
    ):
        imported(db, ImportRequest(judgments=[("m", mixed)]))
    failed = jsonl(
        tmp_path / "failed.jsonl",
        {"query_id": "q1", "passage_id": "d1", "grade": 2, "model": "a"},
        {"query_id": "q1", "passage_id": "d2", "model": "a", "failed": True, "error": "x"},
    )
    with pytest.raises(InputError, match=r"failed.jsonl:2: a failed judge answer"):
        imported(db, ImportRequest(judgments=[("m", failed)]))
    assert dump(db) == before


# -- names agree would confuse ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["humans", "judge", "Humans", "JUDGE", "judge (median of a, b)"])
def test_agrees_own_rater_names_are_refused_both_ways(tmp_path: Path, name: str) -> None:
    db = new_project(tmp_path)
    path = jsonl(tmp_path / "m.jsonl", {"query_id": "q1", "doc_id": "d1", "grade": 2})
    before = dump(db)
    with pytest.raises(
        UsageError,
        match=re.escape(f"--judgments {name}=FILE: {name!r} is a name raglabel agree gives"),
    ):
        imported(db, ImportRequest(judgments=[(name, path)]))
    assert dump(db) == before
    with Project.open(db) as project:
        with pytest.raises(
            UsageError,
            match=re.escape(f"--model {name!r}: {name!r} is a name raglabel agree gives"),
        ):
            JudgmentLog.start(project, SETTING, ["ok", name], 1, api_key_env=None)
        assert project.conn.execute("SELECT count(*) FROM judge_run").fetchone() == (0,)


def test_a_name_differing_only_in_case_is_refused_both_ways(tmp_path: Path) -> None:
    db = new_project(tmp_path)
    path = jsonl(tmp_path / "m.jsonl", {"query_id": "q1", "doc_id": "d1", "grade": 2})
    people = tmp_path / "h.qrels"
    people.write_text("q1 0 d1 2\n")
    imported(db, ImportRequest(qrels=people, annotator="nist", judgments=[("gpt4o", path)]))
    with Project.open(db) as project:
        JudgmentLog.start(project, SETTING, ["llama"], 1, api_key_env=None)
    before = dump(db)
    with pytest.raises(InputError, match=r"'NIST' is an annotator of this project \(as 'nist'"):
        imported(db, ImportRequest(judgments=[("NIST", path)]))
    with pytest.raises(InputError, match=r"'GPT4o' differs from the model 'gpt4o'"):
        imported(db, ImportRequest(judgments=[("GPT4o", path)]))
    with pytest.raises(InputError, match=r"'Llama' differs from the model 'llama'"):
        imported(db, ImportRequest(judgments=[("Llama", path)]))
    with pytest.raises(UsageError, match=r"model 'B' is named twice \('b' and 'B'\)"):
        imported(db, ImportRequest(judgments=[("b", path), ("B", path)]))
    assert dump(db) == before
    with (
        Project.open(db) as project,
        pytest.raises(UsageError, match=r"--model 'GPT4O': .* imported as 'gpt4o'"),
    ):
        JudgmentLog.start(project, SETTING, ["GPT4O"], 1, api_key_env=None)
    assert dump(db) == before
    # The same name, in the same case, adds to that model's labels as before.
    again = jsonl(tmp_path / "more.jsonl", {"query_id": "q1", "doc_id": "d2", "grade": 4})
    imported(db, ImportRequest(judgments=[("gpt4o", again)]))
