"""``raglabel assign`` as a child process on the demo project: three annotators with
overlap 2 over its 30 queries, balanced by pairs and reproducible from the printed seed;
``--list`` in text and in the spec's JSON, with done checked against grades and pools
recomputed here from the stored rankings; assigning again keeps a started share; bad
requests exit 2 and write nothing; a read-only project is refused (exit 1, every file as
it was) while ``--list`` reads it; and the commands of docs/guide/team.md, run as written.

Read-only is made honest as in test_read_only.py: run as root, the command runs as the
unprivileged ``nobody`` user (``setpriv``), whom the permission bits bind; skipped, never
faked, where that is not possible.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import child, other_user
from docs_pages import examples

from raglabel.formats.assign_report import AssignList
from raglabel.storage.demo import build_demo
from raglabel.storage.grades import GradeEvent, record
from raglabel.storage.project import Project

SEED = re.compile(r"; seed (\d+) \(--seed \d+ makes the same plan from .* as it was\)$")
TEAM = ["alice", "bob", "carol"]


def read(db: Path, sql: str, *args: object) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def pools(db: Path, depth: int) -> dict[str, set[str]]:
    """Each covered query's pool, recomputed from the stored rankings: the passages some
    run ranks within its top ``depth``."""
    found: dict[str, set[str]] = {}
    for qid, blob in read(
        db, "SELECT q.ext_id, r.passage_ids FROM ranking r JOIN query q ON q.id = r.query_id"
    ):
        ids = bytes(blob).decode("utf-8").split("\n")  # type: ignore[arg-type]
        found.setdefault(str(qid), set()).update(ids[:depth])
    return found


def own_grades(db: Path, annotator: str) -> dict[str, set[str]]:
    """The annotator's standing grades of their own (not accepting a suggestion)."""
    found: dict[str, set[str]] = {}
    for qid, pid in read(
        db,
        "SELECT q.ext_id, p.ext_id FROM current_grade c JOIN event e ON e.id = c.event_id"
        " JOIN query q ON q.id = c.query_id JOIN passage p ON p.id = c.passage_id"
        " JOIN annotator a ON a.id = c.annotator_id WHERE a.name = ? AND e.source = 'human'"
        " AND coalesce(e.accepted_suggestion, 0) = 0",
        annotator,
    ):
        found.setdefault(str(qid), set()).add(str(pid))
    return found


def listed(db: Path, *extra: str) -> dict[str, object]:
    done = child("assign", db, "--list", "--format", "json", *extra)
    assert done.returncode == 0, done.stderr
    document: dict[str, object] = json.loads(done.stdout)
    # The schema's type (schemas/assign-list.schema.json is generated from it) reads it
    # back, extra keys refused, and writes it out the same.
    assert AssignList.model_validate(document).model_dump(mode="json") == document
    return document


def test_three_annotators_with_overlap_2_share_the_demos_30_queries(
    demo_db: Path, demo_template: Path
) -> None:
    done = child("assign", demo_db, "--annotators", ",".join(TEAM), "--overlap", "2")
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    found = SEED.search(first)
    assert found is not None, first
    assert first.startswith(
        "assigned 30 queries (every query the stored runs cover), each to 2 of 3 annotators"
    )
    document = listed(demo_db)
    assert document["overlap"] == 2
    shares = document["annotators"]
    assert isinstance(shares, dict) and sorted(shares) == TEAM
    assert all(set(share) == {"assigned", "done"} for share in shares.values())
    # Every covered query exactly twice, never twice to one annotator.
    pool = pools(demo_db, 20)
    count = Counter(q for share in shares.values() for q in share["assigned"])
    assert count == dict.fromkeys(pool, 2)
    assert all(len(set(s["assigned"])) == len(s["assigned"]) for s in shares.values())
    # Pairs to grade within one query's pool of each other, as the table prints them.
    pairs = {name: sum(len(pool[q]) for q in s["assigned"]) for name, s in shares.items()}
    assert max(pairs.values()) - min(pairs.values()) <= max(len(p) for p in pool.values())
    table = done.stdout.splitlines()[2:6]
    assert table[0].split() == ["annotator", "queries", "pairs"]
    assert {row.split()[0]: int(row.split()[2]) for row in table[1:]} == pairs
    # The printed seed makes the same plan on a fresh copy of the same project.
    again = demo_db.with_name("again.db")
    shutil.copy(demo_template, again)
    seed = found[1]
    redo = child(
        "assign", again, "--annotators", "carol,alice,bob", "--overlap", "2", "--seed", seed
    )
    assert redo.returncode == 0, redo.stderr
    assert listed(again) == document
    assert read(again, "SELECT overlap, seed, audit FROM assign_run") == [(2, int(seed), 0)]


def test_done_is_every_pooled_pair_graded_by_the_annotator(demo_db: Path) -> None:
    # The demo holds ann's grades on its first 20 queries: give ann every query.
    done = child("assign", demo_db, "--annotators", "ann,bob", "--overlap", "2", "--seed", "1")
    assert done.returncode == 0, done.stderr
    mine = own_grades(demo_db, "ann")
    for depth in (1, 3, 5, 20):
        pool = pools(demo_db, depth)
        expected = {q for q, passages in pool.items() if passages <= mine.get(q, set())}
        document = listed(demo_db, "--depth", str(depth))
        shares = document["annotators"]
        assert isinstance(shares, dict)
        ann = shares["ann"]
        assert set(ann["done"]) == expected
        assert ann["done"] == [q for q in ann["assigned"] if q in expected]  # serving order
        assert shares["bob"]["done"] == []
    # Shallow pools are finished on some queries, deep ones on none: both cases are seen.
    assert listed(demo_db, "--depth", "1")["annotators"]["ann"]["done"]  # type: ignore[index]
    text = child("assign", demo_db, "--list", "--depth", "1")
    assert text.returncode == 0, text.stderr
    rows = {line.split()[0]: line.split()[1:] for line in text.stdout.splitlines()[2:]}
    assert rows["bob"] == ["30", "0"]
    assert rows["ann"][0] == "30" and int(rows["ann"][1]) > 0


def test_assigning_again_keeps_a_started_share_and_says_so(demo_db: Path) -> None:
    words = ["--overlap", "2", "--seed", "5"]
    done = child("assign", demo_db, "--annotators", ",".join(TEAM), *words)
    assert done.returncode == 0, done.stderr
    before = listed(demo_db)["annotators"]
    assert isinstance(before, dict)
    begun = before["carol"]["assigned"][0]
    passage = sorted(pools(demo_db, 20)[begun])[0]
    with Project.open(demo_db) as project:
        record(project, GradeEvent(query=begun, passage=passage, annotator="carol", grade=2))
    # carol is left out and the overlap drops to 1: her begun query stays hers.
    done = child(
        "assign", demo_db, "--annotators", "alice,bob,dave", "--overlap", "1", "--seed", "5"
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "new annotators, created: dave" in out
    assert f"kept 1 started share (an assign never takes begun work away): carol: {begun}" in out
    assert "(annotator not in --annotators): carol: " in out
    after = listed(demo_db)
    assert after["overlap"] == 1
    shares = after["annotators"]
    assert isinstance(shares, dict)
    assert shares["carol"]["assigned"] == [begun]
    count = Counter(q for share in shares.values() for q in share["assigned"])
    assert count == dict.fromkeys(pools(demo_db, 20), 1)


def test_a_first_assign_keeps_the_queries_an_annotator_graded_before(demo_db: Path) -> None:
    # The demo's owner, ann, graded 20 queries before anything was assigned: named in
    # --annotators, she keeps every one of them, and they count towards the overlap.
    graded = sorted(own_grades(demo_db, "ann"))
    assert len(graded) == 20
    words = ["--annotators", "ann,bob,carol", "--overlap", "2", "--seed", "1"]
    done = child("assign", demo_db, *words)
    assert done.returncode == 0, done.stderr
    shares = listed(demo_db)["annotators"]
    assert isinstance(shares, dict)
    assert set(graded) <= set(shares["ann"]["assigned"])
    count = Counter(q for share in shares.values() for q in share["assigned"])
    assert count == dict.fromkeys(pools(demo_db, 20), 2)
    kept = next(line for line in done.stdout.splitlines() if "started before assigning" in line)
    assert kept.startswith("kept 20 shares (started before assigning")
    assert sorted(kept.split("ann: ")[1].split()) == graded
    # 30 queries twice is 60 shares: 20 kept, 40 given.
    assert "gave 40 new shares" in done.stdout


def test_a_grade_made_while_the_assign_plans_is_not_planned_away(
    demo_db: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # bob grades q25, which nobody was given, after the plan read the project and
    # before it is recorded (another window: people grade while a lead assigns). The
    # plan gave q25 to alice alone, so the assign is refused whole; made again, it
    # keeps q25 bob's.
    from raglabel.analysis import assignment
    from raglabel.cli.main import main

    planned = assignment.plan
    passage = min(pools(demo_db, 1)["q25"])

    def plan_then_bob_grades(*args: Any, **kwargs: Any) -> Any:
        made = planned(*args, **kwargs)
        assert "q25" not in made.shares.get("bob", [])
        with Project.open(demo_db) as other:
            event = GradeEvent(query="q25", passage=passage, annotator="bob", grade=2)
            record(other, event)
        return made

    monkeypatch.setattr(assignment, "plan", plan_then_bob_grades)
    words = ["assign", str(demo_db), "--annotators", "alice,bob", "--overlap", "1"]
    with pytest.raises(SystemExit) as refused:
        main([*words, "--seed", "3"])
    assert refused.value.code == 2
    assert "'bob' has started query 'q25'" in capsys.readouterr().err
    assert read(demo_db, "SELECT count(*) FROM assignment") == [(0,)]
    monkeypatch.setattr(assignment, "plan", planned)
    assert main([*words, "--seed", "3"]) == 0
    shares = listed(demo_db)["annotators"]
    assert isinstance(shares, dict) and "q25" in shares["bob"]["assigned"]
    assert "q25" not in shares["alice"]["assigned"]


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["--annotators", "alice,bob", "--overlap", "3"], "--overlap 3: give each query to 1 to 2"),
        (["--annotators", "alice,bob", "--overlap", "0"], "argument --overlap: must be a whole"),
        (["--annotators", "alice,bob"], "--annotators needs --overlap K"),
        (["--annotators", "alice,,bob", "--overlap", "1"], "--annotators needs a name"),
        (["--annotators", "alice,alice", "--overlap", "1"], "'alice' is named twice"),
        (["--annotators", "humans,bob", "--overlap", "1"], "annotator 'humans': raglabel agree"),
        (["--annotators", "Judge (x),bob", "--overlap", "1"], "annotator 'Judge (x)'"),
        (["--annotators", "ANN,bob", "--overlap", "1"], "the project has annotator 'ann'"),
        # The tester's command: neither spelling is stored, and the message says so.
        (
            ["--annotators", "alice,bob,dave,Dave", "--overlap", "2"],
            "annotators 'Dave' and 'dave': both are named here, the same name in two cases",
        ),
        (["--annotators", "a,b", "--overlap", "1", "--queries", "31"], "cover only 30 queries"),
        (
            ["--annotators", "a,b", "--overlap", "1", "--audit"],
            "--audit: the project has no audit sample yet; draw one first with raglabel audit"
            " DB --sample N",
        ),
        (["--annotators", "a", "--overlap", "1", "--audit", "--queries", "3"], "not allowed"),
        (["--annotators", "a", "--overlap", "1", "--format", "json"], "--format goes with --list"),
        (["--list", "--overlap", "2"], "--overlap goes with --annotators, not --list"),
        (["--list", "--seed", "2"], "--seed goes with --annotators, not --list"),
        (["--list", "--dry-run"], "--dry-run goes with --annotators, not --list"),
        ([], "one of the arguments --annotators --list is required"),
    ],
)
def test_bad_requests_exit_2_and_write_nothing(
    demo_db: Path, words: list[str], message: str
) -> None:
    before = hashlib.sha256(demo_db.read_bytes()).hexdigest()
    people = read(demo_db, "SELECT * FROM annotator ORDER BY id")
    done = child("assign", demo_db, *words)
    assert done.returncode == 2, done.stdout
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
    assert read(demo_db, "SELECT count(*) FROM assign_run") == [(0,)]
    assert read(demo_db, "SELECT * FROM annotator ORDER BY id") == people
    assert hashlib.sha256(demo_db.read_bytes()).hexdigest() == before


def test_the_audit_samples_queries_are_assigned_in_draw_order(demo_db: Path) -> None:
    done = child("audit", demo_db, "--sample", "6", "--seed", "2", "--format", "json")
    assert done.returncode == 0, done.stderr
    drawn = json.loads(done.stdout)["drawn"]
    done = child("assign", demo_db, "--annotators", "alice,bob", "--overlap", "2", "--audit")
    assert done.returncode == 0, done.stderr
    assert "assigned 6 queries (the audit sample's queries)" in done.stdout
    shares = listed(demo_db)["annotators"]
    assert shares == {name: {"assigned": drawn, "done": []} for name in ("alice", "bob")}
    assert read(demo_db, "SELECT audit FROM assign_run") == [(1,)]


def test_lowering_the_overlap_says_why_the_shares_went(demo_db: Path) -> None:
    team = ",".join(TEAM)
    done = child("assign", demo_db, "--annotators", team, "--overlap", "2", "--seed", "5")
    assert done.returncode == 0, done.stderr
    done = child("assign", demo_db, "--annotators", team, "--overlap", "1", "--seed", "5")
    assert done.returncode == 0, done.stderr
    took = [line for line in done.stdout.splitlines() if line.startswith("took ")]
    # Every query goes from two annotators to one: 30 shares dropped, none moved.
    assert len(took) == 1
    assert took[0].startswith(
        "took 30 shares (not started; the overlap went down, so the query has fewer annotators): "
    )
    assert "to balance the pairs" not in done.stdout


def test_a_started_query_outside_the_assign_is_counted_with_it(demo_db: Path) -> None:
    done = child("audit", demo_db, "--sample", "4", "--seed", "2", "--format", "json")
    assert done.returncode == 0, done.stderr
    drawn = json.loads(done.stdout)["drawn"]
    done = child("assign", demo_db, "--annotators", "alice,bob", "--overlap", "1", "--seed", "1")
    assert done.returncode == 0, done.stderr
    alices = listed(demo_db)["annotators"]
    assert isinstance(alices, dict)
    begun = next(q for q in alices["alice"]["assigned"] if q not in drawn)
    passage = sorted(pools(demo_db, 20)[begun])[0]
    with Project.open(demo_db) as project:
        record(project, GradeEvent(query=begun, passage=passage, annotator="alice", grade=1))
    done = child("assign", demo_db, "--annotators", "alice,bob", "--overlap", "2", "--audit")
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith(
        "assigned 5 queries: 4 (the audit sample's queries), each to 2 of 2 annotators,"
    )
    assert (
        ", and 1 started query outside them, kept (an assign never takes begun work away):"
        f" {begun}; seed "
    ) in first
    shares = listed(demo_db)["annotators"]
    assert isinstance(shares, dict)
    assert len({q for share in shares.values() for q in share["assigned"]}) == 5


@pytest.fixture
def locked(demo_template: Path) -> Iterator[tuple[Path, list[str]]]:
    """The demo project with an assignment, read-only, file and folder; and the words
    that run a command as a user that binds."""
    prefix = other_user()
    # Not tmp_path: pytest makes its folders for root alone, which nobody cannot enter.
    base = Path(tempfile.mkdtemp(prefix="raglabel-assign-ro-"))
    folder = base / "ro"
    try:
        base.chmod(0o755)
        folder.mkdir()
        db = folder / "demo.db"
        shutil.copy(demo_template, db)
        done = child("assign", db, "--annotators", "alice,bob", "--overlap", "1", "--seed", "3")
        assert done.returncode == 0, done.stderr
        conn = sqlite3.connect(db)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        for leftover in folder.glob("demo.db-*"):
            leftover.unlink()
        db.chmod(0o444)
        folder.chmod(0o555)
        yield db, prefix
    finally:
        folder.chmod(0o755)
        shutil.rmtree(base)


def _listing(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def test_a_read_only_project_refuses_an_assign_and_lists_its_shares(
    locked: tuple[Path, list[str]],
) -> None:
    db, prefix = locked
    before = _listing(db.parent)

    def run(*words: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*prefix, sys.executable, "-m", "raglabel", "assign", str(db), *words],
            capture_output=True,
            text=True,
            check=False,
            cwd=tempfile.gettempdir(),
            timeout=300,
        )

    done = run("--annotators", "alice,bob,carol", "--overlap", "2", "--seed", "4")
    assert done.returncode == 1, done.stderr
    assert f"raglabel assign: error: nothing was saved: {db} is read-only" in done.stderr
    # The refusal names the team's reading commands, and each of them does read it.
    assert (
        "Commands that only read it work (eval, report, export, backup, agree, progress,"
        " assign --list, assign --dry-run, audit --list)"
    ) in done.stderr
    dry = ["assign", "--annotators", "alice,bob,carol", "--overlap", "2", "--dry-run"]
    for command in (["progress"], ["audit", "--list"], dry):
        read_it = subprocess.run(
            [*prefix, sys.executable, "-m", "raglabel", command[0], str(db), *command[1:]],
            capture_output=True,
            text=True,
            check=False,
            cwd=tempfile.gettempdir(),
            timeout=300,
        )
        assert read_it.returncode == 0, read_it.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert _listing(db.parent) == before
    done = run("--list", "--format", "json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["overlap"] == 1
    assert sorted(document["annotators"]) == ["alice", "bob"]
    assert "is read as it stands (SQLite immutable)" in done.stderr
    assert _listing(db.parent) == before


def test_the_pages_commands_print_what_the_page_says(tmp_path: Path) -> None:
    here = f"tests/e2e/{Path(__file__).name}"
    [commands] = examples("guide/team.md", here, "bash")
    printed = examples("guide/team.md", here, "text")
    [json_shape] = examples("guide/team.md", here, "json")
    build_demo(tmp_path / "project.db", "owner")
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    outputs = []
    for line in commands.splitlines():
        done = subprocess.run(
            shlex.split(line), capture_output=True, text=True, cwd=tmp_path, env=env, check=False
        )
        assert done.returncode == 0, f"{line}\n{done.stderr}"
        outputs.append(done.stdout)
    assert outputs[0] == printed[0]
    assert outputs[1] == printed[1]
    document = json.loads(outputs[2])
    # The page shows the document's shape with the first two queries of each list.
    shape = json.loads(json_shape)
    assert shape == {
        "overlap": document["overlap"],
        "annotators": {
            name: {key: share[key][:2] for key in share}
            for name, share in document["annotators"].items()
        },
    }


def test_a_dry_run_prints_the_plan_and_records_nothing(demo_db: Path) -> None:
    # A misspelt name costs real shares once recorded: a dry run shows the plan first.
    words = ["--annotators", "ann,bob,carl", "--overlap", "2", "--seed", "4"]
    before = hashlib.sha256(demo_db.read_bytes()).hexdigest()
    dry = child("assign", demo_db, *words, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert hashlib.sha256(demo_db.read_bytes()).hexdigest() == before
    assert read(demo_db, "SELECT count(*) FROM assignment") == [(0,)]
    assert read(demo_db, "SELECT count(*) FROM annotator WHERE name IN ('bob', 'carl')") == [(0,)]
    shown = dry.stdout.splitlines()
    assert shown[0] == "dry run: this plan is not recorded"
    assert shown[-1].startswith("dry run: nothing was recorded; --seed 4 without --dry-run")
    assert "new annotators, would be created: bob, carl" in shown
    # The same command without it records exactly the plan shown.
    done = child("assign", demo_db, *words)
    assert done.returncode == 0, done.stderr
    recorded = done.stdout.splitlines()
    assert recorded[0] == shown[1].replace("would assign", "assigned", 1)
    assert recorded[1:] == [line.replace("would be created", "created") for line in shown[2:-1]]
