"""Judge failures say why (issue 26): against the loopback chat server made to misbehave
(prose replies, 501 to everything, wrong shapes, grades out of range, timeouts), the
summary counts failures by kind with a reply or reason for each, a run whose first
answers all fail the same way stops early, and ``export --suggestions --with-failures``
hands every failure (kind, reason, replies) to whoever debugs the prompt."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from test_judge_cli import make_project, rows

from raglabel.judge.prompt import Template
from raglabel.judge.work import RunLimits, Tally
from raglabel.session.judging import Finished, JudgeSetup, judge_query, status_line
from raglabel.storage.judgments import Setting

if TYPE_CHECKING:
    from chat_server import ChatServer
    from cli_helpers import Cli


def passages(count: int, faults: dict[int, str] | None = None) -> dict[str, str]:
    """``count`` passages p01.. about tides; ``faults`` scripts some of them."""
    found = {}
    for i in range(1, count + 1):
        fault = (faults or {}).get(i)
        marker = f" [[fault:p{i:02}:{fault}]]" if fault else ""
        found[f"p{i:02}"] = f"Passage {i} on tidal turbines. [[grade=4]]{marker}"
    return found


def judge(cli: Cli, db: Path, url: str, *extra: str) -> tuple[int, str]:
    code, out, err = cli(
        "judge", db, "--base-url", url, "--model", "m1", "--timeout", "1", "--max-attempts",
        "3", *extra,
    )  # fmt: skip
    return code, out + err


def test_prose_replies_stop_the_run_after_five_naming_not_json(
    tmp_path: Path, cli: Cli, chat_server: type[ChatServer]
) -> None:
    db = make_project(cli, tmp_path, "how do tidal turbines work", passages(20))
    with chat_server(fault_rate=1.0, fault_kinds=["nonjson"]) as server:
        code, text = judge(cli, db, server.base_url, "--concurrency", "1")
        sent = server.count()
    assert code == 1, text
    assert "judge run stopped: 0 answers graded, 5 failed" in text
    assert "failures by reason: 5 not JSON\n" in text
    assert "  5 not JSON, e.g. reply: I would rate this a 4 because the passage addresses" in text
    assert "stopped because: the first 5 answers all failed the same way (not JSON)" in text
    assert "--json-mode" in text and "--with-failures" in text
    assert "not answered: 15 (the next run asks for them)" in text
    assert sent == 10  # five pairs, each asked once more to repair; 15 never sent
    # What came back is kept and counted: five failures, the run's record says why.
    assert rows(db, "SELECT count(*) FROM judgment WHERE status = 'failed'") == [(5,)]
    ((status, failed, note),) = rows(db, "SELECT status, failed, note FROM judge_run")
    assert (status, failed) == ("stopped", 5)
    assert "(not JSON)" in note


def test_an_endpoint_answering_501_stops_the_run_naming_the_status(
    tmp_path: Path, cli: Cli, chat_server: type[ChatServer]
) -> None:
    db = make_project(cli, tmp_path, "how do tidal turbines work", passages(20))
    with chat_server(fault_rate=1.0, fault_kinds=["501"]) as server:
        code, text = judge(cli, db, server.base_url)  # 8 at once, as by default
        sent = server.count()
    assert code == 1, text
    assert "judge run stopped: 0 answers graded," in text
    assert "failures by reason: " in text and " HTTP 501\n" in text
    assert " HTTP 501, e.g. reason: HTTP 501: Simulated upstream error 501." in text
    assert "stopped because: the first 5 answers all failed the same way (HTTP 501)" in text
    assert "check --base-url, --model" in text
    # The fifth answer stops it; only the requests already in flight went out besides.
    assert sent < 5 + 8
    failed = rows(db, "SELECT count(*) FROM judgment WHERE status = 'failed'")[0][0]
    assert 5 <= failed <= sent
    assert f"judge run stopped: 0 answers graded, {failed} failed" in text
    assert f"not answered: {20 - failed} (the next run asks for them)" in text


#: One pair per way to fail, after a good first answer (so the run goes on to the end).
MIXED = {
    2: "nonjson,nonjson",
    3: "shape,shape",
    4: "range,range",
    5: "empty,empty",
    6: "slow@3,slow@3,slow@3",
    7: "400",
}


def test_mixed_failures_are_counted_by_kind_and_exported_for_debugging(
    tmp_path: Path, cli: Cli, chat_server: type[ChatServer]
) -> None:
    db = make_project(cli, tmp_path, "how do tidal turbines work", passages(8, MIXED))
    with chat_server() as server:
        code, text = judge(cli, db, server.base_url, "--concurrency", "1")
        assert code == 1, text
        assert "judge run finished: 2 answers graded, 6 failed" in text
        assert "stopped because" not in text
        (line,) = [x for x in text.splitlines() if x.startswith("failures by reason: ")]
        kinds = line.removeprefix("failures by reason: ").split(", ")
        assert sorted(kinds) == [
            "1 HTTP 400",
            "1 empty reply",
            "1 not JSON",
            "1 out of range",
            "1 timeout",
            "1 wrong shape",
        ]
        for shown in (
            "  1 not JSON, e.g. reply: I would rate this a 4 because the passage addresses the"
            " query.",
            '  1 wrong shape, e.g. reply: {"score": 4, "why": "Another shape on purpose."}',
            '  1 out of range, e.g. reply: {"grade": 7, "reason": "Out of scale on purpose."}',
            "  1 empty reply, e.g. reply: (an empty reply)",
            "  1 timeout, e.g. reason: timed out after 1 s (attempt 3 of 3)",
            "  1 HTTP 400, e.g. reason: HTTP 400: Simulated upstream error 400.",
        ):
            assert shown + "\n" in text, shown
        # The progress line counts them too.
        assert "6 failed (" in text

        out = tmp_path / "s.jsonl"
        code, said, err = cli("export", db, "--jsonl", out, "--suggestions", "--with-failures")
        assert code == 0, err
        assert f"wrote 2 suggestions and 6 failed judge answers to {out}" in said
        lines = [json.loads(x) for x in out.read_text().splitlines()]
        assert [x.get("failed", False) for x in lines] == [False] * 2 + [True] * 6
        failures = {x["passage_id"]: x for x in lines[2:]}
        assert {p: x["failure"] for p, x in failures.items()} == {
            "p02": "not JSON",
            "p03": "wrong shape",
            "p04": "out of range",
            "p05": "empty reply",
            "p06": "timeout",
            "p07": "HTTP 400",
        }
        prose = failures["p02"]
        assert prose["error"].startswith("not JSON after one repair: it is not valid JSON")
        first, repair = prose["replies"].split("\n\n--- repair ---\n\n")
        assert first.startswith("I would rate this") and repair.startswith("I would rate this")
        assert prose["query_id"] == "q1" and prose["model"] == "m1" and prose["source"] == "judge"
        assert prose["attempts"] == 2 and prose["answered_later"] is False
        assert prose["prompt_version"].startswith("builtin-") and prose["params"]
        assert failures["p06"]["replies"] is None and failures["p06"]["attempts"] == 3

        # The faults are spent: the next run answers them, and the failures become history.
        code, text = judge(cli, db, server.base_url)
        assert code == 0 and "6 answers graded, 0 failed, 2 from cache" in text
        assert "failures by reason" not in text
    code, said, _ = cli("export", db, "--jsonl", out, "--suggestions", "--with-failures")
    assert "wrote 8 suggestions and 6 failed judge answers" in said
    later = [json.loads(x) for x in out.read_text().splitlines()][8:]
    assert all(x["answered_later"] for x in later)
    # Without the option the file holds suggestions only, as before.
    code, said, _ = cli("export", db, "--jsonl", out, "--suggestions")
    assert code == 0 and said.strip() == f"wrote 8 suggestions to {out}"
    assert all("failed" not in json.loads(x) for x in out.read_text().splitlines())


def test_with_failures_needs_suggestions_as_jsonl(tmp_path: Path, cli: Cli) -> None:
    db = make_project(cli, tmp_path, "q", passages(1))
    for extra in (["--csv", tmp_path / "s.csv", "--suggestions"], ["--jsonl", tmp_path / "g"]):
        code, _, err = cli("export", db, *extra, "--with-failures")
        assert code == 2
        assert "--with-failures goes with --suggestions and --jsonl" in err
    assert not (tmp_path / "s.csv").exists() and not (tmp_path / "g").exists()


ANSWERS = [
    {"id": f"s{i}", "query_id": f"s{i}", "question": f"What about {i}?", "answer": f"Answer {i}."}
    for i in range(8)
]


def test_answer_runs_count_failures_by_kind_stop_early_and_export_them(
    tmp_path: Path, cli: Cli, chat_server: type[ChatServer]
) -> None:
    db = tmp_path / "a.db"
    assert cli("init", db)[0] == 0
    answers = tmp_path / "alpha.jsonl"
    answers.write_text("".join(json.dumps(x) + "\n" for x in ANSWERS))
    assert cli("import", db, "--answers", f"alpha={answers}")[0] == 0
    with chat_server(fault_rate=1.0, fault_kinds=["range"]) as server:
        code, text = judge(cli, db, server.base_url, "--answers", "--concurrency", "1")
    assert code == 1, text
    assert "judge run stopped: 0 answers graded, 5 failed" in text
    assert "failures by reason: 5 out of range\n" in text
    assert '  5 out of range, e.g. reply: {"grade": 7, "reason": "Out of scale on purpose."}' in (
        text
    )
    assert "stopped because: the first 5 answers all failed the same way (out of range)" in text
    assert "not answered: 3 (the next run asks for them)" in text

    out = tmp_path / "f.jsonl"
    code, said, err = cli("export", db, "--jsonl", out, "--suggestions", "--with-failures")
    assert code == 0, err
    assert "wrote 0 suggestions and 5 failed judge answers" in said
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert {x["sample_id"] for x in lines} == {"s0", "s1", "s2", "s3", "s4"}
    line = lines[0]
    assert line["system"] == "alpha" and line["criterion"] == "answer_relevancy"
    assert line["query_id"] == "s0" and "passage_id" not in line
    assert line["failure"] == "out of range" and line["failed"] is True
    assert line["error"] == "out of range after one repair: grade 7 is outside 1..5"


def test_the_apps_judge_status_line_names_the_reasons(
    tmp_path: Path, cli: Cli, chat_server: type[ChatServer]
) -> None:
    # What the app's J runs (judge_query, on its own connection) and then shows.
    db = make_project(cli, tmp_path, "how do tidal turbines work", passages(9))
    with chat_server(fault_rate=1.0, fault_kinds=["501"]) as server:
        endpoint = server.base_url + "/chat/completions"
        setup = JudgeSetup(Setting(endpoint, Template.builtin(), {}), ("m1",), api_key_env=None)
        finished = judge_query(db, "q1", setup, RunLimits(concurrency=1))
    line = status_line("q1", finished)
    assert line == "judge q1: stopped, 0 new suggestions, 5 failed (5 HTTP 501)"
    tally = Tally(4, cached=1, ok=2, failed=2)
    tally.failures.add("timed out after 60 s (attempt 6 of 6)", None)
    tally.failures.add("not JSON after one repair: it is not valid JSON", "Four.")
    assert status_line("q1", Finished(tally, "done")) == (
        "judge q1: 2 new suggestions, 2 failed (1 timeout, 1 not JSON), 1 already there"
    )
    assert status_line("q1", Finished(Tally(3, ok=3), "done")) == (
        "judge q1: 3 new suggestions, 0 failed, 0 already there"
    )
