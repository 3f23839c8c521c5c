"""``raglabel judge --prompt FILE`` with a header (issue 28 §3), end to end against the
loopback chat server (tests/chat_server.py), which answers a prompt asking for
``##final score: N`` in that shape: the labels come back, go through the file's map and
land as suggestions an annotator accepts as grades; a reply without the score line is
repaired once; a bad header is refused before any request. Also runs the examples of
docs/guide/judge.md's section "Prompt files with a header"."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from docs_pages import examples

from raglabel.formats.suggestion_line import SuggestionLine
from raglabel.session.grading import GradingSession
from raglabel.session.judging import latest_setup
from raglabel.session.options import AppOptions
from raglabel.storage.demo import build_demo
from raglabel.storage.project import Project

if TYPE_CHECKING:
    from chat_server import ChatServer
    from cli_helpers import Cli

# The prompt file these tests run: our own wording, in the shape published prompts take.
PROMPT = """\
+++
scale = [0, 1, 2, 3]
grades = {0 = 1, 1 = 3, 2 = 4, 3 = 5}
reply = "final-score"
+++
Score how well the passage serves the search query, from 0 to 3:
3 = it is about the query and states the answer outright;
2 = it holds part of the answer, or the answer amid other matter;
1 = it is on the query's topic without answering it;
0 = it has nothing to do with the query.

Query: {query}

The passage is between two lines holding only {fence}; it is material to score.
{fence}
{title}{passage}
{fence}

End with one line of this form, and nothing after it:
##final score: N
"""
GRADE_OF = {0: 1, 1: 3, 2: 4, 3: 5}
# Each passage's label, and the faults the server plays first.
SCRIPT: dict[str, tuple[int, str]] = {
    "p1": (3, ""),
    "p2": (2, ""),
    "p3": (1, "nomarker"),  # prose without the score line: repaired on the second reply
    "p4": (0, ""),
}
SCORE_LINE = re.compile(r"^##final score: (\d+)$", re.MULTILINE)
TREC = {0: 2, 1: 3, 2: 4, 3: 5}


def rows(db: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


@pytest.fixture
def project(tmp_path: Path, cli: Cli) -> Path:
    (tmp_path / "q.tsv").write_text("q1\thow do tidal turbines make power\n")
    with (tmp_path / "p.jsonl").open("w") as handle:
        for pid, (label, faults) in SCRIPT.items():
            fault = f" [[fault:{pid}:{faults}]]" if faults else ""
            text = f"Passage {pid} on tidal turbines. [[label={label}]]{fault}"
            handle.write(json.dumps({"id": pid, "text": text}) + "\n")
    lines = [f"q1 Q0 {pid} {i} {100 - i} r" for i, pid in enumerate(SCRIPT, 1)]
    (tmp_path / "r.txt").write_text("\n".join(lines) + "\n")
    db = tmp_path / "p.db"
    assert cli("init", db)[0] == 0
    files = ["--queries", tmp_path / "q.tsv", "--passages", tmp_path / "p.jsonl"]
    code, _, err = cli("import", db, *files, "--run", f"r={tmp_path / 'r.txt'}")
    assert code == 0, err
    return db


@pytest.fixture
def server(chat_server: type[ChatServer]) -> Iterator[ChatServer]:
    with chat_server() as srv:
        yield srv


def judge(cli: Cli, db: Path, url: str, prompt: Path, *extra: str) -> tuple[int, str]:
    code, out, err = cli(
        "judge", db, "--base-url", url, "--model", "m1", "--prompt", prompt, *extra
    )
    return code, out + err


def test_a_final_score_prompt_gives_grades_through_its_map(
    cli: Cli, project: Path, server: ChatServer, tmp_path: Path
) -> None:
    prompt = tmp_path / "zero-to-three.prompt"
    prompt.write_text(PROMPT, encoding="utf-8")
    code, text = judge(cli, project, server.base_url, prompt)
    assert code == 0, text
    assert "4 answers graded, 0 failed, 0 from cache, 0 retries, 1 repairs asked" in text
    # The fence is there, so no note about it.
    assert "{fence}" not in text

    requests = [record.body["messages"] for record in server.requests]
    assert len(requests) == 5
    for messages in requests:
        # The header stays home: the model sees the body, its placeholders filled.
        first = messages[0]["content"]
        assert "+++" not in first and "reply =" not in first and "{passage}" not in first
        assert first.startswith("Score how well the passage serves the search query")
        assert "Query: how do tidal turbines make power" in first
    [repaired] = [m for m in requests if len(m) == 3]
    assert "[[label=1]]" in repaired[0]["content"]
    assert repaired[1]["content"] == "The passage bears on the query. My final score is 1."
    assert (
        "end your answer with one line that holds only ##final score: N" in repaired[2]["content"]
    )

    # Each label went through the file's map; the reason says the label and the grade.
    stored = rows(
        project,
        "SELECT p.ext_id, s.grade, s.reason FROM suggestion s"
        " JOIN passage p ON p.id = s.passage_id ORDER BY p.ext_id",
    )
    assert stored == [
        (
            pid,
            GRADE_OF[label],
            f"label {label} (grade {GRADE_OF[label]}): The passage bears on the query.",
        )
        for pid, (label, _) in sorted(SCRIPT.items())
    ]
    # The raw replies are kept whole, the first (unusable) one of p3 included.
    raw = dict(
        rows(
            project,
            "SELECT p.ext_id, j.raw FROM judgment j JOIN passage p ON p.id = j.passage_id",
        )
    )
    assert raw["p3"].startswith("The passage bears on the query. My final score is 1.")
    assert [int(n) for n in SCORE_LINE.findall(raw["p1"])] == [3]

    out = tmp_path / "suggestions.jsonl"
    assert cli("export", project, "--jsonl", out, "--suggestions")[0] == 0
    lines = [SuggestionLine.model_validate_json(line) for line in out.read_text().splitlines()]
    assert {(line.passage_id, line.grade) for line in lines} == {
        (pid, GRADE_OF[label]) for pid, (label, _) in SCRIPT.items()
    }

    # The app's J asks as this run did: the stored prompt keeps its header.
    with Project.open(project) as opened:
        found = latest_setup(opened)
    assert found is not None and found[0].setting.template.header.reply == "final-score"

    # An annotator accepting the suggestions makes them grades, through the declared map.
    session = GradingSession.open(AppOptions(project=project, annotator="ann"))
    try:
        for row in session.passages(0):
            assert row.suggestion is not None and row.grade is None
            session.grade(0, row.pid, row.suggestion.grade, accepted=True)
    finally:
        session.close()
    graded = rows(
        project,
        "SELECT p.ext_id, e.grade FROM event e JOIN passage p ON p.id = e.passage_id"
        " WHERE e.kind = 'grade' AND e.accepted_suggestion = 1 ORDER BY p.ext_id",
    )
    assert graded == [(pid, GRADE_OF[label]) for pid, (label, _) in sorted(SCRIPT.items())]

    # The same file again asks nothing: the answers stand under its version.
    before = server.count()
    code, text = judge(cli, project, server.base_url, prompt, "--include-graded")
    assert code == 0 and "nothing to ask" in text, text
    assert server.count() == before


def test_a_reply_that_never_gives_the_line_is_a_failure_of_its_kind(
    cli: Cli, project: Path, chat_server: type[ChatServer], tmp_path: Path
) -> None:
    prompt = tmp_path / "zero-to-three.prompt"
    prompt.write_text(PROMPT, encoding="utf-8")
    with chat_server(fault_rate=1.0, fault_kinds=["nomarker"]) as server:
        code, text = judge(cli, project, server.base_url, prompt, "--query", "q1")
    # Every reply lacks the line, but p3's: its scripted fault came first, and a request
    # with a marker gets no random fault after its script.
    assert code == 1, text
    assert "1 answers graded, 3 failed" in text
    assert "3 no final score, e.g. reply: The passage bears on the query. My final score" in text
    assert rows(project, "SELECT count(*) FROM suggestion") == [(1,)]
    errors = rows(project, "SELECT error FROM judgment WHERE status = 'failed'")
    assert len(errors) == 3
    for (error,) in errors:
        assert error.startswith("no final score after one repair: no line of it reads")


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ('scale = [0, 1, 2, 3, 4]\nreply = "final-score"', ":2: label 4 of the scale has no grade"),
        ('reply = "final_score"', ':2: reply must be "json" or "final-score", got "final_score"'),
        ("grades = {0 = 1, 1 = 7}", ":2: grades maps label 1 to 7, not a grade 1-5"),
        ('label = "0-3"', ":2: the header has no key 'label' (it takes scale, grades, reply)"),
    ],
)
def test_a_bad_header_is_refused_before_any_request(
    cli: Cli, project: Path, server: ChatServer, header: str, message: str
) -> None:
    prompt = project.parent / "bad.prompt"
    prompt.write_text(f"+++\n{header}\n+++\nQuery: {{query}}\nPassage: {{passage}}\n")
    code, text = judge(cli, project, server.base_url, prompt)
    assert code == 2
    assert f"raglabel judge: error: {prompt}{message}" in text
    assert server.count() == 0
    assert rows(project, "SELECT count(*) FROM judge_run") == [(0,)]


def test_json_mode_is_refused_with_a_final_score_prompt(
    cli: Cli, project: Path, server: ChatServer, tmp_path: Path
) -> None:
    prompt = tmp_path / "zero-to-three.prompt"
    prompt.write_text(PROMPT, encoding="utf-8")
    code, text = judge(cli, project, server.base_url, prompt, "--json-mode")
    assert code == 2
    assert "--json-mode: " in text and "asks for a final-score reply" in text
    assert server.count() == 0


# --- the guide's examples ----------------------------------------------------------------

PAGE_URL = "http://localhost:11434/v1"
# A stand-in for a published prompt file: our own words, in the shape such files take
# ({query} and {passage}, no fence, a 0-3 scale and the score line).
PUBLISHED = """\
Judge whether a passage answers a query, on an integer scale of 0 to 3
(0: unrelated, 1: on topic but no answer, 2: a partial or buried answer, 3: the answer).

Query: {query}
Passage: {passage}

Give your result as: ##final score: score
"""


def test_the_guide_s_prompt_file_and_commands_run_as_written(
    tmp_path: Path, chat_server: type[ChatServer]
) -> None:
    [prompt] = examples("guide/judge.md", "tests/e2e/test_judge_prompt_file.py", "text")
    [commands] = examples("guide/judge.md", "tests/e2e/test_judge_prompt_file.py", "bash")
    build_demo(tmp_path / "project.db", "owner", answers=False)
    (tmp_path / "zero-to-three.prompt").write_text(prompt, encoding="utf-8")
    (tmp_path / "published.txt").write_text(PUBLISHED, encoding="utf-8")
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    env.pop("OPENAI_API_KEY", None)
    lines = [line for line in commands.splitlines() if line.strip()]
    with chat_server() as server:
        for line in lines:
            done = subprocess.run(
                ["bash", "-c", line.replace(PAGE_URL, server.base_url)],
                capture_output=True,
                text=True,
                cwd=tmp_path,
                env=env,
                check=False,
            )
            assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
            assert "Traceback" not in done.stderr
            if "published-with-header" in line and "--prompt" in line:
                # Run as written, without a fence: the command says so.
                assert "has no {fence} lines" in done.stderr
        requests = server.requests

    # The header went above the published text, which reached the model as written.
    with_header = (tmp_path / "published-with-header.txt").read_text(encoding="utf-8")
    assert with_header.startswith("+++\n") and with_header.endswith(PUBLISHED)
    published_asked = [
        r for r in requests if r.body["messages"][0]["content"].startswith("Judge whether")
    ]
    guide_asked = [r for r in requests if r not in published_asked]
    assert published_asked and guide_asked

    # Every answer is the label the server sent (its reply's score line), through the map
    # of the prompt it answered (read here with tomllib; no map: the TREC one).
    answers = rows(
        tmp_path / "project.db",
        "SELECT j.grade, j.reason, j.raw, p.text FROM judgment j JOIN judge_run r"
        " ON r.id = j.run_id JOIN prompt p ON p.version = r.prompt_version"
        " WHERE j.status = 'ok'",
    )
    assert len(answers) == len(requests)
    for grade, reason, raw, text in answers:
        header = tomllib.loads(text.split("+++\n")[1])
        grades = {int(k): v for k, v in header.get("grades", {}).items()} or TREC
        label = int(SCORE_LINE.findall(raw)[-1])
        assert grade == grades[label]
        assert reason == f"label {label} (grade {grade}): The passage bears on the query."
    suggestions = (tmp_path / "suggestions.jsonl").read_text(encoding="utf-8").splitlines()
    stored = rows(tmp_path / "project.db", "SELECT count(*) FROM suggestion")
    assert [(len(suggestions),)] == stored
