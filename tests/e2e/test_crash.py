"""SIGKILL at random moments: every action a grader was told was saved is in the file,
the log and its cache agree, and SQLite finds nothing wrong; also while a judge run is
writing suggestions into the same file, and is killed too.

The kill moments come from a seeded generator; the machine's timing decides where
inside a write each kill lands, which is the point: over a thousand actions and dozens
of kills, some land mid-transaction.
"""

from __future__ import annotations

import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from chat_server import ChatServer

HERE = Path(__file__).resolve().parents[1]
GRADES = 1000  # acknowledged grades at least; undos and clears come on top
SEED = 20261123


def start_grader(db: Path, first: int) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, str(HERE / "crash_child.py"), str(db), "crash", str(first), str(SEED)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    line = child.stdout.readline()
    assert line == "READY\n", child.stderr.read() if child.stderr else line
    return child


def start_judge(judge_argv: Callable[..., list[str]], db: Path, url: str) -> subprocess.Popen[str]:
    args = judge_argv(db, url, "--concurrency", "4", "--include-graded")
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def acknowledged(lines: list[str]) -> list[tuple[int, str, int, str, str]]:
    out = []
    for line in lines:
        if line.startswith("ACK "):
            _, i, kind, event_id, query, passage = line.split()
            out.append((int(i), kind, int(event_id), query, passage))
    return out


def check_acknowledged(db: Path, acks: list[tuple[int, str, int, str, str]]) -> None:
    with sqlite3.connect(db) as conn:
        stored = {
            event_id: (kind, query, passage)
            for event_id, kind, query, passage in conn.execute(
                "SELECT e.id, e.kind, q.ext_id, p.ext_id FROM event e"
                " JOIN query q ON q.id = e.query_id JOIN passage p ON p.id = e.passage_id"
            )
        }
    for _, kind, event_id, query, passage in acks:
        assert stored.get(event_id) == (kind, query, passage), f"acknowledged event {event_id} lost"


def committed_unacknowledged(db: Path, acks: list[tuple[int, str, int, str, str]]) -> int:
    """1 if the killed grader had committed an action it never got to acknowledge: the
    kill landed inside the write path, after the commit."""
    with sqlite3.connect(db) as conn:
        newest = conn.execute(
            "SELECT max(e.id) FROM event e JOIN annotator a ON a.id = e.annotator_id"
            " WHERE a.name = 'crash'"
        ).fetchone()[0]
    return int(newest is not None and bool(acks) and newest > max(a[2] for a in acks))


def check_suggestions(db: Path) -> None:
    """Every suggestion is the median of answers that are in the file; no answer slot
    holds two good answers."""
    with sqlite3.connect(db) as conn:
        twice = conn.execute(
            "SELECT count(*) FROM (SELECT cache_key FROM judgment WHERE status = 'ok'"
            " GROUP BY cache_key HAVING count(*) > 1)"
        ).fetchone()[0]
        assert twice == 0
        orphans = conn.execute(
            "SELECT count(*) FROM suggestion s WHERE s.prompt_version IS NOT NULL AND"
            " s.answers != (SELECT count(*) FROM judgment j WHERE j.query_id = s.query_id"
            " AND j.passage_id = s.passage_id AND j.model = s.model AND j.status = 'ok')"
        ).fetchone()[0]
        assert orphans == 0


def kill(child: subprocess.Popen[str]) -> list[str]:
    """SIGKILL, then whatever it printed before dying: those are acknowledged too."""
    child.send_signal(signal.SIGKILL)
    out, _ = child.communicate(timeout=30)
    return out.splitlines() if out else []


def run_campaign(
    db: Path,
    judge_url: str | None,
    judge_argv: Callable[..., list[str]],
    assert_sound: Callable[[Path], None],
) -> tuple[int, int, int]:
    rng = random.Random(SEED)
    acks: list[tuple[int, str, int, str, str]] = []
    kills = judge_kills = landed = 0
    judge = start_judge(judge_argv, db, judge_url) if judge_url else None
    while sum(kind == "grade" for _, kind, *_ in acks) < GRADES:
        grader = start_grader(db, acks[-1][0] + 1 if acks else 0)
        assert grader.stdout is not None
        wanted = rng.randint(1, 80)
        got: list[str] = []
        while len(got) < wanted:
            line = grader.stdout.readline()
            if not line:
                pytest.fail(
                    f"grader died on its own: {grader.stderr.read() if grader.stderr else ''}"
                )
            got.append(line)
        time.sleep(rng.uniform(0, 0.004))  # land the kill anywhere in the next write
        got += kill(grader)
        kills += 1
        acks += acknowledged(got)
        landed += committed_unacknowledged(db, acks)
        if judge is not None and rng.random() < 0.3:
            if judge.poll() is None:
                judge.send_signal(signal.SIGKILL)
                judge.wait(timeout=30)
                judge_kills += 1
            judge = start_judge(judge_argv, db, judge_url) if judge_url else None
        check_acknowledged(db, acks)
        assert_sound(db)
        if judge_url:
            check_suggestions(db)
    if judge is not None and judge.poll() is None:
        judge.send_signal(signal.SIGKILL)
        judge.wait(timeout=30)
    assert_sound(db)
    check_acknowledged(db, acks)
    # Shown with pytest -s; the closing notes quote it.
    grades = sum(kind == "grade" for _, kind, *_ in acks)
    print(
        f"\n{len(acks)} actions ({grades} grades), {kills} grader kills ({landed} between a"
        f" commit and its acknowledgement), {judge_kills} judge kills"
    )
    return len(acks), kills, judge_kills


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_sigkill_while_grading_loses_nothing_acknowledged(
    demo_db: Path, judge_argv: Callable[..., list[str]], assert_sound: Callable[[Path], None]
) -> None:
    actions, kills, _ = run_campaign(demo_db, None, judge_argv, assert_sound)
    assert actions >= GRADES and kills >= 20


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_sigkill_while_a_judge_writes_suggestions(
    demo_db: Path,
    chat_server: type[ChatServer],
    judge_argv: Callable[..., list[str]],
    assert_sound: Callable[[Path], None],
) -> None:
    with chat_server(latency=0.05) as server:
        actions, kills, judge_kills = run_campaign(
            demo_db, server.base_url, judge_argv, assert_sound
        )
        assert actions >= GRADES and kills >= 20 and judge_kills >= 1
        # The judge ends what the kills interrupted: every answer slot is answered once.
        done = subprocess.run(
            judge_argv(demo_db, server.base_url, "--include-graded"),
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr
    check_suggestions(demo_db)
    assert_sound(demo_db)
