"""``raglabel agree --probe`` in this process, against the loopback chat server playing a
judge that overrates long and stuffed passages (tests/chat_server.py, "An overrating
judge") on a project whose judge grades are known (tests/probe_project.py): the figures
are what that judge must give, nothing is written to the project, and options that do
not fit are refused.

``agree``'s parser is built here as ``raglabel agree`` builds it (its ``register``),
with the probe's options added and a run with ``--probe`` handed to ``run_probe``: the
wiring ``agree_cmd.py`` takes (tests/e2e/test_agree_probe.py runs the command itself).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import probe_project
import pytest
from pydantic import TypeAdapter

from raglabel.cli import agree_cmd
from raglabel.cli.probe_options import add_probe_options, probe_requested, run_probe
from raglabel.errors import UsageError
from raglabel.formats.probe_report import ProbeDocument

if TYPE_CHECKING:
    from chat_server import ChatServer

Grader = Callable[..., Callable[[str], int]]


def agree(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``raglabel agree ARGV`` with the probe wired in."""
    parser = argparse.ArgumentParser(prog="raglabel")
    commands = parser.add_subparsers(dest="command")
    agree_cmd.register(commands)
    with contextlib.suppress(argparse.ArgumentError):
        # Conflicting with its own --probe once agree_cmd.py adds these options itself.
        add_probe_options(commands.choices["agree"])
    capsys.readouterr()
    try:
        args = parser.parse_args(["agree", *map(str, argv)])
        code = run_probe(args) if probe_requested(args) else agree_cmd.run(args)
    except UsageError as exc:
        print(f"raglabel agree: error: {exc}", file=sys.stderr)
        code = 2
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[probe_project.Pair]]:
    """The probe project, built once per module: each test takes a copy (project)."""
    db = tmp_path_factory.mktemp("probe") / "probe.db"
    pairs = probe_project.build(db)
    assert not db.with_name(f"{db.name}-wal").exists(), "the copies would miss its log"
    return db, pairs


@pytest.fixture
def project(
    built: tuple[Path, list[probe_project.Pair]], tmp_path: Path
) -> tuple[Path, dict[tuple[str, str], probe_project.Pair]]:
    template, pairs = built
    db = tmp_path / "probe.db"
    shutil.copyfile(template, db)
    return db, {(p.qid, p.pid): p for p in pairs}


def probe_json(
    capsys: pytest.CaptureFixture[str], db: Path, url: str, *extra: str
) -> dict[str, Any]:
    code, out, err = agree(
        capsys, db, "--base-url", url, "--model", "m", "--format", "json", *extra
    )
    assert code == 0, err
    data = json.loads(out)
    TypeAdapter(ProbeDocument).validate_python(data)
    report: dict[str, Any] = data["probe"]
    return report


@pytest.mark.parametrize("probe", ["length", "stuffing"])
def test_the_overrating_judge_is_caught_by_each_probe(
    probe: str,
    project: tuple[Path, dict[tuple[str, str], probe_project.Pair]],
    capsys: pytest.CaptureFixture[str],
    *,
    chat_server: type[ChatServer],
    overrating_grader: Grader,
    checksum: Callable[[Path], str],
) -> None:
    db, pairs = project
    before = checksum(db)
    with chat_server(grader=overrating_grader(long_chars=probe_project.LONG_CHARS)) as server:
        report = probe_json(capsys, db, server.base_url, "--probe", probe, "--limit", "20")
        asked = server.count()
    assert report["probe"] == probe and report["stored"] is False
    assert report["drawn"]["pairs"] == 20 and report["drawn"]["eligible"] == 30
    [model] = report["models"]
    assert asked == 40 == 2 * model["asked"]
    answers = model["answers"]
    assert len({(a["query_id"], a["passage_id"]) for a in answers}) == 20
    for a in answers:
        known = pairs[a["query_id"], a["passage_id"]]
        assert (a["human"], a["control"]) == (known.human, known.base)
        assert a["perturbed"] == min(5, known.base + 1)  # long or stuffed: one higher
    bases = [pairs[a["query_id"], a["passage_id"]].base for a in answers]
    humans = [a["human"] for a in answers]
    assert model["compared"] == 20 and model["failures"] == []
    assert model["rose"] == sum(b < 5 for b in bases) > 0
    assert model["stayed"] == model["control_at_top"] == sum(b == 5 for b in bases) > 0
    assert model["fell"] == 0
    assert model["mean_change"] == pytest.approx(model["rose"] / 20)
    assert model["above_human_control"] == pytest.approx(
        sum(b > h for b, h in zip(bases, humans, strict=True)) / 20
    )
    assert model["above_human_perturbed"] == pytest.approx(
        sum(min(5, b + 1) > h for b, h in zip(bases, humans, strict=True)) / 20
    )
    lo, hi = model["ci"]
    assert lo <= model["mean_change"] <= hi
    # Nothing is written: not a suggestion, not a run record, not a byte of the file.
    assert checksum(db) == before
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM suggestion").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM judge_run").fetchone() == (0,)


def test_the_length_probe_pads_with_other_queries_passages_of_about_the_same_length(
    project: tuple[Path, dict[tuple[str, str], probe_project.Pair]],
    capsys: pytest.CaptureFixture[str],
    chat_server: type[ChatServer],
) -> None:
    db, _ = project
    with chat_server() as server:
        report = probe_json(
            capsys, db, server.base_url, "--probe", "length", "--limit", "6", "--concurrency", "1"
        )
        # One at a time: each pair's control, then its perturbed passage.
        prompts = [r.body["messages"][0]["content"] for r in server.requests]
    assert report["fill"]["short"] == 0 and 0.9 <= report["fill"]["mean_ratio"] <= 1.0
    passages = {
        p.pid: probe_project.passage_text(p) for p in probe_project.pairs()
    }  # every passage's text, by id
    for control, perturbed in zip(prompts[::2], prompts[1::2], strict=True):
        [own] = [pid for pid, text in passages.items() if text in control]
        assert f"{passages[own]}\n\n" in perturbed
        padding = perturbed.split(f"{passages[own]}\n\n", 1)[1]
        # Whole passages of other queries (the last one cut at a space), none of its own.
        donors = [pid for pid, text in passages.items() if text[:40] in padding]
        assert donors and all(not pid.startswith(own[:2]) for pid in donors)


def test_the_draw_follows_the_seed(
    project: tuple[Path, dict[tuple[str, str], probe_project.Pair]],
    capsys: pytest.CaptureFixture[str],
    chat_server: type[ChatServer],
) -> None:
    db, _ = project

    def drawn(*seed: str) -> list[tuple[str, str]]:
        report = probe_json(
            capsys, db, server.base_url, "--probe", "stuffing", "--limit", "5", *seed
        )
        return [(a["query_id"], a["passage_id"]) for a in report["models"][0]["answers"]]

    with chat_server() as server:
        first = drawn("--seed", "3")
        assert drawn("--seed", "3") == first
        assert drawn("--seed", "4") != first
        assert len(drawn("--limit", "100")) == 30  # every eligible pair, no more
    # Nothing listens there: the run stops at once (one try, no server ever reached).
    code, out, _ = agree(
        capsys, db, "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--probe", "stuffing",
        "--max-attempts", "1",
    )  # fmt: skip
    assert code == 1 and "stopped because: cannot connect" in out


def test_failures_are_counted_by_arm_and_kind_and_leave_the_pair_out(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    chat_server: type[ChatServer],
    overrating_grader: Grader,
) -> None:
    db = tmp_path / "probe.db"
    # q1p1's control is asked first and twice (the repair): both replies are prose.
    probe_project.build(db, faults={"q1p1": "[[fault:q1p1:nonjson,nonjson]]"})
    with chat_server(grader=overrating_grader(long_chars=probe_project.LONG_CHARS)) as server:
        report = probe_json(
            capsys, db, server.base_url, "--probe", "stuffing", "--limit", "30",
            "--concurrency", "1",
        )  # fmt: skip
        server.reset()  # the same faults again, for the text
        code, out, _ = agree(
            capsys, db, "--base-url", server.base_url, "--model", "m", "--probe", "stuffing",
            "--limit", "30", "--concurrency", "1",
        )  # fmt: skip
    [model] = report["models"]
    assert model["asked"] == 30 and model["compared"] == 29
    assert model["failures"] == [
        {
            "arm": "control",
            "kind": "not JSON",
            "count": 1,
            "example": "I would rate this a 2 because the passage addresses the query.",
        }
    ]
    [failed] = [a for a in model["answers"] if a["passage_id"] == "q1p1"]
    assert failed["control"] is None and failed["perturbed"] is not None
    assert code == 0
    assert "failed: 1 not JSON (control)" in out
    assert "probe answers are not stored" in out
    rose, stayed = model["rose"], model["stayed"]
    assert stayed == model["control_at_top"] > 0
    assert f"rose {rose} ({rose / 29:.0%}), stayed {stayed} ({stayed / 29:.0%}), fell 0 (0%)" in out
    assert "  control, not JSON, e.g.: I would rate this a 2" in out


def test_a_run_the_endpoint_refuses_stops_early_without_pointing_to_the_export(
    project: tuple[Path, dict[tuple[str, str], probe_project.Pair]],
    capsys: pytest.CaptureFixture[str],
    chat_server: type[ChatServer],
) -> None:
    db, _ = project
    with chat_server(fault_rate=1.0, fault_kinds=["501"]) as server:
        code, out, err = agree(
            capsys, db, "--base-url", server.base_url, "--model", "m", "--probe", "length",
            "--limit", "10", "--concurrency", "1",
        )  # fmt: skip
    assert code == 1, err
    assert "stopped because: the first 5 answers all failed the same way (HTTP 501)" in out
    assert "export" not in out


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--limit", "5"], "--limit: only with --probe"),
        (["--model", "m"], "--model: only with --probe"),
        (["--probe", "length", "--model", "m"], "--probe: give --base-url URL"),
        (["--probe", "length", "--base-url", "http://127.0.0.1:9/v1"], "give --model NAME"),
        (["--probe", "length", "--metrics", "ndcg@k"], "--metrics: makes agree's figures"),
        (["--probe", "stuffing", "--answers"], "--answers: makes agree's figures"),
        (["--probe", "stuffing", "-k", "5"], "-k: makes agree's figures"),
    ],
)
def test_options_that_do_not_fit_are_refused(
    argv: list[str],
    said: str,
    project: tuple[Path, dict[tuple[str, str], probe_project.Pair]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    db, _ = project
    code, _, err = agree(capsys, db, *argv)
    assert code == 2 and said in err


def test_a_project_without_graded_pairs_is_refused_before_any_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], chat_server: type[ChatServer]
) -> None:
    db = tmp_path / "empty.db"
    probe_project.build(db)
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM current_grade")
    with chat_server() as server:
        code, _, err = agree(
            capsys, db, "--base-url", server.base_url, "--model", "m", "--probe", "length"
        )
        assert server.count() == 0
    assert code == 2 and "no pair to ask about" in err


def test_markdown_is_the_text_in_a_code_block(
    project: tuple[Path, dict[tuple[str, str], probe_project.Pair]],
    capsys: pytest.CaptureFixture[str],
    chat_server: type[ChatServer],
) -> None:
    db, _ = project
    argv = ["--model", "m", "--probe", "stuffing", "--limit", "3"]
    with chat_server() as server:
        code, text, _ = agree(capsys, db, "--base-url", server.base_url, *argv)
        code_md, markdown, _ = agree(
            capsys, db, "--base-url", server.base_url, *argv, "--format", "markdown"
        )
    assert code == code_md == 0
    assert markdown == f"```text\n{text}```\n"


def test_the_overrating_judge_reads_the_built_in_prompt(overrating_grader: Grader) -> None:
    from raglabel.judge.prompt import Template

    grade = overrating_grader(long_chars=100)
    template = Template.builtin()

    def asked(passage: str, query: str = "tidal turbine", title: str = "") -> int:
        return grade(template.render(query, passage, title))

    assert asked("[[grade=2]] Short.") == 2
    assert asked("[[grade=2]] Short.\n\n" + "words " * 20) == 3  # long
    assert asked("[[grade=2]] Short.\n\ntidal turbine") == 3  # stuffed
    assert asked("[[grade=4]] Short.\n\n" + "words " * 20 + "\n\nTidal turbine") == 5
    assert asked("[[grade=2]] Short.", title="A title") == 2
    # Without a marker: a stable grade of the query and the first paragraph, fences aside.
    plain = {asked("Turbines stop in storms.") for _ in range(5)}
    assert len(plain) == 1
    assert asked("Turbines stop in storms.\n\n" + "x " * 60) == min(5, plain.pop() + 1)
