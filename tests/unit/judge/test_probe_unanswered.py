"""A probe whose answers never came back says so: no figures over no pair, no "failed:
none", and the count of answers that never came back, in the text and the JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import probe_project
import pytest

from raglabel.cli.main import main

if TYPE_CHECKING:
    from chat_server import ChatServer


def _probe(capsys: pytest.CaptureFixture[str], db: Path, url: str, *extra: str) -> tuple[int, str]:
    capsys.readouterr()
    argv = ["agree", str(db), "--probe", "length", "--base-url", url, "--model", "m"]
    code = main([*argv, "--limit", "4", "--concurrency", "1", *extra])
    return code, capsys.readouterr().out


def test_a_dead_endpoint_gives_no_figures_and_counts_the_answers_not_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "probe.db"
    probe_project.build(db)
    dead = "http://127.0.0.1:9/v1"
    code, out = _probe(capsys, db, dead, "--max-attempts", "1")
    assert code == 1
    assert "pairs asked 4, compared 0" in out
    assert "not answered: 8 of 8 answers never came back" in " ".join(out.split())
    assert "failed: none" not in out and "rose 0" not in out and "control NA" not in out
    assert "figures: none, as no pair got both answers graded" in out
    code, out = _probe(capsys, db, dead, "--max-attempts", "1", "--format", "json")
    [model] = json.loads(out)["probe"]["models"]
    assert (model["compared"], model["failures"], model["unanswered"]) == (0, [], 8)


def test_failed_and_unanswered_make_up_every_answer_not_compared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], chat_server: type[ChatServer]
) -> None:
    db = tmp_path / "probe.db"
    probe_project.build(db)
    with chat_server(fault_rate=1.0, fault_kinds=["501"]) as server:
        code, out = _probe(capsys, db, server.base_url, "--limit", "10", "--format", "json")
    assert code == 1
    [model] = json.loads(out)["probe"]["models"]
    report: dict[str, Any] = model
    failed = sum(f["count"] for f in report["failures"])
    assert failed == 5 and report["compared"] == 0
    assert failed + report["unanswered"] == 2 * report["asked"] == 20
