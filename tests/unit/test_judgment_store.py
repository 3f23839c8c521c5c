"""The one judgment store: passage and answer judgments are planned, written, cached,
counted and read back by one code path, differing only in the columns that name what
was judged; the cache keys are those older files were written with."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from answers_project import build

from raglabel.judge.prompt import Template
from raglabel.judge.work import AnswerItem, Chunk, Outcome, Pair, Tally
from raglabel.storage.answer_items import answer_items
from raglabel.storage.judgments import (
    ANSWERS,
    PASSAGES,
    JudgmentLog,
    Setting,
    Usage,
    latest_run,
    plan,
    plan_answers,
    run_usage,
    standing,
)
from raglabel.storage.project import Project
from raglabel.storage.suggestions import StoredSuggestion, suggestion_rows

SETTING = Setting("http://127.0.0.1:1/v1", Template.builtin(), {"temperature": 0})
COMMON = (
    "model, repeat, status, grade, reason, raw, error, attempts, repaired, latency_ms,"
    " prompt_tokens, completion_tokens"
)


def test_one_log_writes_passage_and_answer_judgments_alike(tmp_path: Path) -> None:
    db = build(tmp_path)
    with Project.open(db) as project:
        conn = project.conn
        query_row, query = conn.execute("SELECT id, text FROM query WHERE ext_id = 'q1'").fetchone()
        passage_row, passage, title = conn.execute(
            "SELECT id, text, title FROM passage WHERE ext_id = 'd1'"
        ).fetchone()
        pair = Pair(query_row, passage_row, "q1", "d1", query, passage, title)
        item = next(i for i in answer_items(conn) if (i.system, i.sample_id) == ("alpha", "q1"))
        runs: dict[str, int] = {}
        for work in (
            plan(conn, [pair], SETTING, ["m"], 1),
            plan_answers(conn, [item], ["faithfulness"], SETTING, models=["m"], repeats=1),
        ):
            assert (len(work.slots), work.cached, work.targets) == (1, 0, 1)
            log = JudgmentLog.start(project, SETTING, ["m"], 1, api_key_env=None, kind=work.kind)
            log.add(Outcome(work.slots[0], 4, "why", "raw", None, 2, True, 7, 11, 3))
            log.finish(Tally(1, ok=1), "done")
            runs[work.kind] = log.run_id

        # Both tables hold the same answer, each naming its target in its own columns.
        passages = conn.execute(f"SELECT {COMMON} FROM judgment").fetchall()
        answers = conn.execute(f"SELECT {COMMON} FROM answer_judgment").fetchall()
        assert passages == answers == [("m", 0, "ok", 4, "why", "raw", None, 2, 1, 7, 11, 3)]
        assert conn.execute("SELECT query_id, passage_id FROM judgment").fetchall() == [
            (query_row, passage_row)
        ]
        assert conn.execute(
            "SELECT sample_id, criterion, chunks FROM answer_judgment"
        ).fetchall() == [("q1", "faithfulness", None)]
        # Each run is counted on its own table, and is the latest of its kind.
        for kind in (PASSAGES, ANSWERS):
            assert run_usage(conn, runs[kind], kind) == Usage(1, 11, 3)
            found = latest_run(conn, kind)
            assert found is not None and (found["id"], found["kind"]) == (runs[kind], kind)
        # Only the passage run makes a suggestion, from the answer just written.
        assert suggestion_rows(conn, query_row) == [
            StoredSuggestion("d1", "m", 4, "why", 4, 4, None)
        ]
        # Asked again, both are answered already.
        assert plan(conn, [pair], SETTING, ["m"], 1).cached == 1
        again = plan_answers(conn, [item], ["faithfulness"], SETTING, models=["m"], repeats=1)
        assert (again.slots, again.cached) == ([], 1)


def test_a_log_of_no_known_kind_is_refused_before_any_run_is_recorded(tmp_path: Path) -> None:
    with Project.open(build(tmp_path)) as project:
        with pytest.raises(ValueError, match="no judge run of kind 'labels'"):
            JudgmentLog.start(project, SETTING, ["m"], 1, api_key_env=None, kind="labels")
        assert project.conn.execute("SELECT count(*) FROM judge_run").fetchone() == (0,)


def test_a_good_answer_stands_over_a_later_failure() -> None:
    assert standing([("s", True, "good"), ("s", False, "failed")]) == {"s": (True, "good")}
    assert standing([("s", False, "failed"), ("s", True, "good")]) == {"s": (True, "good")}
    assert standing([("s", False, "one"), ("s", False, "two")]) == {"s": (False, "two")}
    assert standing([("s", True, "old"), ("s", True, "new"), ("t", True, "x")]) == {
        "s": (True, "new"),
        "t": (True, "x"),
    }


def test_cache_keys_are_those_files_were_written_with() -> None:
    # A changed key would make every judged file ask its judge again: these are the keys
    # raglabel wrote before passages and answers shared one store.
    conn = sqlite3.connect(":memory:")  # a file with no answers yet
    conn.execute("CREATE TABLE judgment (cache_key TEXT, status TEXT)")
    conn.execute("CREATE TABLE answer_judgment (cache_key TEXT, status TEXT)")
    pair = Pair(1, 2, "q1", "d1", "How?", "Like so.", "T")
    item = AnswerItem(
        1, "alpha", "s1", 1, "q1", "How?", "Like so.", ("f1",), (Chunk(0, "d1", "Like so.", None),)
    )
    passages = plan(conn, [pair], SETTING, ["m"], 2)
    criteria = ["faithfulness", "ctx_rank_prec"]
    answers = plan_answers(conn, [item], criteria, SETTING, models=["m"], repeats=1)
    assert [s.cache_key[:16] for s in passages.slots] == ["61145cebccb8f3ac", "b0e95c3c0050e125"]
    assert passages.slots[0].text_key[:16] == "dde8f9f3c7638466"
    assert [(s.cache_key[:16], s.text_key[:16]) for s in answers.slots] == [
        ("4d1961fa706cf1dc", "658ad6cbb75feea3"),
        ("67826c09d9ca8ade", "dde58b34bff9dd0f"),
    ]
