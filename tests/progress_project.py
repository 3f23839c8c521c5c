"""A team at work for the progress tests (issue 30, section 2): the demo's corpus and
runs with ann's imported grades of its first 20 queries; six later queries assigned with
overlap 2 to alice, bob and carol; their grades given at the keys at fixed times (one a
break apart, one graded twice); and a lead who settled one of their disagreements.

Everything the tests expect is computed from :attr:`Team.given`, the grades as given,
never read back through raglabel.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pytest

from raglabel.storage.adjudication import adjudicate
from raglabel.storage.assignments import record as assign
from raglabel.storage.audit import pooled
from raglabel.storage.demo import build_demo
from raglabel.storage.grades import GradeEvent, record
from raglabel.storage.project import Project

DEPTH = 3  # a query is done when its pool to this depth is graded
IMPORTER = "ann"  # the demo's annotator: imported grades, no time at the keys
LEAD = "lead"
SHARES = {
    "alice": ["q21", "q22", "q23", "q24"],
    "bob": ["q21", "q22", "q25", "q26"],
    "carol": ["q23", "q24", "q25", "q26"],
}
START = datetime(2026, 11, 28, 9, 0, tzinfo=UTC)
#: Seconds between one annotator's consecutive grades, in turn; 1000 is a break.
GAPS = (12, 30, 7, 45, 1000, 20, 9, 61)
#: How much longer than GAPS each annotator takes: their paces differ (a break stays one).
SPEED = {"alice": 1.0, "bob": 1.5, "carol": 0.75}


@dataclass(frozen=True)
class Given:
    annotator: str
    query: str
    passage: str
    grade: int
    at: datetime


@dataclass
class Team:
    db: Path
    pools: dict[str, list[str]]  # assigned query -> its pooled passages at DEPTH
    given: list[Given]  # every grade given at the keys, in the order given
    settled: tuple[str, str, int]  # the pair the lead adjudicated, and the final grade

    def standing(self, annotator: str) -> dict[tuple[str, str], int]:
        """The annotator's latest grade of each pair they graded at the keys."""
        return {(g.query, g.passage): g.grade for g in self.given if g.annotator == annotator}

    def times(self, annotator: str) -> list[datetime]:
        return [g.at for g in self.given if g.annotator == annotator]


def _plan(pools: dict[str, list[str]]) -> list[tuple[str, str, str, int]]:
    """(annotator, query, passage, grade) in the order each annotator gives them."""
    rng = random.Random(30)
    truth = {(q, p): rng.randint(1, 5) for q, ps in pools.items() for p in ps}

    def near(q: str, p: str, shift: int) -> int:
        return min(5, max(1, truth[q, p] + shift))

    plan: list[tuple[str, str, str, int]] = []
    first = pools["q21"][0]
    plan.append(("alice", "q21", first, 1))  # graded again at once: the later one stands
    for q in ("q21", "q22"):
        plan += [("alice", q, p, truth[q, p]) for p in pools[q]]
    plan += [("alice", "q23", p, truth["q23", p]) for p in pools["q23"][:2]]
    # bob: q21 whole, with the first pair three grades off and every third one off by
    # one; half of q22; q25 whole.
    for i, p in enumerate(pools["q21"]):
        shift = 3 if i == 0 else (1 if i % 3 == 1 else 0)
        plan.append(("bob", "q21", p, near("q21", p, shift if truth["q21", p] < 3 else -shift)))
    half = pools["q22"][: len(pools["q22"]) // 2]
    plan += [("bob", "q22", p, truth["q22", p]) for p in half]
    plan += [("bob", "q25", p, truth["q25", p]) for p in pools["q25"]]
    # carol: q23 whole, off by two on its first pair; q25 but its last pair.
    for i, p in enumerate(pools["q23"]):
        plan.append(
            ("carol", "q23", p, near("q23", p, 0 if i else (2 if truth["q23", p] < 3 else -2)))
        )
    plan += [("carol", "q25", p, near("q25", p, rng.choice((-1, 0, 1)))) for p in pools["q25"][:-1]]
    return plan


def build_team(path: Path) -> Team:
    build_demo(path, IMPORTER, answers=False)
    with Project.open(path) as project:
        assign(project, SHARES, overlap=2, seed=None, audit=False)
        rows = dict(project.conn.execute("SELECT ext_id, id FROM query").fetchall())
        queries = sorted({q for qs in SHARES.values() for q in qs})
        by_row = pooled(project.conn, [rows[q] for q in queries], DEPTH)
        pools = {q: sorted(by_row[rows[q]]) for q in queries}
        given: list[Given] = []
        clocks = {name: START + timedelta(minutes=10 * i) for i, name in enumerate(SHARES)}
        made = dict.fromkeys(SHARES, 0)
        for annotator, query, passage, grade in _plan(pools):
            at = clocks[annotator]
            record(
                project,
                GradeEvent(
                    query=query,
                    passage=passage,
                    annotator=annotator,
                    grade=grade,
                    origin="app",
                    graded_at=at.isoformat(timespec="milliseconds"),
                ),
            )
            given.append(Given(annotator, query, passage, grade, at))
            gap = GAPS[made[annotator] % len(GAPS)] * SPEED[annotator]
            clocks[annotator] = at + timedelta(seconds=gap)
            made[annotator] += 1
        # The lead settles bob's and alice's widest disagreement on q21.
        settled = ("q21", pools["q21"][0], 3)
        adjudicate(project, *settled[:2], LEAD, settled[2])
    return Team(path, pools, given, settled)


# -- what raglabel progress should say, computed here on its own --------------------------


def _imported_pairs() -> int:
    """The demo's grades of ann: every qrels line of its first 20 queries, one a pair."""
    demo = Path(__file__).resolve().parents[1] / "fixtures" / "demo"
    first = [json.loads(line)["id"] for line in (demo / "queries.jsonl").open()][:20]
    pairs = set()
    for line in (demo / "qrels.txt").read_text().splitlines():
        qid, _, pid, _ = line.split()
        if qid in first:
            pairs.add((qid, pid))
    return len(pairs)


def _pace(times: list[datetime]) -> tuple[float | None, float | None]:
    """(grades per hour, median active seconds), by the definition written out: the gaps
    between consecutive times, those over 300 s left out as breaks."""
    gaps = np.diff(np.sort([moment.timestamp() for moment in times]))
    work = gaps[gaps <= 300]
    if not work.size:
        return None, None
    return work.size / (work.sum() / 3600), float(np.median(work))


def _alpha(a: dict[tuple[str, str], int], b: dict[tuple[str, str], int]) -> float | None:
    """The krippendorff package's ordinal alpha on the pairs both graded."""
    shared = sorted(set(a) & set(b))
    if len(shared) < 2:
        return None
    data = np.array([[a[p] for p in shared], [b[p] for p in shared]], dtype=float)
    if len(np.unique(data)) < 2:
        return None  # no variation: alpha is 0/0
    return float(
        krippendorff.alpha(
            reliability_data=data, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5]
        )
    )


def expected(team: Team, depth: int = DEPTH) -> dict[str, Any]:
    """The document ``raglabel progress --format json --depth DEPTH`` should print for
    ``team``, from :attr:`Team.given` alone (only DEPTH's pools are known here)."""
    assert depth == DEPTH
    query, passage, final = team.settled
    standing = {name: team.standing(name) for name in SHARES}
    standing[LEAD] = {(query, passage): final}
    done = {
        name: {q for q in qs if all((q, p) in standing[name] for p in team.pools[q])}
        for name, qs in SHARES.items()
    }
    names = sorted([*SHARES, IMPORTER, LEAD])
    annotators = {}
    for name in names:
        per_hour, median = _pace(team.times(name)) if name in SHARES else (None, None)
        grades = _imported_pairs() if name == IMPORTER else len(standing[name])
        annotators[name] = {
            "assigned": len(SHARES.get(name, [])),
            "done": len(done.get(name, set())),
            "grades": grades,
            "grades_per_hour": per_hour,
            "median_active_s": median,
            "alpha_with": {
                other: _alpha(standing.get(name, {}), standing.get(other, {}))
                for other in names
                if other != name
            },
        }
    queries = {
        q: {
            "assigned": sum(q in qs for qs in SHARES.values()),
            "done": sum(q in done[name] for name in SHARES),
        }
        for q in sorted(team.pools)
    }
    # Pairs two of the three graded more than one grade apart, but the one the lead settled.
    pairs = {p for name in SHARES for p in standing[name]}
    wide = {
        p
        for p in pairs
        if (grades := [standing[n][p] for n in SHARES if p in standing[n]])
        and max(grades) - min(grades) > 1
    }
    return {
        "annotators": annotators,
        "queries": queries,
        "to_adjudicate": len(wide - {(query, passage)}),
    }


def assert_close(got: object, want: object, where: str = "") -> None:
    """``got == want``, floats to 1e-9 (they are computed two ways), naming the place
    of the first difference."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), where
        for key, value in want.items():
            assert_close(got[key], value, f"{where}/{key}")
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-9), where
    else:
        assert got == want, where
