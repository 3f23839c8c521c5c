"""The plan of ``raglabel assign`` (issue 30): every query to exactly ``overlap``
distinct annotators, pairs to grade balanced within one query's pool, the same seed the
same plan; assigning again keeps begun work and says what it kept, took and gave.

The property tests draw their instances from a generator with a fixed seed, so a failure
is reproducible."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from raglabel.analysis.assignment import (
    ABOVE_NO_MORE,
    BEFORE,
    DROPPED_ANNOTATOR,
    HELD,
    OUTSIDE,
    OVERLAP_DOWN,
    REBALANCED,
    STARTED,
    Plan,
    Request,
    _greedy,
    _Spread,
    plan,
    share_out,
)
from raglabel.errors import UsageError
from raglabel.storage.assignments import assigned, pool_sizes, record
from raglabel.storage.audit import covered_queries, draw, draw_order
from raglabel.storage.grades import GradeEvent
from raglabel.storage.grades import record as record_grade
from raglabel.storage.importer import ImportRequest, run_import
from raglabel.storage.project import Project

NAMES = ["ann", "bea", "cal", "dov", "eli", "fay"]


def holders(shares: dict[str, list[str]]) -> Counter[str]:
    return Counter(q for qids in shares.values() for q in qids)


def loads(shares: dict[str, list[str]], sizes: dict[str, int]) -> dict[str, int]:
    return {name: sum(sizes[q] for q in qids) for name, qids in shares.items()}


def instances(count: int) -> Iterator[tuple[list[str], dict[str, int], list[str], int, int]]:
    """Random (queries, pool sizes, annotators, overlap, seed), from a fixed generator."""
    rng = np.random.default_rng(20261128)
    for _ in range(count):
        n_queries = int(rng.integers(1, 60))
        queries = [f"q{i:03d}" for i in rng.permutation(n_queries)]
        sizes = {q: int(rng.integers(1, 120)) for q in queries}
        annotators = NAMES[: int(rng.integers(1, len(NAMES) + 1))]
        overlap = int(rng.integers(1, len(annotators) + 1))
        yield queries, sizes, annotators, overlap, int(rng.integers(0, 2**32))


# -- the greedy alone ------------------------------------------------------------------


def test_every_query_goes_to_exactly_overlap_distinct_annotators() -> None:
    for queries, sizes, annotators, overlap, seed in instances(300):
        shares = share_out(queries, sizes, annotators, overlap, seed)
        assert sorted(shares) == sorted(annotators)
        for qids in shares.values():
            assert len(qids) == len(set(qids))  # distinct within a share
        assert holders(shares) == dict.fromkeys(queries, overlap)


def test_pairs_to_grade_stay_within_one_querys_pool_of_each_other() -> None:
    for queries, sizes, annotators, overlap, seed in instances(300):
        load = loads(share_out(queries, sizes, annotators, overlap, seed), sizes)
        assert max(load.values()) - min(load.values()) <= max(sizes.values()), (load, sizes)


def test_the_balance_is_by_pairs_not_by_query_count() -> None:
    # One big query and ten small ones between two annotators, one each: the big one's
    # annotator gets few queries, the other many.
    sizes = {"big": 100, **{f"s{i}": 10 for i in range(10)}}
    shares = share_out(list(sizes), sizes, ["ann", "bea"], 1, seed=5)
    load = loads(shares, sizes)
    assert sorted(load.values()) == [100, 100]
    assert sorted(len(qids) for qids in shares.values()) == [1, 10]


def test_a_seed_reproduces_the_plan_and_shares_follow_the_query_order() -> None:
    for queries, sizes, annotators, overlap, seed in instances(50):
        first = share_out(queries, sizes, annotators, overlap, seed)
        assert share_out(queries, sizes, list(reversed(annotators)), overlap, seed) == first
        for qids in first.values():
            assert qids == [q for q in queries if q in qids]
    # Ties of load are broken by the seed: equal pools among many annotators differ.
    sizes = {f"q{i}": 5 for i in range(12)}
    plans = {
        tuple(tuple(v) for v in share_out(list(sizes), sizes, NAMES, 2, seed).values())
        for seed in range(10)
    }
    assert len(plans) > 1


def test_started_shares_stay_and_count_towards_overlap_and_load() -> None:
    rng = np.random.default_rng(7)
    for queries, sizes, annotators, overlap, seed in instances(200):
        # Some annotators (one outside the list, "zed") began some queries.
        started: dict[str, list[str]] = {}
        for name in [*annotators, "zed"]:
            picked = [q for q in queries if rng.random() < 0.15]
            if picked:
                started[name] = picked
        held = {name: {q for q in queries if rng.random() < 0.3} for name in annotators}
        shares = share_out(queries, sizes, annotators, overlap, seed, started=started, held=held)
        for name, qids in started.items():
            assert shares[name][: len(qids)] == qids  # kept, and served first
        began = holders(started)
        count = holders(shares)
        for q in queries:
            assert count[q] == max(overlap, began[q])
        for qids in shares.values():
            assert len(qids) == len(set(qids))


def test_an_old_holder_wins_a_tie_of_load() -> None:
    for seed in range(20):
        shares = share_out(["q1"], {"q1": 4}, ["ann", "bea", "cal"], 2, seed, held={"bea": {"q1"}})
        assert shares["bea"] == ["q1"]
    # Beyond a tie, balance wins: ann holds both, yet the second goes to bea.
    shares = share_out(
        ["q1", "q2"], {"q1": 4, "q2": 4}, ["ann", "bea"], 1, 3, held={"ann": {"q1", "q2"}}
    )
    assert sorted(len(qids) for qids in shares.values()) == [1, 1]


def moved(held: dict[str, set[str]], shares: dict[str, list[str]]) -> int:
    """Shares an annotator held and the plan no longer gives them."""
    return sum(len(qids - set(shares.get(name, []))) for name, qids in held.items())


def test_adding_an_annotator_moves_only_what_balance_asks() -> None:
    # 30 queries of 10 pairs, twice each among three: 20 queries each. A fourth brings
    # the balance to 15 each: it takes 15 moves at least, and the re-plan makes just
    # those (a fresh greedy with the old holder winning ties only moved 17 here).
    sizes = {f"q{i:02d}": 10 for i in range(30)}
    queries = list(sizes)
    first = share_out(queries, sizes, ["ann", "bea", "cal"], 2, seed=1)
    held = {name: set(qids) for name, qids in first.items()}
    again = share_out(queries, sizes, ["ann", "bea", "cal", "dov"], 2, seed=1, held=held)
    assert moved(held, again) == 15
    assert sorted(len(qids) for qids in again.values()) == [15, 15, 15, 15]
    assert holders(again) == dict.fromkeys(queries, 2)


def test_a_replan_keeps_old_holders_without_losing_exactness_or_balance() -> None:
    """Property test: a plan, then a re-plan over other annotators and another overlap
    holding it: every query still goes to exactly ``overlap`` annotators, loads stay
    within one query's pool, and no more shares move than under the plain greedy with
    the old holder winning ties (the plan before this change)."""
    rng = np.random.default_rng(99)
    for queries, sizes, annotators, overlap, seed in instances(200):
        prior = share_out(queries, sizes, annotators, overlap, seed)
        names = sorted(rng.choice(NAMES, size=int(rng.integers(1, 7)), replace=False).tolist())
        again_overlap = int(rng.integers(1, len(names) + 1))
        held = {name: set(prior.get(name, [])) for name in names}
        again = share_out(queries, sizes, names, again_overlap, seed + 1, held=held)
        assert holders(again) == dict.fromkeys(queries, again_overlap)
        load = loads(again, sizes)
        assert max(load.values()) - min(load.values()) <= max(sizes.values())
        plain = _greedy(_Spread(queries, sizes, names, {}), again_overlap, seed + 1, held)
        plain_shares = {name: sorted(qids) for name, qids in plain.items()}
        assert moved(held, again) <= moved(held, plain_shares)


def test_an_overlap_outside_the_annotators_is_an_error() -> None:
    with pytest.raises(ValueError, match="overlap 3"):
        share_out(["q1"], {"q1": 1}, ["ann", "bea"], 3, seed=1)


# -- a plan over a project ---------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    """40 queries, 36 covered by three runs of random lengths (pools of 3 to 30 pairs)."""
    rng = np.random.default_rng(11)
    queries = tmp_path / "queries.tsv"
    queries.write_text("".join(f"q{i:02d}\tquestion {i}\n" for i in range(40)))
    runs = []
    for run in ("x", "y", "z"):
        path = tmp_path / f"{run}.run"
        lines = []
        for i in range(36):
            qid = f"q{i:02d}"
            shared = [f"{qid}-s{j}" for j in range(int(rng.integers(1, 4)))]
            own = [f"{qid}-{run}{j}" for j in range(int(rng.integers(2, 10)))]
            for rank, doc in enumerate(shared + own, 1):
                lines.append(f"{qid} Q0 {doc} {rank} {100 - rank} {run}\n")
        path.write_text("".join(lines))
        runs.append((run, path))
    with Project.create(tmp_path / "p.db") as created:
        run_import(created, ImportRequest(queries=queries, runs=runs))
        yield created


def grade_one(project: Project, who: str, qid: str) -> None:
    passage = (
        f"{qid}-x0"
        if project.conn.execute("SELECT 1 FROM passage WHERE ext_id = ?", (f"{qid}-x0",)).fetchone()
        else f"{qid}-s0"
    )
    record_grade(project, GradeEvent(query=qid, passage=passage, annotator=who, grade=2))


def apply(project: Project, made: Plan) -> None:
    record(
        project,
        made.shares,
        overlap=made.request.overlap,
        seed=made.request.seed,
        audit=made.request.audit,
    )


def test_a_first_plan_covers_every_covered_query_balanced(project: Project) -> None:
    conn = project.conn
    made = plan(conn, Request(("ann", "bea", "cal"), overlap=2, seed=3, depth=20))
    covered = covered_queries(conn)
    assert sorted(made.queries) == covered
    assert made.queries == tuple(draw_order(covered, 3))
    assert holders(made.shares) == dict.fromkeys(covered, 2)
    sizes = pool_sizes(conn, covered, 20)
    assert made.pairs == loads(made.shares, sizes)
    assert max(made.pairs.values()) - min(made.pairs.values()) <= max(sizes.values())
    assert made.created == ("ann", "bea", "cal")
    assert len(made.added) == 72 and not made.kept and not made.taken
    # Planning reads only: nothing is stored until record.
    assert assigned(conn) == {}
    assert plan(conn, Request(("cal", "ann", "bea"), overlap=2, seed=3, depth=20)) == Plan(
        **{**made.__dict__, "request": Request(("cal", "ann", "bea"), 2, 3, 20)}
    )


def test_the_depth_sets_the_pairs_balanced(project: Project) -> None:
    shallow = plan(project.conn, Request(("ann", "bea"), overlap=1, seed=3, depth=2))
    sizes = pool_sizes(project.conn, shallow.queries, 2)
    assert max(sizes.values()) <= 2 * 3
    assert shallow.pairs == loads(shallow.shares, sizes)


def test_queries_n_extends_what_was_assigned_before(project: Project) -> None:
    conn = project.conn
    first = plan(conn, Request(("ann", "bea"), overlap=1, seed=4, depth=20, queries=10))
    apply(project, first)
    # Another seed draws other new queries, yet the ten assigned come first.
    second = plan(conn, Request(("ann", "bea"), overlap=1, seed=99, depth=20, queries=15))
    assert set(first.queries) < set(second.queries)
    assert len(second.queries) == 15
    with pytest.raises(UsageError, match="--queries 37: the stored runs cover only 36"):
        plan(conn, Request(("ann",), overlap=1, seed=4, depth=20, queries=37))


def test_queries_n_takes_queries_graded_before_any_assign_first(project: Project) -> None:
    conn = project.conn
    undrawn = plan(conn, Request(("ann", "bea"), overlap=1, seed=4, depth=20, queries=5))
    # Three queries the seed would not draw among its first five, graded before anyone
    # assigned anything: one by ann, one by bea, one by someone not being assigned.
    others = [q for q in draw_order(covered_queries(conn), 4) if q not in undrawn.queries]
    grade_one(project, "ann", others[0])
    grade_one(project, "bea", others[1])
    grade_one(project, "cy", others[2])
    made = plan(conn, Request(("ann", "bea"), overlap=1, seed=4, depth=20, queries=5))
    assert set(made.queries[:2]) == {others[0], others[1]}  # begun work first
    assert others[2] not in made.queries  # cy is not being assigned: no begun work of theirs
    assert made.queries[2:] == undrawn.queries[:3]
    assert others[0] in made.shares["ann"] and others[1] in made.shares["bea"]


def test_audit_takes_the_audit_samples_queries_in_draw_order(project: Project) -> None:
    conn = project.conn
    with pytest.raises(UsageError, match=r"raglabel audit DB --sample N"):
        plan(conn, Request(("ann", "bea"), overlap=2, seed=1, depth=20, audit=True))
    drawn = draw(project, 8, seed=21).draw.drawn
    made = plan(conn, Request(("ann", "bea"), overlap=2, seed=1, depth=20, audit=True))
    assert made.queries == drawn
    assert made.shares == {"ann": list(drawn), "bea": list(drawn)}


@pytest.mark.parametrize(
    ("annotators", "overlap", "message"),
    [
        ((), 1, "name at least one annotator"),
        (("ann", "bea"), 3, "--overlap 3: give each query to 1 to 2 annotators"),
        (("ann", "judge"), 1, "annotator 'judge'"),
    ],
)
def test_a_bad_request_is_refused(
    project: Project, annotators: tuple[str, ...], overlap: int, message: str
) -> None:
    with pytest.raises(UsageError, match=message.replace("(", r"\(")):
        plan(project.conn, Request(annotators, overlap=overlap, seed=1, depth=20))


def test_no_covered_query_is_an_error(tmp_path: Path) -> None:
    with (
        Project.create(tmp_path / "empty.db") as empty,
        pytest.raises(UsageError, match="no stored run covers any query"),
    ):
        plan(empty.conn, Request(("ann",), overlap=1, seed=1, depth=20))


def test_assigning_again_keeps_begun_work_whatever_it_asks(project: Project) -> None:
    """Property test: random rounds of grading and re-assigning (annotators, overlap,
    queries and seed changing); no started share is ever lost, each query of the assign
    has max(overlap, started) annotators, and the plan's account adds up."""
    conn = project.conn
    rng = np.random.default_rng(2026)
    last: int | None = None  # the overlap of the assign before
    for _ in range(12):
        names = tuple(rng.choice(NAMES, size=int(rng.integers(1, 6)), replace=False).tolist())
        overlap = int(rng.integers(1, len(names) + 1))
        count = int(rng.integers(1, 37)) if rng.random() < 0.5 else None
        before = assigned(conn)
        old = {(n, q) for n, qids in before.items() for q in qids}
        # Someone starts a few of their queries.
        for name, qids in before.items():
            for q in qids:
                if rng.random() < 0.2:
                    grade_one(project, name, q)
        begun = {(n, q) for n, q in old if _has_grade(project, n, q)}
        request = Request(names, overlap, int(rng.integers(0, 1000)), 20, queries=count)
        made = plan(conn, request)
        new = {(n, q) for n, qids in made.shares.items() for q in qids}
        assert begun <= new
        count_of = holders(made.shares)
        began = Counter(q for _, q in begun)
        for q in made.queries:
            assert count_of[q] == max(overlap, began[q])
        assert {(s.annotator, s.query) for s in made.kept} == old & new
        assert {(s.annotator, s.query) for s in made.taken} == old - new
        assert {(s.annotator, s.query) for s in made.added} == new - old
        assert {(s.annotator, s.query) for s in made.kept if s.why == STARTED} == begun
        assert all(s.why == HELD for s in made.kept if (s.annotator, s.query) not in begun)
        had = Counter(q for _, q in old)
        for share in made.taken:
            assert (share.annotator, share.query) not in begun
            expected = (
                OUTSIDE
                if share.query not in made.queries
                else DROPPED_ANNOTATOR
                if share.annotator not in names
                else REBALANCED
                if count_of[share.query] >= had[share.query]
                else OVERLAP_DOWN
                if last is not None and overlap < last
                else ABOVE_NO_MORE
            )
            assert share.why == expected
        last = overlap
        apply(project, made)
        assert assigned(conn) == {n: q for n, q in made.shares.items() if q}


def test_an_overlap_lowered_leaves_started_queries_above_it(project: Project) -> None:
    conn = project.conn
    first = plan(conn, Request(("ann", "bea", "cal"), overlap=3, seed=1, depth=20, queries=4))
    apply(project, first)
    q = first.queries[0]
    for name in ("ann", "bea", "cal"):
        grade_one(project, name, q)
    grade_one(project, "ann", first.queries[1])
    made = plan(conn, Request(("ann", "bea", "cal"), overlap=1, seed=1, depth=20, queries=4))
    assert made.above == (q,)
    assert holders(made.shares)[q] == 3
    assert holders(made.shares)[first.queries[1]] == 1
    assert "ann" in [n for n, qids in made.shares.items() if first.queries[1] in qids]
    # Every other query went down to one annotator: two unstarted shares taken from each
    # of the two nobody began, and from the one ann began; the lower overlap says why.
    assert {s.why for s in made.taken} == {OVERLAP_DOWN}
    assert len(made.taken) == 3 * 2


def _has_grade(project: Project, name: str, qid: str) -> bool:
    return (
        project.conn.execute(
            "SELECT 1 FROM current_grade c JOIN annotator a ON a.id = c.annotator_id"
            " JOIN query q ON q.id = c.query_id WHERE a.name = ? AND q.ext_id = ?",
            (name, qid),
        ).fetchone()
        is not None
    )


def test_a_first_assign_keeps_what_a_named_annotator_graded_before(project: Project) -> None:
    """Grades given before any assign (or on a query of someone else's share) are begun
    work: an annotator of --annotators keeps each graded query of the assign as a started
    share; an annotator left out keeps nothing by it."""
    conn = project.conn
    for q in ("q03", "q05", "q07"):
        grade_one(project, "ann", q)
    for name in ("bea", "cal"):
        grade_one(project, name, "q07")  # three began q07: above an overlap of 2
    grade_one(project, "dov", "q09")  # not among --annotators
    request = Request(("ann", "bea", "cal"), overlap=2, seed=5, depth=20)
    made = plan(conn, request)
    adopted = {(s.annotator, s.query) for s in made.adopted}
    assert adopted == {("ann", "q03"), ("ann", "q05"), *((n, "q07") for n in ("ann", "bea", "cal"))}
    assert {s.why for s in made.adopted} == {BEFORE}
    assert adopted <= {(s.annotator, s.query) for s in made.added}
    # Served first, in the assign's order, and counted towards the overlap.
    order = [q for q in made.queries if q in {"q03", "q05", "q07"}]
    assert made.shares["ann"][:3] == order
    count = holders(made.shares)
    assert count["q03"] == count["q05"] == 2 and count["q07"] == 3
    assert made.above == ("q07",)
    assert "dov" not in made.shares and count["q09"] == 2
    apply(project, made)
    # Stored, they are started shares like any other: the next assign keeps them.
    again = plan(conn, Request(("bea", "cal", "ann"), overlap=1, seed=9, depth=20))
    kept = {(s.annotator, s.query) for s in again.kept if s.why == STARTED}
    assert adopted <= kept and not again.adopted


def test_a_query_left_with_fewer_annotators_at_the_same_overlap_says_why(
    project: Project,
) -> None:
    conn = project.conn
    first = plan(conn, Request(("ann", "bea"), overlap=1, seed=2, depth=20, queries=3))
    apply(project, first)
    q = first.queries[0]
    holder = next(n for n, qids in first.shares.items() if q in qids)
    other = "bea" if holder == "ann" else "ann"
    # Both start q: above the overlap of 1, it is kept by both.
    grade_one(project, holder, q)
    grade_one(project, other, q)
    again = plan(conn, Request(("ann", "bea"), overlap=1, seed=2, depth=20, queries=3))
    apply(project, again)
    assert holders(again.shares)[q] == 2 and again.above == (q,)
    # The other's grade cleared: their share is no longer started, and q needs one.
    record_grade(
        project,
        GradeEvent(query=q, passage=_graded(project, other, q), annotator=other, kind="clear"),
    )
    made = plan(conn, Request(("ann", "bea"), overlap=1, seed=2, depth=20, queries=3))
    assert [(s.annotator, s.query, s.why) for s in made.taken] == [(other, q, ABOVE_NO_MORE)]


def _graded(project: Project, name: str, qid: str) -> str:
    row = project.conn.execute(
        "SELECT p.ext_id FROM current_grade c JOIN annotator a ON a.id = c.annotator_id"
        " JOIN query q ON q.id = c.query_id JOIN passage p ON p.id = c.passage_id"
        " WHERE a.name = ? AND q.ext_id = ?",
        (name, qid),
    ).fetchone()
    return str(row[0])
