"""Time which assigned queries are done (issue 30): the app's first read, the lead's views.

    python benchmarks/assignment.py [--repeat N] [--keep]

A synthetic project: 1,000 queries, 5 runs of 100 passages each (drawn from 300 a
query, so the pool to depth 20 is about 85 pairs), shared among ann, bob and cat with
overlap 2 (667 queries for ann); ann has graded the whole pool of 200 of hers and half
of 100 more, bob the whole of 150 and half of 50, imported as qrels under their names.

Timed in this process, with time.perf_counter around each call, the calls interleaved
so that a busy moment of the machine hits each alike; the table gives min and median:

- ``plain rule``: done as the module states it, as ``done_queries`` read it before the
  integer path: ``storage.audit.pooled`` (passage ids and ranks per pair) and
  ``person_grades`` (a tuple per graded pair). The baseline, here in this file.
- ``done_queries``, ``done_by_annotator``: the store's answers now (they must equal the
  plain rule's, or the run stops).
- ``progress``: ``raglabel progress``'s figures (analysis.progress.progress).
- ``first paint``: what the Queries screen's first paint asks of a session opened on the
  file (``assignment_standing``: the members, done unknown).
- ``worker read``: the read a worker then makes (``AssignmentQueue.read_aside``).
"""

from __future__ import annotations

import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import make_parser, markdown_table, scratch_directory

from raglabel.analysis.progress import progress
from raglabel.session.grading import GradingSession
from raglabel.session.options import AppOptions
from raglabel.storage.assignments import assigned, done_by_annotator, done_queries, record
from raglabel.storage.audit import person_grades, pooled
from raglabel.storage.project import Project

QUERIES = 1_000
RUNS = 5
RANKED = 100  # passages each run ranks a query
CANDIDATES = 300  # the passages a query's rankings are drawn from
DEPTH = 20
TEAM = ("ann", "bob", "cat")
#: (annotator, queries of their share graded whole, then half-graded ones)
GRADED = (("ann", 200, 100), ("bob", 150, 50))
SEED = 30


def raglabel(*words: str) -> None:
    command = [str(Path(sys.executable).parent / "raglabel"), *words]
    subprocess.run(command, check=True, capture_output=True, text=True)


def build(folder: Path) -> Path:
    """The synthetic project (see the module's docstring)."""
    rng = random.Random(SEED)
    runs = []
    for r in range(RUNS):
        path = folder / f"run{r}.txt"
        with path.open("w") as out:
            for q in range(QUERIES):
                for rank, doc in enumerate(rng.sample(range(CANDIDATES), RANKED), 1):
                    out.write(f"q{q:04d} Q0 d{q}_{doc} {rank} {RANKED - rank} run{r}\n")
        runs.append(f"run{r}={path}")
    db = folder / "project.db"
    raglabel("init", str(db))
    raglabel("import", str(db), "--run", *runs)
    shares: dict[str, list[str]] = {name: [] for name in TEAM}
    for i in range(QUERIES):
        for j in range(2):
            shares[TEAM[(i + j) % len(TEAM)]].append(f"q{i:04d}")
    with Project.open(db) as project:
        record(project, shares, overlap=2, seed=SEED, audit=False)
        rows = dict(project.conn.execute("SELECT ext_id, id FROM query").fetchall())
        pool = pooled(project.conn, list(rows.values()), DEPTH)
    for name, whole, half in GRADED:
        qrels = folder / f"{name}.qrels"
        with qrels.open("w") as out:
            for i, q in enumerate(shares[name][: whole + half]):
                pids = sorted(pool[rows[q]])
                for pid in pids if i < whole else pids[: len(pids) // 2]:
                    out.write(f"{q} 0 {pid} {rng.randint(0, 3)}\n")
        raglabel("import", str(db), "--qrels", str(qrels), "--annotator", name)
    return db


def plain_rule(project: Project, names: list[str]) -> dict[str, set[str]]:
    """Done as stated: every pooled pair (by passage id) holds the annotator's own grade."""
    conn = project.conn
    found: dict[str, set[str]] = {}
    for name in names:
        share = conn.execute(
            "SELECT s.query_id, q.ext_id FROM assignment s JOIN query q ON q.id = s.query_id"
            " JOIN annotator a ON a.id = s.annotator_id WHERE a.name = ?",
            (name,),
        ).fetchall()
        rows = [row for row, _ in share]
        pool = pooled(conn, rows, DEPTH)
        graded, _ = person_grades(conn, rows, annotator=name)
        found[name] = {
            qid for row, qid in share if pool[row] and all((row, p) in graded for p in pool[row])
        }
    return found


def main() -> int:
    parser = make_parser(__doc__)
    parser.add_argument("--repeat", type=int, default=15, help="timed calls of each (15)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch project")
    args = parser.parse_args()
    with scratch_directory("assignbench-", args.keep) as folder:
        db = build(folder)
        with Project.reader(db) as reader:
            everyone = sorted(assigned(reader.conn))
            expected = plain_rule(reader, everyone)
            if done_by_annotator(reader.conn, DEPTH) != {n: expected[n] for n in everyone}:
                print("done_by_annotator differs from the plain rule", file=sys.stderr)
                return 1
            session = GradingSession.open(AppOptions(project=db, annotator="ann"), background=True)

            def first_paint() -> Any:
                session._assignment = None  # as a fresh session has it
                return session.assignment_standing()

            def worker_read() -> Any:
                session._assignment = None
                wanted = session.assignment_to_read()
                assert wanted is not None
                return wanted[0].read_aside(wanted[1])

            cases: dict[str, Callable[[], Any]] = {
                "plain rule, ann": lambda: plain_rule(reader, ["ann"]),
                "done_queries, ann": lambda: done_queries(reader.conn, "ann", DEPTH),
                "plain rule, all 3": lambda: plain_rule(reader, everyone),
                "done_by_annotator, all 3": lambda: done_by_annotator(reader.conn, DEPTH),
                "progress (all figures)": lambda: progress(reader, DEPTH),
                "first paint (assignment_standing)": first_paint,
                "worker read (read_aside)": worker_read,
            }
            times: dict[str, list[float]] = {name: [] for name in cases}
            for _ in range(args.repeat):
                for name, call in cases.items():
                    start = time.perf_counter()
                    call()
                    times[name].append((time.perf_counter() - start) * 1000)
            session.close()
    share = sum(1 for i in range(QUERIES) for j in range(2) if TEAM[(i + j) % 3] == "ann")
    print(
        f"{QUERIES} queries, {RUNS} runs of {RANKED}, depth {DEPTH}; ann is assigned {share};"
        f" {args.repeat} calls each, interleaved"
    )
    rows = [[name, f"{min(ms):.1f}", f"{statistics.median(ms):.1f}"] for name, ms in times.items()]
    print(markdown_table(["what", "min ms", "median ms"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
