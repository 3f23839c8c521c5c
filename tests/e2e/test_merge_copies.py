"""Two copies of one project graded at once by different people, then merged back into it
through their exported logs: the recipe of docs/guide/scaling.md, run as written.

Copy A (alice and bob) and copy B (carol and dave) are graded in parallel processes
while erin grades the project itself; then the lead adjudicates one disagreement on
each copy, as the app's adjudication screen does (``storage.adjudication``). Both logs go
back into the project in the page's order, into a second copy of the project in the
other order, and then again into both. Whatever the order: every event of each copy is
in the project once, with its annotator and times; each person's current grades are
what they last set; the lead's adjudications still settle their pairs; and importing a
log a second time adds nothing.
"""

from __future__ import annotations

import json
import multiprocessing
import shlex
import sqlite3
import traceback
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any, TypeAlias

from cli_helpers import child
from docs_pages import examples
from integrity import assert_sound

from raglabel.storage.adjudication import adjudicate, disagreements
from raglabel.storage.answers import record_answer, standing_answer_grades
from raglabel.storage.clock import now
from raglabel.storage.demo import build_demo
from raglabel.storage.events import AnswerTarget, Event
from raglabel.storage.grades import GradeEvent, record, undo_last
from raglabel.storage.project import Project

DEMO = Path(__file__).resolve().parents[2] / "fixtures" / "demo"
JOIN_TIMEOUT_S = 120.0

# The pairs people grade, by a short name.
PAIRS = {
    "P1": ("q01", "kb-0002"),
    "P2": ("q01", "kb-0047"),
    "P3": ("q01", "kb-0163"),
    "P4": ("q02", "kb-0019"),
    "P5": ("q02", "kb-0055"),
    "P6": ("q02", "kb-0073"),
    "P7": ("q03", "kb-0036"),
    "P8": ("q03", "kb-0204"),
}

#: One action of a plan: ("grade", pair, grade), ("clear", pair), ("skip" or "flag",
#: pair, note), ("undo",) of the person's latest action, ("adjudicate", pair, grade).
Action: TypeAlias = tuple[Any, ...]
Plan: TypeAlias = dict[str, list[Action]]

#: Graded in the project before the copies are made: both copies carry these events.
BEFORE: Plan = {
    "alice": [("grade", "P1", 4), ("grade", "P2", 3)],
    "bob": [("grade", "P1", 4), ("grade", "P3", 2)],
}
#: Graded at the same time on copy A, on copy B and in the project itself.
COPY_A: Plan = {
    # Her first undo reverts her last grade made before the copies parted (P2).
    "alice": [
        ("undo",),
        ("grade", "P4", 5),
        ("grade", "P5", 2),
        ("undo",),
        ("grade", "P1", 2),
        ("grade", "P6", 4),
    ],
    "bob": [
        ("grade", "P4", 1),
        ("grade", "P6", 5),
        ("grade", "P2", 4),
        ("undo",),
        ("flag", "P2", 'near-duplicate of "kb-0163"'),
        ("grade", "P3", 3),
    ],
}
COPY_B: Plan = {
    "carol": [
        ("grade", "P6", 1),
        ("grade", "P7", 5),
        ("grade", "P1", 3),
        ("undo",),
        ("skip", "P8", "needs the manual\nit cites — page 12"),
        ("grade", "P7", 4),
    ],
    "dave": [
        ("grade", "P6", 2),
        ("grade", "P7", 1),
        ("grade", "P8", 3),
        ("clear", "P8"),
        ("grade", "P8", 2),
    ],
}
ON_MAIN: Plan = {"erin": [("grade", "P1", 5), ("grade", "P8", 2), ("grade", "P8", 3)]}
#: Then the lead settles a disagreement on each copy: on A she changes her mind once.
LEAD = "lena"
LEAD_A: Plan = {LEAD: [("adjudicate", "P4", 3), ("undo",), ("adjudicate", "P4", 4)]}
LEAD_B: Plan = {LEAD: [("adjudicate", "P7", 3)]}

#: What each person last set, pair by pair, once everything is merged.
CURRENT = {
    ("alice", "P1"): 2,
    ("alice", "P4"): 5,
    ("alice", "P6"): 4,
    ("bob", "P1"): 4,
    ("bob", "P3"): 3,
    ("bob", "P4"): 1,
    ("bob", "P6"): 5,
    ("carol", "P6"): 1,
    ("carol", "P7"): 4,
    ("dave", "P6"): 2,
    ("dave", "P7"): 1,
    ("dave", "P8"): 2,
    ("erin", "P1"): 5,
    ("erin", "P8"): 3,
    (LEAD, "P4"): 4,
    (LEAD, "P7"): 3,
}
#: ``export --qrels`` (default map: grade 2 -> 0, 3 -> 1, 4 -> 2, 5 -> 3, 1 -> -1): the
#: lower median of people's grades, but the lead's on P4 and P7, where the plain median
#: would be 1 (label -1).
QRELS = {"P1": 2, "P3": 1, "P4": 2, "P6": 0, "P7": 1, "P8": 0}


def _act(project: Project, name: str, number: int, action: Action) -> None:
    kind = action[0]
    if kind == "undo":
        assert undo_last(project, name, origin="app") is not None
        return
    query, passage = PAIRS[action[1]]
    timing: dict[str, Any] = {"shown_at": now(), "active_ms": 800 + 100 * number}
    if kind == "adjudicate":
        # The lead adjudicates what the adjudication screen lists, as the app does.
        listed = {(d.query, d.passage) for d in disagreements(project.conn)}
        assert (query, passage) in listed, listed
        adjudicate(project, query, passage, name, action[2], **timing)
        return
    fields: dict[str, Any] = {"grade": action[2]} if kind == "grade" else {}
    if kind in ("skip", "flag"):
        fields = {"note": action[2]}
    event = GradeEvent(
        query=query, passage=passage, annotator=name, kind=kind, origin="app", **timing, **fields
    )
    record(project, event)


@dataclass(frozen=True)
class Grader:
    """One person grading one project file by a plan."""

    path: str
    name: str
    plan: list[Action]


def _grader(grader: Grader, steps: int, step: Barrier, out: Queue[Any]) -> None:
    """Carry out the grader's plan, one action a step, every grader taking each of
    ``steps`` steps together; report (name, path, error or None)."""
    try:
        with Project.open(grader.path) as project:
            for number in range(steps):
                step.wait()
                if number < len(grader.plan):
                    _act(project, grader.name, number, grader.plan[number])
        out.put((grader.name, grader.path, None))
    except BaseException:
        step.abort()  # the others stop waiting for this one
        out.put((grader.name, grader.path, traceback.format_exc()))


def grade_at_once(work: Sequence[tuple[Path, Plan]]) -> None:
    """Each person of each plan grades in a process of their own, all at once: everyone
    takes their first action together, then their second, and so on, so that the people
    of one copy always interleave."""
    ctx = multiprocessing.get_context("spawn")
    graders = [Grader(str(db), name, plan) for db, plans in work for name, plan in plans.items()]
    steps = max(len(grader.plan) for grader in graders)
    step = ctx.Barrier(len(graders))
    out: Queue[Any] = ctx.Queue()
    processes = [ctx.Process(target=_grader, args=(grader, steps, step, out)) for grader in graders]
    for process in processes:
        process.start()
    try:
        # Results come before join: a child blocks on exit until its queue is drained.
        reports = [out.get(timeout=JOIN_TIMEOUT_S) for _ in processes]
        for process in processes:
            process.join(timeout=JOIN_TIMEOUT_S)
    finally:
        for process in processes:
            if process.is_alive():
                process.kill()
                process.join()
    errors = [f"{name} on {path}:\n{error}" for name, path, error in reports if error]
    assert errors == [], "\n".join(errors)
    assert [process.exitcode for process in processes] == [0] * len(processes)


#: An event as its content: (query, passage, annotator, kind, grade, note, source, model,
#: origin, shown_at, graded_at, active_ms, accepted_suggestion, the undone event's content).
Content: TypeAlias = tuple[Any, ...]


def history(db: Path) -> list[Content]:
    """The project's log in order, each event by its content and an undo by the content
    of the event it reverts: ids are local to a file, the content is not."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT e.id, q.ext_id, p.ext_id, a.name, e.kind, e.grade, e.target, e.note,"
            " e.source, e.model, e.origin, e.shown_at, e.graded_at, e.active_ms,"
            " e.accepted_suggestion FROM event e JOIN query q ON q.id = e.query_id"
            " JOIN passage p ON p.id = e.passage_id JOIN annotator a ON a.id = e.annotator_id"
            " ORDER BY e.id"
        ).fetchall()
    finally:
        conn.close()
    by_id: dict[int, Content] = {}
    log = []
    for event_id, *fields in rows:
        target = fields.pop(5)
        content = (*fields, None if target is None else by_id[target])
        by_id[event_id] = content
        log.append(content)
    return log


def current(db: Path) -> dict[tuple[str, str], int]:
    """(annotator, pair's short name) -> current grade."""
    names = {pair: short for short, pair in PAIRS.items()}
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT a.name, q.ext_id, p.ext_id, c.grade FROM current_grade c"
            " JOIN annotator a ON a.id = c.annotator_id JOIN query q ON q.id = c.query_id"
            " JOIN passage p ON p.id = c.passage_id"
        ).fetchall()
    finally:
        conn.close()
    return {(name, names[(qid, pid)]): grade for name, qid, pid, grade in rows}


def raglabel(cwd: Path, *args: str | Path) -> str:
    """What ``raglabel ARGS`` printed; it must succeed without a warning."""
    done = child(*args, cwd=cwd)
    assert (done.returncode, done.stderr) == (0, ""), f"raglabel {args}: {done.stderr}"
    return done.stdout


def recipe() -> list[list[list[str]]]:
    """The commands of each bash block the page marks as run here, one list a block."""
    blocks = []
    for block in examples("guide/scaling.md", f"tests/e2e/{Path(__file__).name}", "bash"):
        commands = []
        for line in block.splitlines():
            code = line.split("#", 1)[0].strip()
            if code:
                argv = shlex.split(code)
                assert argv[0] == "raglabel", argv
                commands.append(argv[1:])
        blocks.append(commands)
    return blocks


def settled(cwd: Path, db: str) -> dict[str, int]:
    """The project's labels as ``export --qrels`` writes them, by pair's short name."""
    names = {pair: short for short, pair in PAIRS.items()}
    raglabel(cwd, "export", db, "--qrels", f"{db}.qrels")
    lines = [line.split() for line in (cwd / f"{db}.qrels").read_text().splitlines()]
    return {names[(qid, pid)]: int(label) for qid, _, pid, label in lines}


def test_two_copies_graded_at_once_merge_back_whole(tmp_path: Path) -> None:
    split, merge, _ = recipe()
    assert split == [["backup", "project.db", "group-a.db"], ["backup", "project.db", "group-b.db"]]
    assert merge == [
        ["export", "group-a.db", "--jsonl", "group-a.jsonl", "--history"],
        ["export", "group-b.db", "--jsonl", "group-b.jsonl", "--history"],
        ["backup", "project.db", "before-merge.db"],
        ["import", "project.db", "--labels", "group-a.jsonl"],
        ["import", "project.db", "--labels", "group-b.jsonl"],
    ]
    raglabel(tmp_path, "init", "project.db")
    corpus = ("--queries", DEMO / "queries.jsonl", "--passages", DEMO / "passages.jsonl")
    raglabel(tmp_path, "import", "project.db", *corpus)
    main, group_a, group_b = (
        tmp_path / name for name in ("project.db", "group-a.db", "group-b.db")
    )
    grade_at_once([(main, {name: plan}) for name, plan in BEFORE.items()])
    shared = history(main)

    for argv in split:
        raglabel(tmp_path, *argv)
    assert history(group_a) == history(group_b) == shared
    grade_at_once([(group_a, COPY_A), (group_b, COPY_B), (main, ON_MAIN)])
    grade_at_once([(group_a, LEAD_A), (group_b, LEAD_B)])
    # Each copy holds what was done there, after what it was copied with.
    made = {}
    for copy, plans in ((group_a, (COPY_A, LEAD_A)), (group_b, (COPY_B, LEAD_B))):
        copied = history(copy)
        assert copied[: len(shared)] == shared
        made[copy] = copied[len(shared) :]
        per_person = Counter(event[2] for event in made[copy])
        assert per_person == {name: len(plan) for plans_ in plans for name, plan in plans_.items()}
        # The copy's two people took their first actions together.
        assert len({event[2] for event in made[copy][:2]}) == 2
    before_merge = history(main)
    assert before_merge[: len(shared)] == shared

    outputs = [raglabel(tmp_path, *argv) for argv in merge]
    assert outputs[3].splitlines()[0] == (
        f"imported into project.db: label events: {len(made[group_a])},"
        f" label events already in the log: {len(shared)}"
    )
    assert outputs[4].splitlines()[0] == (
        f"imported into project.db: label events: {len(made[group_b])},"
        f" label events already in the log: {len(shared)}"
    )
    assert history(tmp_path / "before-merge.db") == before_merge
    # The copies numbered their new events alike: the files share ids for different events.
    ids = [
        {json.loads(line)["event"] for line in (tmp_path / log).read_text().splitlines()}
        for log in ("group-a.jsonl", "group-b.jsonl")
    ]
    assert len(ids[0] & ids[1]) > len(shared)
    # The other order, into the project as it was before the merge.
    raglabel(tmp_path, "backup", "before-merge.db", "other-order.db")
    raglabel(tmp_path, "import", "other-order.db", "--labels", "group-b.jsonl")
    raglabel(tmp_path, "import", "other-order.db", "--labels", "group-a.jsonl")

    expected = Counter(before_merge) + Counter(made[group_a]) + Counter(made[group_b])
    assert max(expected.values()) == 1  # every event differs, by its time if nothing else
    for db in ("project.db", "other-order.db"):
        path = tmp_path / db
        # No event lost, none doubled: each once, with its annotator and times, and each
        # undo still reverting the very event it reverted on its copy.
        assert Counter(history(path)) == expected
        assert current(path) == CURRENT
        assert_sound(path)
        assert settled(tmp_path, db) == QRELS
        with Project.open(path) as project:
            listed = {(d.query, d.passage): d for d in disagreements(project.conn)}
        final = {name: listed[PAIRS[name]].final for name in ("P1", "P4", "P6", "P7")}
        assert final == {"P1": None, "P4": 4, "P6": None, "P7": 3}
        assert listed[PAIRS["P6"]].grades == {"alice": 4, "bob": 5, "carol": 1, "dave": 2}
        # Importing either log again adds nothing.
        merged = history(path)
        for exported, copy in (("group-a.jsonl", group_a), ("group-b.jsonl", group_b)):
            out = raglabel(tmp_path, "import", db, "--labels", exported)
            carried = len(shared) + len(made[copy])
            assert out.splitlines()[0] == (
                f"imported into {db}: label events already in the log: {carried}"
            )
        assert history(path) == merged


def test_one_person_grading_a_pair_in_two_places_is_warned_of(tmp_path: Path) -> None:
    # alice grades P1 on her group's copy, then again in the project, later: the import
    # appends the copy's older grade after the newer one, and says so. Her P3, graded in
    # the project first and on the copy later, merges in time order and is not named.
    raglabel(tmp_path, "init", "project.db")
    corpus = ("--queries", DEMO / "queries.jsonl", "--passages", DEMO / "passages.jsonl")
    raglabel(tmp_path, "import", "project.db", *corpus)
    main, copy = tmp_path / "project.db", tmp_path / "group-a.db"

    def grade(db: Path, pair: str, grade: int, minute: int) -> None:
        query, passage = PAIRS[pair]
        at = f"2026-11-28T09:{minute:02d}:00.000+00:00"
        with Project.open(db) as project:
            record(
                project,
                GradeEvent(
                    query=query, passage=passage, annotator="alice", grade=grade, graded_at=at
                ),
            )

    grade(main, "P1", 4, 0)
    raglabel(tmp_path, "backup", "project.db", "group-a.db")
    grade(main, "P3", 1, 1)
    grade(copy, "P1", 2, 2)
    grade(main, "P1", 5, 3)
    grade(copy, "P3", 4, 4)
    raglabel(tmp_path, "export", "group-a.db", "--jsonl", "group-a.jsonl", "--history")
    done = child("import", "project.db", "--labels", "group-a.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == (
        "imported into project.db: label events: 2, label events already in the log: 1"
    )
    assert done.stderr == (
        "raglabel import: warning: 1 of the file's (pair, annotator) items already held"
        " events newer than the file's on them (first: alice on q01 kb-0002); the file's"
        " were added after them, and a current grade follows the order events were added,"
        " not their times: each person should grade a pair in one copy only\n"
    )
    # As the warning says: the order added decides, so her older grade of P1 stands.
    assert current(main) == {("alice", "P1"): 2, ("alice", "P3"): 4}
    again = child("import", "project.db", "--labels", "group-a.jsonl", cwd=tmp_path)
    assert (again.returncode, again.stderr) == (0, "")


def standing_answers(db: Path) -> dict[tuple[str, str, str, str], tuple[int, object]]:
    """(annotator, system, sample, criterion) -> (grade, unsupported spans), as standing."""
    with Project.open_read(db) as project:
        found = standing_answer_grades(project.conn)
    return {
        (who, system, sample, criterion): (grade, spans)
        for (system, sample, criterion, who), (grade, spans, _) in found.items()
    }


def test_answer_grades_given_on_copies_merge_back(tmp_path: Path) -> None:
    # The demo with its two answer systems, lena's answer grades among them; on copy A
    # alice grades and lena regrades one of hers and clears another, on copy B carol
    # grades, each with or without unsupported spans. Merged in either order: the same.
    _, _, carry = recipe()
    assert carry == [
        ["export", "group-a.db", "--answer-grades", "group-a-answers.jsonl"],
        ["export", "group-b.db", "--answer-grades", "group-b-answers.jsonl"],
        ["import", "project.db", "--answer-grades", "group-a-answers.jsonl"],
        ["import", "project.db", "--answer-grades", "group-b-answers.jsonl"],
    ]
    main = tmp_path / "project.db"
    build_demo(main, "lena")
    raglabel(tmp_path, "backup", "project.db", "group-a.db")
    raglabel(tmp_path, "backup", "project.db", "group-b.db")
    raglabel(tmp_path, "backup", "project.db", "other-order.db")
    before = standing_answers(main)
    lena = sorted(key for key in before if key[0] == "lena")
    assert len(lena) > 4
    given = {
        tmp_path / "group-a.db": [
            ("alice", AnswerTarget("grounded", "q03", "faithfulness"), 2, ((0, 5),)),
            ("alice", AnswerTarget("embellished", "q03", "faithfulness"), 4, None),
            ("lena", AnswerTarget(*lena[0][1:]), 6 - before[lena[0]][0], None),
        ],
        tmp_path / "group-b.db": [
            ("carol", AnswerTarget("grounded", "q03", "faithfulness"), 5, None),
            ("carol", AnswerTarget("grounded", "q04", "answer_relevancy"), 3, None),
        ],
    }
    assert 6 - before[lena[0]][0] != before[lena[0]][0]  # a regrade that changes it
    for copy, grades in given.items():
        with Project.open(copy) as project:
            for who, target, grade, spans in grades:
                record_answer(project, Event(target, who, "grade", grade=grade, unsupported=spans))
    with Project.open(tmp_path / "group-a.db") as project:  # a clear stays behind
        record_answer(project, Event(AnswerTarget(*lena[1][1:]), "lena", "clear"))

    out = [raglabel(tmp_path, *argv) for argv in carry]
    # A: alice's two and lena's regrade; lena's cleared one is not in A's file.
    assert out[2].splitlines()[0] == (
        f"imported into project.db: answer grades: 3,"
        f" answer grades already standing: {len(before) - 2}"
    )
    # B still holds lena's grade from before her regrade on A: that very event, since
    # changed here, not a grade given anew.
    assert out[3].splitlines()[0] == (
        f"imported into project.db: answer grades: 2,"
        f" answer grades already standing: {len(before) - 1},"
        " answer grades since changed here: 1"
    )
    want = dict(before)
    for grades in given.values():
        for who, target, grade, spans in grades:
            key = (who, target.system, target.sample_id, target.criterion)
            want[key] = (grade, spans)
    assert standing_answers(main) == want  # lena's cleared grade still stands here
    assert_sound(main)
    # The other order gives the same grades; importing either file again adds nothing.
    for name in ("group-b-answers.jsonl", "group-a-answers.jsonl"):
        raglabel(tmp_path, "import", "other-order.db", "--answer-grades", name)
    assert standing_answers(tmp_path / "other-order.db") == want
    for db in ("project.db", "other-order.db"):
        for argv in carry[2:]:
            again = raglabel(tmp_path, "import", db, *argv[2:])
            assert "answer grades: " not in again, again
        assert standing_answers(tmp_path / db) == want
