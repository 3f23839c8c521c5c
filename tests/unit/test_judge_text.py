"""The judge never grades an empty query or passage: pairs without text stop a run (or,
with --skip-missing-text, are left out and counted), in the CLI and the app's ``J``."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from raglabel.errors import UsageError
from raglabel.judge.work import RunLimits
from raglabel.session.judging import JudgeSetup, judge_query
from raglabel.storage.judgments import Setting

if TYPE_CHECKING:
    from chat_server import ChatServer
    from cli_helpers import Cli


@pytest.fixture
def server(chat_server: type[ChatServer]) -> Iterator[ChatServer]:
    with chat_server() as srv:
        yield srv


def build(cli: Cli, folder: Path, *, queries: bool, passages: list[str]) -> Path:
    """Query q1 with candidates d1-d4 from one run; text for the query if ``queries``,
    and for the passages named."""
    (folder / "a.run").write_text("".join(f"q1 Q0 d{i} {i} {9 - i} r\n" for i in range(1, 5)))
    db = folder / "p.db"
    assert cli("init", db)[0] == 0
    args: list[str | Path] = ["import", db, "--run", f"a={folder / 'a.run'}"]
    if queries:
        (folder / "q.tsv").write_text("q1\thow do tidal turbines work\n")
        args += ["--queries", folder / "q.tsv"]
    if passages:
        lines = [json.dumps({"id": p, "text": f"Tidal text {p}. [[grade=4]]"}) for p in passages]
        (folder / "p.jsonl").write_text("\n".join(lines) + "\n")
        args += ["--passages", folder / "p.jsonl"]
    code, _, err = cli(*args)
    assert code == 0, err
    return db


def judge(cli: Cli, db: Path, server: ChatServer, *extra: str) -> tuple[int, str, str]:
    return cli("judge", db, "--base-url", server.base_url, "--model", "m", *extra)


def runs(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT count(*) FROM judge_run").fetchone()[0])
    finally:
        conn.close()


def test_a_project_of_runs_and_qrels_only_is_refused_with_the_import_to_run(
    tmp_path: Path, cli: Cli, server: ChatServer
) -> None:
    db = build(cli, tmp_path, queries=False, passages=[])
    code, _, err = judge(cli, db, server)
    assert code == 2
    assert "none of the 4 pairs has text to show the judge" in err
    assert f"1 query has no text (add it with raglabel import {db} --queries FILE)" in err
    assert f"4 passages have no text (add it with raglabel import {db} --passages FILE)" in err
    assert server.count() == 0 and runs(db) == 0


def test_dry_run_says_how_many_pairs_lack_text(
    tmp_path: Path, cli: Cli, server: ChatServer
) -> None:
    db = build(cli, tmp_path, queries=True, passages=["d1", "d2", "d3"])
    code, out, _ = judge(cli, db, server, "--dry-run")
    assert code == 0
    assert "1 requests to send for 3 pairs" not in out
    assert "3 requests to send for 3 pairs" in out
    assert "1 of the 4 pairs has no text to show the judge" in out
    assert "1 passage has no text" in out and "--skip-missing-text" in out
    assert server.count() == 0 and runs(db) == 0


def test_some_pairs_without_text_stop_the_run_unless_skipped(
    tmp_path: Path, cli: Cli, server: ChatServer
) -> None:
    db = build(cli, tmp_path, queries=True, passages=["d1", "d3"])
    code, _, err = judge(cli, db, server)
    assert code == 2
    assert "2 of the 4 pairs have no text to show the judge: 2 passages have no text" in err
    assert "or judge the 2 others with --skip-missing-text" in err
    assert server.count() == 0 and runs(db) == 0

    code, out, err = judge(cli, db, server, "--skip-missing-text")
    assert code == 0, err
    assert "skipping 2 pair(s) with no text to show the judge: 2 passages have no text" in err
    assert "2 answers graded" in out
    assert server.count() == 2


def test_the_limit_counts_pairs_with_text_when_skipping(
    tmp_path: Path, cli: Cli, server: ChatServer
) -> None:
    db = build(cli, tmp_path, queries=True, passages=["d2", "d4"])
    code, out, _ = judge(cli, db, server, "--skip-missing-text", "--limit", "2", "--dry-run")
    assert code == 0 and "2 requests to send for 2 pairs" in out


def test_the_apps_judge_key_refuses_a_query_without_text(
    tmp_path: Path, cli: Cli, server: ChatServer
) -> None:
    from raglabel.judge.prompt import Template

    db = build(cli, tmp_path, queries=False, passages=["d1", "d2", "d3", "d4"])
    setup = JudgeSetup(Setting(server.base_url, Template.builtin(), {}), ("m",))
    with pytest.raises(UsageError) as caught:
        judge_query(db, "q1", setup, RunLimits())
    message = str(caught.value)
    assert "none of this query's 4 pairs has text to show the judge" in message
    assert "1 query has no text" in message and "--queries FILE" in message
    assert server.count() == 0 and runs(db) == 0


def test_the_apps_judge_key_names_the_cli_run_that_skips(
    tmp_path: Path, cli: Cli, server: ChatServer
) -> None:
    from raglabel.judge.prompt import Template

    db = build(cli, tmp_path, queries=True, passages=["d1"])
    setup = JudgeSetup(Setting(server.base_url, Template.builtin(), {}), ("m",))
    with pytest.raises(UsageError) as caught:
        judge_query(db, "q1", setup, RunLimits())
    message = str(caught.value)
    assert "3 of this query's 4 pairs have no text" in message
    assert f"raglabel judge {db} --query q1 --skip-missing-text" in message
    assert server.count() == 0
