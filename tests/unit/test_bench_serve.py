"""benchmarks/serve.py's reading of what it recorded: the server's trace set beside each
grade, what was going on as each key was sent (lead processes, WAL lock holds by pid),
the runnable tasks after it, and when a round counts as every grade landed. The run
itself (a server, ten apps, the lead and the judge) is the benchmark's own."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest
from docs_pages import ROOT


def _load_bench() -> ModuleType:
    # Appended, not inserted: benchmarks/common.py must shadow nothing of the suite's.
    folder = str(ROOT / "benchmarks")
    if folder not in sys.path:
        sys.path.append(folder)
    spec = importlib.util.spec_from_file_location("bench_serve", ROOT / "benchmarks" / "serve.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


bench = _load_bench()


def grade(tab: str, sent: float, first: float, size: int = 100) -> object:
    return bench.Grade(tab, sent, first, size)


def test_each_grade_gets_its_own_keys_line_and_the_first_output_after_it(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    lines = [
        # alice's app wrote on its own before her key: not her grade's output.
        {"event": "out", "tab": 1, "annotator": "alice", "read": 9.0, "sent": 9.1, "bytes": 7},
        {"event": "key", "tab": 2, "annotator": "bob", "received": 10.001, "written": 10.002},
        {"event": "key", "tab": 1, "annotator": "alice", "received": 10.0, "written": 10.001},
        {"event": "out", "tab": 2, "annotator": "bob", "read": 10.030, "sent": 10.031, "bytes": 50},
        {
            "event": "out",
            "tab": 1,
            "annotator": "alice",
            "read": 10.02,
            "sent": 10.021,
            "bytes": 90,
        },
        {
            "event": "out",
            "tab": 1,
            "annotator": "alice",
            "read": 10.05,
            "sent": 10.051,
            "bytes": 40,
        },
    ]
    trace.write_text("".join(json.dumps(line) + "\n" for line in lines))
    alice, bob, lost = (
        grade("alice", 9.999, 10.022, 90),
        grade("bob", 10.0, 10.032, 50),
        grade("carol", 10.0, 10.1),
    )
    assert bench._stamp_from_trace(trace, [alice, bob, lost])
    assert (alice.received, alice.written, alice.read, alice.out_bytes) == (
        10.0,
        10.001,
        10.02,
        90,
    )
    assert (bob.received, bob.written, bob.read, bob.out_bytes) == (10.001, 10.002, 10.030, 50)
    assert lost.received is None and lost.read is None
    assert not bench._stamp_from_trace(tmp_path / "none.jsonl", [alice])


def test_what_was_going_on_is_read_as_the_key_went_not_over_the_wait() -> None:
    span = bench.Span
    hold = bench.Hold
    apps = {101: "alice", 102: "bob"}
    lead = [span("export", 900, 10.0, 11.0, 0, "")]
    judge = [span("judge", 700, 0.0, 20.0, 0, "")]
    holds = [
        hold("checkpoint", 102, 10.3, 10.35),  # begins mid-wait of the slow grade
        hold("write", 700, 11.495, 11.510),  # the judge's write, alice queues behind it
        hold("write", 101, 11.511, 11.520),  # alice's own commit
        hold("write", 102, 12.0, 12.004),  # bob's own commit, nobody before it
        hold("checkpoint", 101, 11.999, 12.010),  # alice's app checkpointing as bob keys
    ]
    slow = grade("alice", 10.2, 10.9)  # during the export; the checkpoint starts later
    queued = grade("alice", 11.49, 11.53)
    quick = grade("bob", 12.0, 12.02)
    bench._note_overlaps([slow, queued, quick], lead, judge, holds, apps)
    assert slow.during == ["key sent during lead export"]
    assert slow.own_write_ms is None
    assert queued.during == ["queued behind a write by the judge"]
    assert queued.own_write_ms == pytest.approx(9.0)
    assert quick.during == ["key sent during a checkpoint by another app"]
    assert quick.own_write_ms == pytest.approx(4.0)
    rows = {row[0]: row[1] for row in bench.breakdown(_round([slow, queued, quick]))}
    assert rows["key sent during a lead process"] == "1"
    assert rows["key sent with no lead process running"] == "2"
    assert rows["queued behind a write by the judge"] == "1"
    assert rows["not: queued behind a write by the judge"] == "2"


def test_runnable_tasks_are_the_most_in_one_window_after_each_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    series = [(0.0, 1), (1.005, 4), (1.010, 2), (1.030, 9), (2.0, 1)]
    early, late, before = grade("a", 1.0, 1.5), grade("a", 1.02, 1.04), grade("a", 0.5, 0.6)
    bench._note_runnable([early, late, before], series)
    # early's window (1.000-1.020) sees 1, 4 and 2; its slow reply does not reach the 9.
    assert (early.runnable, late.runnable, before.runnable) == (4, 9, 1)
    monkeypatch.setattr(bench.os, "cpu_count", lambda: 2)
    rows = {row[0]: row[1] for row in bench.breakdown(_round([early, late, before]))}
    assert rows["more than 2 tasks runnable"] == "2"
    assert rows["at most 2 tasks runnable (one a core)"] == "1"


@pytest.mark.parametrize(
    ("sent", "landed", "errors", "ok"),
    [(6, 6, [], True), (6, 5, [], False), (5, 5, [], False), (6, 6, ["a tab failed"], False)],
)
def test_a_round_passes_only_with_every_grade_sent_and_landed(
    sent: int, landed: int, errors: list[str], ok: bool
) -> None:
    r = _round([grade("a", float(i), i + 0.02) for i in range(sent)])
    r.planned, r.landed, r.errors = 6, landed, errors
    assert bench._all_landed(r) is ok


def _round(grades: list[object]) -> object:
    return bench.Round(
        tabs=1,
        scenario="alone",
        starts_s=[0.5],
        grades=grades,
        rss_mib=0.0,
        landed=len(grades),
        planned=len(grades),
        errors=[],
    )
