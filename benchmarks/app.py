"""Time the grading app: keystroke to updated metrics panel, and start to first screen.

    python benchmarks/app.py [--grades 500] [--repeat 3] [--keep] [--profile FILE]

The `grading` dataset (1,000 queries x 100 passages x 10 runs) is imported into a project
once, its qrels under the annotator "bench", and reused while its stamp matches. Then:

1. Keystrokes, in this process: per session a fresh copy of the project, the app built by
   ``create_app`` and driven headless by Textual's Pilot (``run_test``), the first query's
   Grade screen opened, and ``--grades`` grade keys pressed among moves, query changes and
   undos. ``MetricsPanel.show``, ``GradingSession.grade`` and ``GradingSession.undo`` are
   wrapped (in this process only) to read ``time.perf_counter`` when they are entered and return; a
   keystroke's latency is the first panel update after the moment just before
   ``pilot.press``. Afterwards the project must hold exactly one event of origin 'app' per
   grade and undo key pressed.
2. Start-up, in child processes: a fresh interpreter that imports the app, builds it on a
   copy of the project and exits as soon as the Queries table has been painted and the
   event loop is free again (a key pressed earlier would wait until then); the wall clock
   is taken around the whole child. Beside it, as a reference point, the whole
   process of ``raglabel eval DB -k 5,10,20 --metrics set`` on the same project.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import os
import pstats
import random
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from common import (
    CommandError,
    add_grades,
    add_keep,
    add_repeat,
    make_parser,
    markdown_table,
    measure,
    parse,
    percentiles,
    print_goals,
    scratch_directory,
    spread,
    utc_stamp,
    versions,
    warm_page_cache,
)
from generate import Dataset, generate
from project import (
    GRADING,
    Bench,
    Line,
    checkpoint,
    file_bytes,
    measured_machine,
    remove_db,
    save_results,
)

ANNOTATOR = "bench"
TERMINAL = (160, 48)
DEFAULT_GRADES = 500
DEFAULT_REPEATS = 3

# The goals.
PANEL_P95_MS = 16.0
STARTUP_S = 1.5

# What the annotator presses. Grades skew low, as real pools are mostly weak passages.
GRADE_KEYS = {"1": 0.30, "2": 0.30, "3": 0.20, "4": 0.12, "5": 0.08}
MOVE_SHARE = 0.10  # a j/k before a grade: reading a neighbour first
DOWN_SHARE = 0.7  # of the moves, j
UNDO_SHARE = 0.03
GRADES_PER_QUERY = (15, 25)  # then `n`

EVAL_ARGS = ("-k", "5,10,20", "--metrics", "set")

# The synthetic corpus: text for every query and every passage a run or the qrels name.
# A real project has one, and the app's catalog needs a passage row for every ranked id
# (without it, load_catalog raises KeyError on the first id below the pool; --no-corpus
# shows it). Only pooled passages (a run's top POOL_DEPTH, or judged) are ever shown, so
# only they get passage-length text; the rest get one line, to keep the project small.
POOL_DEPTH = 20  # raglabel import's default --depth
CORPUS_SEED = 20261123
QUERY_WORDS = (5, 14)
SHOWN_WORDS = (30, 120)
TITLE_WORDS = (2, 6)
_WORDS = (
    "retrieval passage model index query answer source evidence claim table figure "
    "study result method dataset benchmark score rank relevance document section "
    "summary protein cell gene drug trial patient dose effect risk rate policy market "
    "price energy climate carbon water river city court law contract tax school student "
    "network protocol server cache memory latency storage engine compiler language the "
    "of and to in a is that for on with as by at from this which be are was it"
)
VOCABULARY = _WORDS.split()

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")

# The start-up child. Kept apart from this file, whose imports (numpy, polars via
# generate.py) would otherwise count as the app's.
STARTUP_CHILD = """\
import time
started = time.perf_counter()
import asyncio, json, os, sys
from pathlib import Path

before_import = time.perf_counter()
from raglabel.session.options import AppOptions
from raglabel.tui.app import create_app
from raglabel.tui.screens.queries import QueriesScreen
from raglabel.tui.widgets.query_table import QueryTable
imported = time.perf_counter()

marks = {}
ready = asyncio.Event()
mounted = QueriesScreen.on_mount
painted = QueryTable.render_lines


def on_mount(self):
    mounted(self)
    marks.setdefault("ready", time.perf_counter())
    marks["rows"] = self.query_one(QueryTable).row_count


def render_lines(self, crop):
    lines = painted(self, crop)
    if "ready" in marks and lines and "painted" not in marks:
        marks["painted"] = time.perf_counter()
        ready.set()
    return lines


QueriesScreen.on_mount = on_mount
QueryTable.render_lines = render_lines


async def main():
    app = create_app(AppOptions(project=Path(sys.argv[1]), annotator=sys.argv[2]))
    marks["built"] = time.perf_counter()
    size = (int(sys.argv[3]), int(sys.argv[4]))
    async with app.run_test(size=size):
        await asyncio.wait_for(ready.wait(), 60)
        # The app may still be busy after its first paint (filling the rest of the table);
        # this coroutine runs again only when the event loop is free, as a key would.
        marks["resumed"] = time.perf_counter()
        rows = app.screen.query_one(QueryTable).row_count
        out = {name: value - before_import for name, value in marks.items() if name != "rows"}
        out.update(rows=marks["rows"], rows_resumed=rows, imported=imported - before_import,
                   interpreter=before_import - started)
        sys.stdout.write(json.dumps(out) + "\\n")
        sys.stdout.flush()
        # Now, not after closing the app: tearing down is not part of starting.
        os._exit(0)


asyncio.run(main())
"""


# -- the project -----------------------------------------------------------------------


def _words(rng: random.Random, bounds: tuple[int, int]) -> str:
    return " ".join(rng.choices(VOCABULARY, k=rng.randint(*bounds)))


def write_corpus(ds: Dataset, directory: Path) -> tuple[Path, Path]:
    """Queries (TSV) and passages (JSONL) for every id in the dataset; deterministic."""
    queries: dict[str, None] = {}
    shown: set[str] = set()
    everything: dict[str, None] = {}
    for run in ds.runs.values():
        with run.open() as handle:
            for line in handle:
                qid, _, docid, rank, _ = line.split(" ", 4)
                queries[qid] = None
                everything[docid] = None
                if int(rank) <= POOL_DEPTH:
                    shown.add(docid)
    with ds.qrels.open() as handle:
        for line in handle:
            qid, _, docid, _ = line.split()
            queries[qid] = None
            everything[docid] = None
            shown.add(docid)
    rng = random.Random(CORPUS_SEED)
    queries_file, passages_file = directory / "queries.tsv", directory / "passages.jsonl"
    with queries_file.open("w") as out:
        out.writelines(f"{qid}\t{_words(rng, QUERY_WORDS)}?\n" for qid in queries)
    with passages_file.open("w") as out:
        for docid in everything:
            if docid in shown:
                record = {
                    "id": docid,
                    "title": _words(rng, TITLE_WORDS).title(),
                    "text": _words(rng, SHOWN_WORDS) + ".",
                }
            else:
                record = {"id": docid, "text": f"passage {docid}"}
            out.write(json.dumps(record) + "\n")
    return queries_file, passages_file


def grading_project(bench: Bench, ds: Dataset, *, corpus: bool) -> tuple[Path, dict[str, Any]]:
    """The grading dataset imported under ANNOTATOR; built once, reused while its stamp
    (the dataset's stamp, the schema version, the corpus, the file's size) matches."""
    from raglabel.storage.schema import SCHEMA_VERSION

    name = "app-project" if corpus else "app-project-bare"
    db = ds.directory / f"{name}.db"
    stamp_file = ds.directory / f"{name}.json"
    # Through JSON, so that it compares equal to the stamp read back (tuples become lists).
    wanted = json.loads(
        json.dumps(
            {
                "dataset": json.loads(ds.stamp_file.read_text()),
                "annotator": ANNOTATOR,
                "schema_version": SCHEMA_VERSION,
                "corpus": {"seed": CORPUS_SEED, "shown_words": SHOWN_WORDS} if corpus else None,
            }
        )
    )
    if db.is_file() and stamp_file.is_file():
        stamp = json.loads(stamp_file.read_text())
        if stamp.get("params") == wanted and stamp.get("bytes") == file_bytes(db):
            print(f"  reusing {db}", file=sys.stderr)
            return db, {"reused": True, "bytes": stamp["bytes"]}

    stamp_file.unlink(missing_ok=True)
    building = db.with_name(db.name + ".building")
    remove_db(db)
    remove_db(building)
    warm_page_cache([ds.qrels, *ds.runs.values()])
    init = bench.new_row(f"{GRADING}: build", "init", [*bench.raglabel, "init", str(building)])
    bench.child(init)
    argv = [*bench.import_argv(building, ds, with_runs=True), "--annotator", ANNOTATOR]
    if corpus:
        queries_file, passages_file = write_corpus(ds, bench.scratch)
        argv += ["--queries", str(queries_file), "--passages", str(passages_file)]
    build = bench.new_row(f"{GRADING}: build", "import --qrels --run x10", argv)
    wall, _ = bench.child(build)
    checkpoint(building)
    building.replace(db)
    if corpus:
        queries_file.unlink()
        passages_file.unlink()
    size = file_bytes(db)
    stamp_file.write_text(json.dumps({"params": wanted, "bytes": size}, indent=2) + "\n")
    return db, {"reused": False, "bytes": size, "import_wall_s": wall}


def fresh_copy(pristine: Path, target: Path) -> Path:
    """A copy of the project, on disk before it is opened. A user opens a file at rest;
    a copy left in the page cache as dirty pages (gigabytes, for the big project) is
    written back by the kernel whenever it chooses, up to half a minute later, so in the
    middle of a later start-up or session, on a CPU the app needs. The fsync writes back
    this copy only; nothing else is flushed or dropped, and its pages stay cached."""
    remove_db(target)
    shutil.copyfile(pristine, target)
    with target.open("rb") as handle:
        os.fsync(handle.fileno())
    return target


# -- 1. keystrokes ---------------------------------------------------------------------


def key_plan(grades: int, seed: int) -> list[str]:
    """The keys of one session, with exactly ``grades`` grade keys among them."""
    rng = random.Random(seed)
    keys, weights = list(GRADE_KEYS), list(GRADE_KEYS.values())
    plan: list[str] = []
    graded = here = undone = 0
    per_query = rng.randint(*GRADES_PER_QUERY)
    while graded < grades:
        if here >= per_query:
            plan.append("n")
            here, per_query = 0, rng.randint(*GRADES_PER_QUERY)
        roll = rng.random()
        if roll < MOVE_SHARE:
            plan.append("j" if rng.random() < DOWN_SHARE else "k")
        elif roll < MOVE_SHARE + UNDO_SHARE and undone < graded:
            # Never more undos than grades: each undo then reverts this session's work.
            plan.append("u")
            undone += 1
        else:
            plan.append(rng.choices(keys, weights)[0])
            graded += 1
            here += 1
    return plan


def key_kind(key: str) -> str:
    if key in GRADE_KEYS:
        return "grade"
    return {"u": "undo", "n": "next query", "j": "move", "k": "move"}[key]


@dataclass
class Probe:
    """Times (perf_counter) the wrapped methods were entered and returned since reset()."""

    panel: list[float] = field(default_factory=list)  # MetricsPanel.show returned
    painted: list[float] = field(default_factory=list)  # MetricsPanel lines rendered
    passage: list[float] = field(default_factory=list)  # PassageView.show returned
    calls: list[tuple[str, float, float]] = field(default_factory=list)  # GradingSession.grade/undo

    def reset(self) -> None:
        self.panel.clear()
        self.painted.clear()
        self.passage.clear()
        self.calls.clear()


def after(method: Callable[Concatenate[S, P], R], times: list[float]) -> Callable[..., R]:
    def wrapper(self: S, *args: P.args, **kwargs: P.kwargs) -> R:
        result = method(self, *args, **kwargs)
        times.append(time.perf_counter())
        return result

    return wrapper


def _around(
    method: Callable[Concatenate[S, P], R], name: str, calls: list[tuple[str, float, float]]
) -> Callable[..., R]:
    def wrapper(self: S, *args: P.args, **kwargs: P.kwargs) -> R:
        entered = time.perf_counter()
        try:
            return method(self, *args, **kwargs)
        finally:
            calls.append((name, entered, time.perf_counter()))

    return wrapper


@contextmanager
def probed() -> Iterator[Probe]:
    from raglabel.session.grading import GradingSession
    from raglabel.tui.widgets.metrics_panel import MetricsPanel
    from raglabel.tui.widgets.passage_view import PassageView

    probe = Probe()
    patches: list[tuple[type, str, Any]] = [
        (MetricsPanel, "show", after(MetricsPanel.show, probe.panel)),
        (MetricsPanel, "render_lines", after(MetricsPanel.render_lines, probe.painted)),
        (PassageView, "show", after(PassageView.show, probe.passage)),
        (GradingSession, "grade", _around(GradingSession.grade, "grade", probe.calls)),
        (GradingSession, "undo", _around(GradingSession.undo, "undo", probe.calls)),
    ]
    with patched(patches):
        yield probe


@contextmanager
def patched(patches: Sequence[tuple[type, str, Any]]) -> Iterator[None]:
    """Each ``(class, name, wrapper)`` in place of the class's method while in the block."""
    # Inherited methods (render_lines) are not in the class's own __dict__: delete the
    # wrapper then, rather than pinning the base class's method onto the subclass.
    originals = [(cls, name, cls.__dict__.get(name)) for cls, name, _ in patches]
    for cls, name, wrapper in patches:
        setattr(cls, name, wrapper)
    try:
        yield
    finally:
        for cls, name, original in originals:
            if original is None:
                delattr(cls, name)
            else:
                setattr(cls, name, original)


@dataclass
class KeySample:
    key: str
    kind: str
    panel_ms: float | None  # t0 to the first MetricsPanel.show return
    session_ms: float | None  # inside GradingSession.grade / GradingSession.undo
    before_session_ms: float | None  # t0 to entering GradingSession.grade / GradingSession.undo
    after_session_ms: float | None  # GradingSession.grade / undo return to the panel updated
    painted_ms: float | None  # t0 to the panel's lines rendered (the next frame)
    passage_ms: float | None  # t0 to the last PassageView.show (the next passage shown)
    press_ms: float  # the whole pilot.press, Pilot's waits for idle included


@dataclass
class Session:
    seed: int
    keys: list[KeySample]
    expected: dict[str, int]  # app events the keys should have written, by kind
    found: dict[str, int]  # app events in the project afterwards
    open_ms: float  # Enter on the first query to its Grade screen

    @property
    def consistent(self) -> bool:
        return self.expected == self.found


def _ms(later: float | None, earlier: float | None) -> float | None:
    return None if later is None or earlier is None else (later - earlier) * 1000


def _first_after(times: Sequence[float], t0: float) -> float | None:
    return next((t for t in times if t >= t0), None)


async def grade_session(
    db: Path, plan: Sequence[str], probe: Probe
) -> tuple[list[KeySample], float]:
    from raglabel.session.options import AppOptions
    from raglabel.tui.app import create_app
    from raglabel.tui.screens.grade import GradeScreen
    from raglabel.tui.screens.queries import QueriesScreen

    app = create_app(AppOptions(project=db, annotator=ANNOTATOR))
    samples: list[KeySample] = []
    async with app.run_test(size=TERMINAL) as pilot:
        await pilot.pause()
        if not isinstance(app.screen, QueriesScreen):
            raise RuntimeError(f"the app opened on {type(app.screen).__name__}, not Queries")
        started = time.perf_counter()
        await pilot.press("enter")  # the cursor starts on the first query
        open_ms = (time.perf_counter() - started) * 1000
        screen = app.screen
        if not isinstance(screen, GradeScreen) or screen.qi != 0:
            raise RuntimeError("Enter on the Queries screen did not open the first query")
        for key in plan:
            probe.reset()
            t0 = time.perf_counter()
            await pilot.press(key)
            back = time.perf_counter()
            panel = _first_after(probe.panel, t0)
            call = probe.calls[0] if probe.calls else None
            samples.append(
                KeySample(
                    key=key,
                    kind=key_kind(key),
                    panel_ms=_ms(panel, t0),
                    session_ms=None if call is None else _ms(call[2], call[1]),
                    before_session_ms=None if call is None else _ms(call[1], t0),
                    after_session_ms=None if call is None else _ms(panel, call[2]),
                    painted_ms=_ms(_first_after(probe.painted, panel or t0), t0),
                    passage_ms=_ms(probe.passage[-1] if probe.passage else None, t0),
                    press_ms=(back - t0) * 1000,
                )
            )
    return samples, open_ms


def app_events(db: Path) -> dict[str, int]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT kind, count(*) FROM event WHERE origin = 'app' GROUP BY kind"
        ).fetchall()
    finally:
        conn.close()
    return {str(kind): int(n) for kind, n in rows}


def run_session(db: Path, grades: int, seed: int, profile: Path | None) -> Session:
    plan = key_plan(grades, seed)
    counts = Counter(key_kind(key) for key in plan)
    expected = {kind: counts[kind] for kind in ("grade", "undo") if counts[kind]}
    profiler = cProfile.Profile() if profile else None
    with probed() as probe:
        if profiler is not None:
            profiler.enable()
        try:
            samples, open_ms = asyncio.run(grade_session(db, plan, probe))
        finally:
            if profiler is not None:
                profiler.disable()
    if profiler is not None and profile is not None:
        profiler.dump_stats(profile)
    return Session(seed, samples, expected, app_events(db), open_ms)


# -- 2. start-up -----------------------------------------------------------------------


@dataclass
class Startup:
    wall_s: float
    peak_mib: float
    marks: dict[str, float]  # seconds from just before `import raglabel...` in the child


def startup(db: Path) -> Startup:
    argv = [sys.executable, "-c", STARTUP_CHILD, str(db), ANNOTATOR, *map(str, TERMINAL)]
    sample = measure(argv)
    if sample.exit_code != 0:
        raise CommandError(f"start-up child: {sample.failure()}")
    return Startup(sample.wall_s, sample.peak_mib, json.loads(sample.stdout))


def startups(
    bench: Bench, pristine: Path, repeats: int, *, keep: bool
) -> tuple[list[Startup], list[tuple[float, float]], float]:
    """Start-ups and ``eval DB`` runs, interleaved, so drift in a shared machine hits both
    alike; and this process's peak RSS before them (a child's is never below it)."""
    starts: list[Startup] = []
    evals: list[tuple[float, float]] = []
    eval_row = bench.new_row(
        f"{GRADING}: eval DB", "eval", [*bench.raglabel, "eval", str(pristine), *EVAL_ARGS]
    )
    # Before the sessions: Linux counts the parent's RSS at the moment of the fork into
    # a child's ru_maxrss, and the sessions leave this process large.
    parent_rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    for repeat in range(repeats):
        work = fresh_copy(pristine, bench.scratch / f"startup-{repeat}.db")
        print(f"  start-up {repeat + 1} ...", end="", file=sys.stderr, flush=True)
        starts.append(startup(work))
        print(
            f" {starts[-1].wall_s:.2f}s (table painted at "
            f"{starts[-1].marks['painted']:.2f}s in the child)",
            file=sys.stderr,
        )
        if not keep:
            remove_db(work)
        wall, _ = bench.child(eval_row)
        evals.append((wall, eval_row.samples[-1].peak_mib))
    return starts, evals, parent_rss_mib


def session_on_copy(
    pristine: Path, scratch: Path, args: argparse.Namespace, repeat: int, profile: Path | None
) -> Session:
    """Grading session number ``repeat`` on a fresh copy of the project."""
    work = fresh_copy(pristine, scratch / f"session-{repeat}.db")
    print(
        f"  session {repeat + 1}: {args.grades} grades ...",
        end="",
        file=sys.stderr,
        flush=True,
    )
    try:
        session = run_session(work, args.grades, seed=repeat, profile=profile)
    except Exception as exc:
        print(file=sys.stderr)
        traceback.print_exc()
        raise CommandError(f"session {repeat + 1}: {type(exc).__name__}: {exc}") from exc
    answered = _values(session.keys, "panel_ms", "grade")
    print(
        (" " + spread(percentiles(answered)) if answered else " no panel update")
        + ("" if session.consistent else f" LOST: {session.expected} vs {session.found}"),
        file=sys.stderr,
    )
    if not args.keep:
        remove_db(work)
    return session


# -- the report ------------------------------------------------------------------------


def _values(samples: Sequence[KeySample], attribute: str, kind: str) -> list[float]:
    found = (getattr(s, attribute) for s in samples if s.kind == kind)
    return [v for v in found if v is not None]


def keystroke_lines(sessions: Sequence[Session], grades: int) -> tuple[list[Line], bool]:
    """The table's keystroke lines, and whether any event or panel update went missing."""
    lines: list[Line] = []
    samples = [s for session in sessions for s in session.keys]
    grade_keys = [s for s in samples if s.kind == "grade"]
    unanswered = sum(1 for s in grade_keys if s.panel_ms is None)
    panel = _values(samples, "panel_ms", "grade")
    stats = percentiles(panel) if panel else {}
    what = (
        f"grade key to metrics panel updated ({len(grade_keys):,} keys: "
        f"{len(sessions)} x {grades:,})"
    )
    per_session = [percentiles(_values(s.keys, "panel_ms", "grade")) for s in sessions]
    lines.append(
        Line(
            GRADING,
            what,
            figure=spread(stats) if stats else "no panel update at all",
            goal=f"p95 < {PANEL_P95_MS:g} ms",
            met=bool(stats) and stats["p95_ms"] < PANEL_P95_MS,
            data={**stats, "per_session": per_session, "unanswered": unanswered},
        )
    )
    parts = (
        ("before_session_ms", "  key to GradingSession.grade entered"),
        ("session_ms", "  inside GradingSession.grade (commit included)"),
        ("after_session_ms", "  GradingSession.grade returned to panel updated"),
        ("painted_ms", "  key to the panel's lines rendered (next frame)"),
        ("passage_ms", "  key to the next passage shown"),
    )
    for attribute, label in parts:
        values = _values(samples, attribute, "grade")
        if values:
            lines.append(
                Line(GRADING, label, figure=spread(percentiles(values)), data=percentiles(values))
            )
    for kind, label in (("undo", "undo key to panel updated"), ("next query", "n to panel")):
        values = _values(samples, "panel_ms", kind)
        if values:
            inside = _values(samples, "session_ms", kind)
            extra = {"session": percentiles(inside)} if inside else {}
            lines.append(
                Line(
                    GRADING,
                    f"{label} ({len(values):,} keys)",
                    figure=spread(percentiles(values)),
                    data={**percentiles(values), **extra},
                )
            )
    expected: Counter[str] = Counter()
    found: Counter[str] = Counter()
    for session in sessions:
        expected.update(session.expected)
        found.update(session.found)
    lost = any(not s.consistent for s in sessions) or unanswered > 0
    lines.append(
        Line(
            GRADING,
            "events of origin 'app' in the project vs keys pressed",
            figure=", ".join(f"{kind} {found[kind]:,} / {n:,}" for kind, n in expected.items())
            + (f"; {unanswered} grade keys without a panel update" if unanswered else ""),
            goal="all saved, none lost",
            met=not lost,
            data={
                "per_session": [
                    {"seed": s.seed, "expected": s.expected, "found": s.found} for s in sessions
                ]
            },
        )
    )
    return lines, lost


def startup_lines(
    starts: Sequence[Startup], evals: Sequence[tuple[float, float]], parent_rss_mib: float
) -> list[Line]:
    walls = [s.wall_s for s in starts]
    wall = statistics.median(walls)
    ready = statistics.median(s.marks["ready"] for s in starts)
    painted = statistics.median(s.marks["painted"] for s in starts)
    imported = statistics.median(s.marks["imported"] for s in starts)
    built = statistics.median(s.marks["built"] for s in starts)
    eval_wall = statistics.median(w for w, _ in evals)
    resumed = statistics.median(s.marks["resumed"] for s in starts)
    rows = {int(s.marks["rows"]) for s in starts}
    rows_resumed = {int(s.marks["rows_resumed"]) for s in starts}
    return [
        Line(
            GRADING,
            f"start to Queries screen painted and idle, whole process ({len(starts)} runs)",
            wall_s=wall,
            peak_mib=max(s.peak_mib for s in starts),
            figure=f"{wall:.2f} s (median; {', '.join(f'{w:.2f}' for w in walls)}), "
            f"{wall / eval_wall:.2f}x eval DB",
            goal=f"< {STARTUP_S:g} s",
            met=wall < STARTUP_S,
            data={
                "wall_s": walls,
                "ratio_to_eval": wall / eval_wall,
                # A child's peak RSS is never below this (see main()).
                "parent_rss_mib_at_spawn": parent_rss_mib,
            },
        ),
        Line(
            GRADING,
            "  in the child, from `import raglabel.tui.app`",
            figure=f"imported {imported:.2f} s, app built {built:.2f} s, Queries mounted "
            f"{ready:.2f} s ({_counts(rows)} rows), first painted {painted:.2f} s, "
            f"event loop free {resumed:.2f} s ({_counts(rows_resumed)} rows); "
            f"first paint = {painted / eval_wall:.2f}x eval DB",
            data={"marks": [s.marks for s in starts]},
        ),
        Line(
            GRADING,
            f"peer: raglabel eval DB {' '.join(EVAL_ARGS)}, whole process",
            wall_s=eval_wall,
            peak_mib=max(p for _, p in evals),
            figure=f"{eval_wall:.2f} s (median; {', '.join(f'{w:.2f}' for w, _ in evals)})",
            data={"wall_s": [w for w, _ in evals], "peak_mib": [p for _, p in evals]},
        ),
    ]


def _counts(values: set[int]) -> str:
    return "/".join(f"{v:,}" for v in sorted(values))


def table(lines: Sequence[Line]) -> str:
    met = {True: "MET", False: "**NOT MET**", None: ""}
    return markdown_table(
        ["measure", "figure", "goal", "met"],
        [[line.what, line.figure, line.goal, met[line.met]] for line in lines],
    )


def top_functions(profile: Path, limit: int = 25) -> str:
    out = io.StringIO()
    stats = pstats.Stats(str(profile), stream=out)
    stats.sort_stats("cumulative").print_stats(r"raglabel|textual|rich|sqlite", limit)
    return out.getvalue()


def git_state() -> str | None:
    try:
        head = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).resolve().parent,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return head.stdout.strip() or None


def main(argv: Sequence[str] | None = None) -> int:
    parser = make_parser(__doc__)
    add_grades(parser, DEFAULT_GRADES, "grade keys per session")
    add_repeat(
        parser,
        f"grading sessions, start-ups and evals (default {DEFAULT_REPEATS})",
        DEFAULT_REPEATS,
    )
    add_keep(parser)
    parser.add_argument(
        "--no-corpus",
        dest="corpus",
        action="store_false",
        help="import only the qrels and the runs, without query and passage text",
    )
    parser.add_argument(
        "--profile",
        type=Path,
        metavar="FILE",
        help="run the first session under cProfile and write its stats here "
        "(that session's latencies then include the profiler's overhead)",
    )
    args = parse(parser, argv)

    started = datetime.now(UTC)
    lines: list[Line] = []
    sessions: list[Session] = []
    failed = False
    build: dict[str, Any] = {}
    with scratch_directory("appbench-", args.keep) as scratch:
        bench = Bench(scratch)
        try:
            ds = generate(GRADING)
            pristine, build = grading_project(bench, ds, corpus=args.corpus)
            starts, evals, parent_rss_mib = startups(bench, pristine, args.repeat, keep=args.keep)
            for repeat in range(args.repeat):
                profile = args.profile if repeat == 0 else None
                sessions.append(session_on_copy(pristine, scratch, args, repeat, profile))
            keys, lost = keystroke_lines(sessions, args.grades)
            failed |= lost
            lines += [*keys, *startup_lines(starts, evals, parent_rss_mib)]
        except CommandError as exc:
            print(f"failed: {exc}", file=sys.stderr)
            failed = True

    print()
    print(table(lines))
    print_goals(
        [
            (line.met, f"{line.what.strip()}: {line.figure} (goal {line.goal})")
            for line in lines
            if line.met is not None
        ]
    )
    if args.profile is not None and args.profile.is_file():
        print(f"\ncProfile of session 1 ({args.profile}), cumulative, raglabel/textual/rich:")
        print(top_functions(args.profile))

    report = {
        "started": started.isoformat(timespec="seconds"),
        "options": {
            "grades": args.grades,
            "repeat": args.repeat,
            "corpus": args.corpus,
            "terminal": TERMINAL,
        },
        "machine": measured_machine(
            # The checkout's, which is not the measured raglabel when PYTHONPATH pins a
            # snapshot (raglabel_path says which one was imported).
            checkout_git=git_state(),
            versions=versions("textual", "rich"),
        ),
        "project": build,
        "lines": [asdict(line) for line in lines],
        "sessions": [
            {
                "seed": s.seed,
                "open_ms": s.open_ms,
                "expected": s.expected,
                "found": s.found,
                "keys": [asdict(k) for k in s.keys],
            }
            for s in sessions
        ],
    }
    save_results(report, bench, f"app-{utc_stamp(started)}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
