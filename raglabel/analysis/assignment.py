"""The plan of ``raglabel assign``: which annotators grade which queries (issue 30).

Each of this assign's queries goes to ``overlap`` distinct annotators, balanced by the
*pairs to grade* (a query's pool to the depth, not a count of queries): largest query
first, each onto the least-loaded annotators not on it yet, ties broken by a generator
seeded with the assign's seed, so the same seed over the same project gives the same
plan. Given loads that start equal, this keeps every two annotators' pairs within one
query's pool of each other: the annotators a query goes to had no more pairs than any
that it skipped, and gain at most that query's pool.

Assigning again builds on what is stored. A share the annotator has *started* (holds a
grade of their own on the query) stays theirs whatever this assign asks: it counts
towards its query's overlap and its annotator's load, even where that leaves a query
above the overlap or the annotator out of ``--annotators``. So does a query of this
assign that an annotator of ``--annotators`` graded with no share of it (before any
assign, say): it becomes their started share. Every share not started is planned anew:
its old holder keeps it, the places left are filled as above, and then shares move one
at a time from a more loaded annotator to one more than a query's pool below, so that
a plan moves only what balance asks for (adding an annotator moves about their part of
the load). That plan is taken when its loads are within one query's pool of the plain
greedy's (always, without started shares); else the greedy's, the old holder winning a
tie of load. The plan says what it kept, took and gave, and why: a share taken from
a query that keeps as many annotators moved for balance; from one left with fewer,
the overlap went down, or else the query was above it while more had started it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from raglabel.errors import UsageError
from raglabel.storage.annotators import annotator_names, refuse_names
from raglabel.storage.assignments import assigned, graded_by, pool_sizes, started
from raglabel.storage.assignments import overlap as last_overlap
from raglabel.storage.audit import covered_queries, draw_order, drawn_rows

#: Why an annotator keeps a share, or loses one.
STARTED = "started"  # they graded some of it: an assign never takes begun work away
BEFORE = "started before assigning"  # they graded some of it with no share of it
HELD = "held"  # not started, and still theirs in the new plan
OUTSIDE = "not among this assign's queries"
DROPPED_ANNOTATOR = "annotator not in --annotators"
REBALANCED = "not started; given to another annotator to balance the pairs"
OVERLAP_DOWN = "not started; the overlap went down, so the query has fewer annotators"
#: A query above the overlap before (started by more), no longer: grades cleared since.
ABOVE_NO_MORE = "not started; the query was above the overlap, and is no longer"


@dataclass(frozen=True)
class Request:
    """What ``raglabel assign`` was asked."""

    annotators: tuple[str, ...]
    overlap: int
    seed: int
    depth: int
    queries: int | None = None  # --queries N: that many of the covered queries
    audit: bool = False  # --audit: the audit sample's queries


@dataclass(frozen=True)
class Share:
    """One (annotator, query) of the plan or of the assignment before it."""

    annotator: str
    query: str
    why: str = ""


@dataclass(frozen=True)
class Plan:
    """The assignment an assign records, and how it differs from the one before."""

    request: Request
    queries: tuple[str, ...]  # this assign's queries, in serving order
    shares: dict[str, list[str]]  # every annotator's queries in serving order
    pairs: dict[str, int]  # pairs to grade in each annotator's share
    created: tuple[str, ...]  # annotators new to the project
    added: tuple[Share, ...]  # shares the assignment before lacked (``adopted`` too)
    kept: tuple[Share, ...]  # shares the assignment before had, still there (why: STARTED or HELD)
    taken: tuple[Share, ...]  # shares the assignment before had, gone (why: the reason)
    above: tuple[str, ...] = field(default=())  # queries over the overlap: started by more
    #: Of ``added``, those its annotator had started with no share of it (why: BEFORE).
    adopted: tuple[Share, ...] = field(default=())


def plan(conn: sqlite3.Connection, request: Request) -> Plan:
    """The plan for ``request`` over the project as stored; reads only."""
    annotators = tuple(sorted(set(request.annotators)))
    if not annotators:
        raise UsageError("--annotators: name at least one annotator")
    if not 1 <= request.overlap <= len(annotators):
        raise UsageError(
            f"--overlap {request.overlap}: give each query to 1 to {len(annotators)}"
            f" annotators (as many as --annotators names)"
        )
    if request.seed < 0:
        raise UsageError(f"--seed {request.seed}: a seed is a whole number from 0")
    refuse_names(conn, annotators)
    before = assigned(conn)
    begun = started(conn)
    # Work begun without a share (before the first assign, or on someone else's query)
    # is begun work all the same: a plan that gave it to others would grade it twice,
    # and --queries N takes such queries first, as it takes queries begun on a share.
    graded = graded_by(conn, annotators)
    queries = _selection(conn, request, before, begun | graded)
    involved = {q for qids in before.values() for q in qids} | set(queries)
    sizes = pool_sizes(conn, involved, request.depth)
    fixed = {name: [q for q in qids if (name, q) in begun] for name, qids in before.items()}
    adopted = [(name, q) for q in queries for name in annotators if (name, q) in graded]
    adopted = [(name, q) for name, q in adopted if q not in before.get(name, ())]
    for name, q in adopted:
        fixed.setdefault(name, []).append(q)
    held = {
        name: {q for q in qids if (name, q) not in begun}
        for name, qids in before.items()
        if name in annotators
    }
    shares = share_out(
        queries,
        sizes,
        annotators,
        request.overlap,
        request.seed,
        started={name: qids for name, qids in fixed.items() if qids},
        held=held,
    )
    return _compare(
        conn,
        request,
        queries=tuple(queries),
        shares=shares,
        before=before,
        begun=begun,
        sizes=sizes,
        adopted=adopted,
    )


def share_out(
    queries: Sequence[str],
    sizes: Mapping[str, int],
    annotators: Sequence[str],
    overlap: int,
    seed: int,
    *,
    started: Mapping[str, Sequence[str]] | None = None,
    held: Mapping[str, Collection[str]] | None = None,
) -> dict[str, list[str]]:
    """Give each of ``queries`` (in serving order) to ``overlap`` distinct annotators,
    balancing the pairs to grade (``sizes``: each query's pool).

    ``started``: shares that stay whatever happens (annotator -> queries, in their order),
    counted towards their query's overlap and their annotator's load; their annotators
    need not be among ``annotators``. ``held``: shares not started that each annotator had:
    kept where balance allows (:func:`_held_first`), else preferred on a tie of load.
    Returns every annotator's share, ``started`` ones first in their order, then the
    others in ``queries``' order (an annotator of ``annotators`` given nothing gets an
    empty list).
    """
    names = sorted(set(annotators))
    if not 1 <= overlap <= len(names):
        raise ValueError(f"overlap {overlap} is outside 1..{len(names)}")
    started = started or {}
    held = held or {}
    spread = _Spread(queries, sizes, names, started)
    given = _greedy(spread, overlap, seed, held)
    if any(held.values()):
        kept = _held_first(spread, overlap, seed, held)
        # Kept where the loads stay within one query's pool of the greedy's balance:
        # always so without started shares (both end within one pool of even), and
        # with them, which can leave loads apart that no plan evens out, so the greedy
        # is not beaten by more than one pool.
        if spread.gap(kept) <= spread.gap(given) + spread.bound:
            given = kept
    shares: dict[str, list[str]] = {}
    for name in sorted(set(names) | set(started)):
        first = list(started.get(name, ()))
        fresh = given.get(name, set())
        shares[name] = first + [q for q in queries if q in fresh and q not in first]
    return shares


@dataclass(frozen=True)
class _Spread:
    """What both ways of sharing out start from: the queries, their pools, the
    annotators, and the shares that stay (``started``)."""

    queries: Sequence[str]
    sizes: Mapping[str, int]
    names: list[str]
    started: Mapping[str, Sequence[str]]

    @property
    def bound(self) -> int:
        """The balance a plan keeps from loads that start equal: one query's pool."""
        return max((self.sizes[q] for q in self.queries), default=0)

    def start(self) -> tuple[dict[str, int], dict[str, set[str]]]:
        """Each annotator's load, and each query's annotators, from the started shares."""
        load = dict.fromkeys(self.names, 0)
        on: dict[str, set[str]] = {q: set() for q in self.queries}
        for name, qids in self.started.items():
            load[name] = load.get(name, 0) + sum(self.sizes.get(q, 0) for q in qids)
            for q in qids:
                on.setdefault(q, set()).add(name)
        return load, on

    def loads(self, given: Mapping[str, set[str]]) -> dict[str, int]:
        load, _ = self.start()
        for name, qids in given.items():
            load[name] += sum(self.sizes[q] for q in qids)
        return load

    def gap(self, given: Mapping[str, set[str]]) -> int:
        """The pairs between the most and the least loaded annotator of the assign."""
        load = self.loads(given)
        return max(load[n] for n in self.names) - min(load[n] for n in self.names)

    def largest_first(self, rng: np.random.Generator) -> list[str]:
        """Largest pool first (the greedy's classic order), a tie by the seeded draw."""
        keys = rng.random(len(self.queries))
        order = sorted(
            range(len(self.queries)), key=lambda i: (-self.sizes[self.queries[i]], keys[i])
        )
        return [self.queries[i] for i in order]


def _greedy(
    spread: _Spread, overlap: int, seed: int, held: Mapping[str, Collection[str]]
) -> dict[str, set[str]]:
    """Each query, largest first, onto the least-loaded annotators not on it yet, an old
    holder winning a tie of load; what each annotator is given."""
    names = spread.names
    rng = np.random.default_rng(seed)
    load, on = spread.start()
    given: dict[str, set[str]] = {name: set() for name in names}
    for q in spread.largest_first(rng):
        need = overlap - len(on[q])
        if need <= 0:
            continue
        ties = rng.random(len(names))
        free = [j for j, name in enumerate(names) if name not in on[q]]
        free.sort(key=lambda j: (load[names[j]], q not in held.get(names[j], ()), ties[j]))
        for j in free[:need]:
            name = names[j]
            given[name].add(q)
            on[q].add(name)
            load[name] += spread.sizes[q]
    return given


def _held_first(
    spread: _Spread, overlap: int, seed: int, held: Mapping[str, Collection[str]]
) -> dict[str, set[str]]:
    """A re-plan that moves few shares: every old holder keeps their share (up to the
    overlap, the least loaded first), the greedy fills the places left, and then, while
    two annotators' loads are more than one query's pool apart, one share moves from the
    more loaded to the less loaded, the one that evens the two out best. A move narrows
    the gap between them and so lowers the sum of squared loads: the moves end, and with
    no started share they end within the bound (the more loaded always holds a query the
    other lacks). Only balance moves a share, so a plan adding an annotator moves about
    what the newcomer's part of the load asks, not a new greedy's reshuffle."""
    names = spread.names
    sizes = spread.sizes
    rng = np.random.default_rng(seed)
    load, on = spread.start()
    given: dict[str, set[str]] = {name: set() for name in names}
    order = spread.largest_first(rng)

    def give(name: str, q: str) -> None:
        given[name].add(q)
        on[q].add(name)
        load[name] += sizes[q]

    for keeping in (True, False):
        for q in order:
            need = overlap - len(on[q])
            if need <= 0:
                continue
            ties = rng.random(len(names))
            free = [
                j
                for j, name in enumerate(names)
                if name not in on[q] and (not keeping or q in held.get(name, ()))
            ]
            free.sort(key=lambda j: (load[names[j]], ties[j]))
            for j in free[:need]:
                give(names[j], q)
    position = {q: i for i, q in enumerate(spread.queries)}
    while True:
        move = _evening_move(spread, load, on, given, position)
        if move is None:
            return given
        heavy, light, q = move
        given[heavy].discard(q)
        on[q].discard(heavy)
        load[heavy] -= sizes[q]
        give(light, q)


def _evening_move(
    spread: _Spread,
    load: Mapping[str, int],
    on: Mapping[str, set[str]],
    given: Mapping[str, set[str]],
    position: Mapping[str, int],
) -> tuple[str, str, str] | None:
    """The next share to move: from the most loaded annotator that has one to give to
    a less loaded one more than one query's pool below, the query whose pool is nearest
    half their gap (the earliest served on a tie); None when no two are that far apart."""
    sizes = spread.sizes
    bound = spread.bound
    ranked = sorted(spread.names, key=lambda n: (load[n], n))
    for heavy in reversed(ranked):
        for light in ranked:
            gap = load[heavy] - load[light]
            if gap <= bound:
                break
            movable = [q for q in given[heavy] if sizes[q] > 0 and light not in on[q]]
            if movable:
                q = min(movable, key=lambda q: (abs(gap - 2 * sizes[q]), position[q]))
                return heavy, light, q
    return None


def _selection(
    conn: sqlite3.Connection,
    request: Request,
    before: Mapping[str, Sequence[str]],
    begun: Collection[tuple[str, str]],
) -> list[str]:
    """This assign's queries in serving order: the audit sample's (draw order), N of the
    covered ones, or every covered one (the order the seed draws them)."""
    covered = covered_queries(conn)
    if not covered:
        raise UsageError(
            "no stored run covers any query: import runs first (raglabel import DB --run ...)"
        )
    if request.audit:
        drawn = [qid for _, qid in drawn_rows(conn)]
        if not drawn:
            raise UsageError(
                "--audit: the project has no audit sample yet; draw one first with"
                " raglabel audit DB --sample N"
            )
        known = set(covered)
        queries = [qid for qid in drawn if qid in known]
        if not queries:
            raise UsageError(
                "--audit: no stored run covers any query of the audit sample any more;"
                " draw more with raglabel audit DB --sample N"
            )
        return queries
    ordered = draw_order(covered, request.seed)
    if request.queries is None:
        return ordered
    if request.queries > len(covered):
        raise UsageError(
            f"--queries {request.queries}: the stored runs cover only {len(covered)} queries"
        )
    # Assigning again extends: queries someone began come first (on a share, or graded
    # by one of --annotators before any share), then those assigned before, then new
    # ones in the seed's draw order.
    assigned_before = {q for qids in before.values() for q in qids}
    begun_queries = {q for _, q in begun}
    rank = {q: i for i, q in enumerate(ordered)}
    ordered.sort(key=lambda q: (q not in begun_queries, q not in assigned_before, rank[q]))
    return ordered[: request.queries]


def _compare(
    conn: sqlite3.Connection,
    request: Request,
    *,
    queries: tuple[str, ...],
    shares: dict[str, list[str]],
    before: Mapping[str, Sequence[str]],
    begun: Collection[tuple[str, str]],
    sizes: Mapping[str, int],
    adopted: Sequence[tuple[str, str]],
) -> Plan:
    old = {(name, q) for name, qids in before.items() for q in qids}
    new = {(name, q) for name, qids in shares.items() for q in qids}
    chosen = set(queries)
    added = [Share(n, q) for n, qids in shares.items() for q in qids if (n, q) not in old]
    kept = [
        Share(n, q, STARTED if (n, q) in begun else HELD)
        for n, qids in before.items()
        for q in qids
        if (n, q) in new
    ]
    holders: dict[str, int] = {}
    for _, q in new:
        holders[q] = holders.get(q, 0) + 1
    held_before: dict[str, int] = {}
    for _, q in old:
        held_before[q] = held_before.get(q, 0) + 1
    last = last_overlap(conn)
    taken = []
    for name, qids in before.items():
        for q in qids:
            if (name, q) in new:
                continue
            if q not in chosen:
                why = OUTSIDE
            elif name not in request.annotators:
                why = DROPPED_ANNOTATOR
            elif holders.get(q, 0) >= held_before[q]:
                why = REBALANCED  # as many places as before: the share moved
            elif last is not None and request.overlap < last:
                why = OVERLAP_DOWN
            else:
                why = ABOVE_NO_MORE
            taken.append(Share(name, q, why))
    known = set(annotator_names(conn))
    return Plan(
        request=request,
        queries=queries,
        shares=shares,
        pairs={name: sum(sizes.get(q, 0) for q in qids) for name, qids in shares.items()},
        created=tuple(name for name in sorted(shares) if name not in known),
        added=tuple(added),
        kept=tuple(kept),
        taken=tuple(taken),
        above=tuple(sorted(q for q, count in holders.items() if count > request.overlap)),
        adopted=tuple(Share(name, q, BEFORE) for name, q in adopted),
    )
