"""The demo's two answer systems and their human grades: rebuilt byte for byte by their
script, importable, honest to the texts, and in the project ``raglabel demo`` builds."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from statistics import mean
from typing import Any

import pytest

from raglabel.formats.answer_grades import read_answer_grades
from raglabel.formats.answers import read_answers
from raglabel.formats.sentences import sentence_spans
from raglabel.storage.answer_items import answer_items
from raglabel.storage.answers import standing_answer_grades
from raglabel.storage.demo import FIRST_ANNOTATOR, SYSTEMS, build_demo
from raglabel.storage.project import Project

DEMO = Path(__file__).resolve().parents[2] / "fixtures" / "demo"
ANSWERS = DEMO / "answers"
#: The demo run each system's contexts come from, and how many it took.
SOURCE_RUN = {"grounded": "hybrid", "embellished": "dense"}
CONTEXTS = 5
SECOND_ANNOTATOR = "omar"


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def grade_lines() -> list[dict[str, Any]]:
    return jsonl(ANSWERS / "grades.jsonl")


def samples(system: str) -> dict[str, dict[str, Any]]:
    return {sample["query_id"]: sample for sample in jsonl(ANSWERS / f"{system}.jsonl")}


def test_answer_files_rebuild_byte_for_byte(tmp_path: Path) -> None:
    # In a copy, so the test never rewrites the committed files.
    for name in ("make_answers.py", "queries.jsonl", "passages.jsonl"):
        shutil.copy(DEMO / name, tmp_path / name)
    shutil.copytree(DEMO / "runs", tmp_path / "runs")
    result = subprocess.run(
        [sys.executable, str(tmp_path / "make_answers.py")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    built = sorted(path.name for path in (tmp_path / "answers").iterdir())
    assert (
        built
        == sorted(path.name for path in ANSWERS.iterdir())
        == [
            "embellished.jsonl",
            "grades.jsonl",
            "grounded.jsonl",
        ]
    )
    for name in built:
        assert (tmp_path / "answers" / name).read_bytes() == (ANSWERS / name).read_bytes(), name


def test_every_sample_reads_in_the_raglabel_format() -> None:
    queries = [record["id"] for record in jsonl(DEMO / "queries.jsonl")]
    for system in SYSTEMS:
        read = read_answers(ANSWERS / f"{system}.jsonl")
        assert read.format == "raglabel"
        assert [sample.query_id for sample in read.samples] == queries
        empty = [sample.query_id for sample in read.samples if sample.answer is None]
        assert len(empty) == 1, (system, empty)
        # Most samples have a reference; a few have none (no decisive passage).
        missing = [sample.query_id for sample in read.samples if sample.reference is None]
        assert missing == ["q14", "q27", "q30"]


def test_contexts_are_the_top_of_a_demo_run_with_the_passage_texts() -> None:
    passages = {record["id"]: record["text"] for record in jsonl(DEMO / "passages.jsonl")}
    for system, run in SOURCE_RUN.items():
        ranked: dict[str, list[str]] = defaultdict(list)
        for line in (DEMO / "runs" / f"{run}.run").read_text().splitlines():
            qid, _, pid, *_ = line.split()
            ranked[qid].append(pid)
        for qid, sample in samples(system).items():
            assert [c["id"] for c in sample["contexts"]] == ranked[qid][:CONTEXTS]
            assert all(c["text"] == passages[c["id"]] for c in sample["contexts"])


def test_grades_read_and_name_existing_samples() -> None:
    lines = list(read_answer_grades(ANSWERS / "grades.jsonl"))
    answers = {system: samples(system) for system in SYSTEMS}
    for number, grade in lines:
        sample = answers[grade.system].get(grade.sample_id)
        assert sample is not None, f"grades.jsonl:{number}"
        assert sample["answer"], f"grades.jsonl:{number}: an empty answer is NA, not graded"
    keys = [(g.system, g.sample_id, g.criterion, g.annotator) for _, g in lines]
    assert len(keys) == len(set(keys))


def test_enough_grades_on_every_criterion_and_two_annotators_overlap() -> None:
    lines = grade_lines()
    for system in SYSTEMS:
        answered = sum(1 for sample in samples(system).values() if sample["answer"])
        graded = {line["sample_id"] for line in lines if line["system"] == system}
        assert len(graded) == answered == 29
        for criterion in ("faithfulness", "answer_relevancy"):
            assert {
                line["sample_id"]
                for line in lines
                if line["system"] == system and line["criterion"] == criterion
            } == graded
    by_item: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for line in lines:
        by_item[(line["system"], line["sample_id"], line["criterion"])].add(line["annotator"])
    both = [item for item, who in by_item.items() if who == {FIRST_ANNOTATOR, SECOND_ANNOTATOR}]
    assert len(both) >= 30


def test_unsupported_spans_are_the_invented_sentences() -> None:
    answers = {system: samples(system) for system in SYSTEMS}
    marked = 0
    for line in grade_lines():
        spans = line.get("unsupported")
        if spans is None:
            continue
        assert line["criterion"] == "faithfulness" and line["system"] == "embellished"
        text = answers[line["system"]][line["sample_id"]]["answer"]
        sentences = set(sentence_spans(text))
        assert all(tuple(span) in sentences for span in spans), line
        # A marked answer never gets the top faithfulness grade.
        assert line["grade"] <= 4
        marked += 1
    assert marked >= 20


def test_the_embellishing_system_is_less_faithful() -> None:
    faithfulness: dict[str, list[int]] = defaultdict(list)
    for line in grade_lines():
        if line["criterion"] == "faithfulness":
            faithfulness[line["system"]].append(line["grade"])
    grounded, embellished = mean(faithfulness["grounded"]), mean(faithfulness["embellished"])
    assert grounded >= 4.5 and embellished <= 3.5
    assert grounded - embellished >= 1.0


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("demo") / "demo.db"
    build_demo(path, "dana")
    return path


def test_the_demo_project_has_both_systems_their_runs_and_the_grades(demo: Path) -> None:
    conn = sqlite3.connect(demo)
    try:
        systems = [name for (name,) in conn.execute("SELECT name FROM answer_system")]
        runs = {name for (name,) in conn.execute("SELECT name FROM run")}
        counts = dict(
            conn.execute(
                "SELECT y.name, count(*) FROM answer_sample s"
                " JOIN answer_system y ON y.id = s.system_id GROUP BY y.name"
            ).fetchall()
        )
    finally:
        conn.close()
    assert sorted(systems) == sorted(SYSTEMS)
    assert runs == {"bm25", "dense", "dense_rerank", "hybrid", *SYSTEMS}
    assert counts == {system: 30 for system in SYSTEMS}

    with Project.open(demo) as project:
        standing = standing_answer_grades(project.conn)
        items = answer_items(project.conn)
    # Lena's grades are the demo user's; omar's keep his name.
    assert {who for (_, _, _, who) in standing} == {"dana", SECOND_ANNOTATOR}
    assert len(standing) == len(grade_lines())
    expected = {
        (line["system"], line["sample_id"], line["criterion"], line["annotator"])
        for line in grade_lines()
    }
    assert {
        (system, sample, criterion, FIRST_ANNOTATOR if who == "dana" else who)
        for (system, sample, criterion, who) in standing
    } == expected
    # Each sample's contexts are the passages of the file, in its order.
    by_key = {(item.system, item.sample_id): item for item in items}
    for system in SYSTEMS:
        for qid, sample in samples(system).items():
            item = by_key[(system, qid)]
            assert [chunk.pid for chunk in item.contexts] == [c["id"] for c in sample["contexts"]]
    # q14 has no reference but passages graded relevant in the demo (its first 20
    # queries are graded); q27 and q30 have neither.
    gold = {item.qid: bool(item.gold) for item in items if item.system == "grounded"}
    assert gold["q14"] and not gold["q27"] and not gold["q30"]
    # People graded exactly the criteria that apply: none that is NA, all that are not.
    graded = {(system, sample, criterion) for (system, sample, criterion, _) in standing}
    applicable = {
        (item.system, item.sample_id, criterion)
        for item in items
        for criterion in ("faithfulness", "answer_relevancy", "context_recall")
        if item.missing(criterion) is None
    }
    assert graded == applicable


def test_taking_the_colleagues_name_keeps_one_grade_per_annotator(tmp_path: Path) -> None:
    path = tmp_path / "demo.db"
    summary = build_demo(path, SECOND_ANNOTATOR)
    first = sum(1 for line in grade_lines() if line["annotator"] == FIRST_ANNOTATOR)
    assert summary.answer_grades == first
    with Project.open(path) as project:
        standing = standing_answer_grades(project.conn)
    assert {who for (_, _, _, who) in standing} == {SECOND_ANNOTATOR}
    assert len(standing) == first


def test_without_answers_the_demo_is_the_passage_side_alone(tmp_path: Path) -> None:
    summary = build_demo(tmp_path / "demo.db", "dana", answers=False)
    assert (summary.runs, summary.answer_systems, summary.answer_samples) == (4, 0, 0)
    assert summary.answer_grades == 0 and summary.graded_queries == 20
