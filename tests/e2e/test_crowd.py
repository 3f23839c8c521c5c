"""A crowd on one file: four graders of 500 grades each through the app's session code,
a judge run writing suggestions, and readers, all at once. Every grade lands, nobody
sees "database is locked", and no read sees half a write."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chat_server import ChatServer

HERE = Path(__file__).resolve().parents[1]
GRADERS = 4
GRADES = 500


def snapshot_problems(db: Path, stop: threading.Event) -> tuple[list[str], int]:
    """Read as eval does, until told to stop; each statement is one snapshot, in which
    the grade cache may never name an event the log lacks, and a suggestion may never
    count answers that are not there."""
    problems: list[str] = []
    conn = sqlite3.connect(db, timeout=30)
    reads = 0
    try:
        while not stop.is_set() or reads == 0:
            dangling, miscounted = conn.execute(
                "SELECT (SELECT count(*) FROM current_grade c WHERE NOT EXISTS"
                " (SELECT 1 FROM event e WHERE e.id = c.event_id)),"
                " (SELECT count(*) FROM suggestion s WHERE s.prompt_version IS NOT NULL AND"
                " s.answers != (SELECT count(*) FROM judgment j WHERE j.query_id = s.query_id"
                " AND j.passage_id = s.passage_id AND j.model = s.model AND j.status = 'ok'))"
            ).fetchone()
            reads += 1
            if dangling or miscounted:
                problems.append(f"read {reads}: {dangling} dangling, {miscounted} miscounted")
    finally:
        conn.close()
    return problems, reads


def test_four_graders_a_judge_and_readers_at_once(
    demo_db: Path,
    chat_server: type[ChatServer],
    judge_argv: Callable[..., list[str]],
    assert_sound: Callable[[Path], None],
) -> None:
    with chat_server(latency=0.01) as server:
        graders = [
            subprocess.Popen(
                [
                    sys.executable,
                    str(HERE / "crash_child.py"),
                    str(demo_db),
                    f"crowd{n}",
                    "0",
                    str(100 + n),
                    str(GRADES),
                    "grades",
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for n in range(GRADERS)
        ]
        judge = subprocess.Popen(
            judge_argv(demo_db, server.base_url, "--concurrency", "8", "--include-graded"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        stop = threading.Event()
        found: list[tuple[list[str], int]] = []
        reader = threading.Thread(target=lambda: found.append(snapshot_problems(demo_db, stop)))
        reader.start()
        evals: list[subprocess.CompletedProcess[str]] = []
        while any(g.poll() is None for g in graders):
            evals.append(
                subprocess.run(
                    [sys.executable, "-m", "raglabel", "eval", str(demo_db), "--format", "json"],
                    capture_output=True,
                    text=True,
                    check=False,
                    timeout=120,
                )
            )
        outputs = [g.communicate(timeout=120) for g in graders]
        judged = judge.communicate(timeout=300)
        stop.set()
        reader.join(timeout=60)

    for (out, err), grader in zip(outputs, graders, strict=True):
        assert grader.returncode == 0, err
        assert "locked" not in err
        assert out.count("\nACK ") == GRADES  # after the READY line
    assert judge.returncode == 0, judged[1]
    assert "locked" not in judged[1]
    assert evals, "eval never ran while the graders worked"
    for done in evals:
        assert done.returncode == 0 and "locked" not in done.stderr, done.stderr
        json.loads(done.stdout)
    ((problems, reads),) = found
    assert problems == []
    print(f"\n{GRADERS} x {GRADES} grades, a judge run, {len(evals)} evals, {reads} snapshot reads")
    with sqlite3.connect(demo_db) as conn:
        per_grader = dict(
            conn.execute(
                "SELECT a.name, count(*) FROM event e JOIN annotator a ON a.id = e.annotator_id"
                " WHERE a.name LIKE 'crowd%' AND e.kind = 'grade' GROUP BY a.name"
            ).fetchall()
        )
    assert per_grader == {f"crowd{n}": GRADES for n in range(GRADERS)}
    assert_sound(demo_db)


def test_backup_while_graders_write_is_a_sound_project(
    demo_db: Path, tmp_path: Path, assert_sound: Callable[[Path], None]
) -> None:
    grader = subprocess.Popen(
        [
            sys.executable,
            str(HERE / "crash_child.py"),
            str(demo_db),
            "busy",
            "0",
            "7",
            str(GRADES),
            "grades",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert grader.stdout is not None and grader.stdout.readline() == "READY\n"
    copy = tmp_path / "copy.db"
    done = subprocess.run(
        [sys.executable, "-m", "raglabel", "backup", str(demo_db), str(copy)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    _, err = grader.communicate(timeout=120)
    assert done.returncode == 0, done.stderr
    assert grader.returncode == 0, err
    assert_sound(copy)
    again = subprocess.run(
        [sys.executable, "-m", "raglabel", "backup", str(demo_db), str(copy)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert again.returncode == 2 and "never overwrites" in again.stderr
    code = subprocess.run(
        [sys.executable, "-m", "raglabel", "eval", str(copy), "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert code.returncode == 0, code.stderr
