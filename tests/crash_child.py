"""A grader to be killed: grades through the grading app's own session code (GradingSession) and
acknowledges each action on stdout only after the call has returned, as the app shows
"saved" only then. The crash tests SIGKILL it and check every acknowledged action.

    python tests/crash_child.py DB ANNOTATOR FIRST SEED [COUNT [grades]]

Actions are numbered from FIRST; action i is chosen from (SEED, i) alone, so a restarted
child goes on where its killed predecessor was acknowledged. With COUNT it stops after
that many acknowledged actions; with "grades" every action is a grade (no undo, clear).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

from raglabel.session.grading import GradingSession
from raglabel.session.options import AppOptions


def main() -> None:
    db, annotator, first, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    count = int(sys.argv[5]) if len(sys.argv) > 5 else None
    grades_only = len(sys.argv) > 6 and sys.argv[6] == "grades"
    session = GradingSession.open(AppOptions(project=Path(db), annotator=annotator))
    pools = session.catalog.candidates
    pairs = [(q, pid) for q in range(len(pools)) for pid in pools[q]]
    print("READY", flush=True)
    i = first
    while count is None or i < first + count:
        rng = random.Random(seed * 1_000_003 + i)
        q, pid = rng.choice(pairs)
        roll = 1.0 if grades_only else rng.random()
        if roll < 0.1:
            change = session.undo()
            if change is None:
                i += 1
                continue
        elif roll < 0.15:
            change = session.clear(q, pid)
        else:
            change = session.grade(q, pid, rng.randint(1, 5))
        query = session.catalog.queries[change.query].ext_id
        passage = session.catalog.passage_ext[change.pid]
        print(f"ACK {i} {change.kind} {change.event_id} {query} {passage}", flush=True)
        i += 1


if __name__ == "__main__":
    main()
