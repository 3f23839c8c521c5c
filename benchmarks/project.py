"""Time raglabel's project database: importing a run, eval from the project, recording grades.

    python benchmarks/project.py [--size small|large|all] [--repeat N] [--grades N]

Importing and evaluating are whole child processes, measured as run.py measures them
(wall clock around the child, peak RSS from os.wait4 on its pid). Recording a grade is
timed in this process, with time.perf_counter around each raglabel.storage.grades.record()
or undo_last() call; the commit is inside the call, so it is inside the time.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from common import (
    CommandError,
    Row,
    add_grades,
    add_keep,
    add_repeat,
    add_size,
    chosen_sizes,
    machine,
    make_parser,
    markdown_table,
    nearest_rank,
    parse,
    parse_timings,
    percentiles,
    print_goals,
    raglabel_command,
    raglabel_path,
    run_row,
    scratch_directory,
    spread,
    utc_stamp,
    versions,
    warm_page_cache,
    write_results,
)
from generate import SPECS, Dataset, generate
from run import CLASSIC

SIZES = ("small", "large")
DEFAULT_REPEATS = {"small": 5, "large": 1}
GRADING = "grading"
DEFAULT_GRADING_REPEATS = 3
DEFAULT_GRADES = 2_000

# The goals. Import speed and size are goals for the 10M-line run (`large`); at 100k lines
# a whole process is mostly interpreter start and imports.
IMPORT_LINES_PER_S = 300_000
SIZE_RATIO = 1.5
EVAL_RATIO = 1.5
RECORD_P99_MS = 5.0
GOAL_SIZES = ("large",)

EVAL_CASES: tuple[tuple[str, list[str]], ...] = (
    ("nDCG@10, recall@100, MRR", ["-k", "10,100", "--metrics", ",".join(CLASSIC)]),
    ("set metrics @5,10,20", ["-k", "5,10,20", "--metrics", "set"]),
)
# The means of the two ways to evaluate must be the same numbers.
MEANS_TOLERANCE = 1e-9

# The grading session: what an annotator does, and how often.
ANNOTATORS = 5
UNDO_SHARE = 0.10
CLEAR_SHARE = 0.10
REVISIT_SHARE = 0.25  # a grade or clear on one of the annotator's recent items
RECENT_ITEMS = 50
GRADE_WEIGHTS = {1: 0.25, 2: 0.30, 3: 0.20, 4: 0.15, 5: 0.10}


@dataclass
class Line:
    """One line of the table: a figure, its goal, and whether the goal is met."""

    size: str
    what: str
    wall_s: float | None = None
    peak_mib: float | None = None
    figure: str = ""
    goal: str = ""
    met: bool | None = None  # None: no goal for this line
    data: dict[str, Any] = field(default_factory=dict)


def file_bytes(db: Path) -> int:
    """The project file as it lies on disk: the database and its -wal, if one is left."""
    wal = db.with_name(db.name + "-wal")
    return db.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def remove_db(db: Path) -> None:
    """The project file and its -wal and -shm, where they exist."""
    for suffix in ("", "-wal", "-shm"):
        db.with_name(db.name + suffix).unlink(missing_ok=True)


def run_lines(ds: Dataset) -> int:
    # The generator writes exactly `depth` lines per query and run.
    return ds.spec.queries * ds.spec.depth * ds.spec.runs


def space_by_table(db: Path) -> list[tuple[str, int]] | None:
    """Bytes of pages per table and index (SQLite's dbstat), largest first; None if absent."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"
        ).fetchall()
    except sqlite3.OperationalError:
        return None
    finally:
        conn.close()
    return [(str(name), int(size)) for name, size in rows]


def checkpoint(db: Path) -> None:
    """Fold any -wal back into the file, so copying the file copies everything."""
    conn = sqlite3.connect(str(db))
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def measured_machine(**more: Any) -> dict[str, Any]:
    """The machine, SQLite's version and which raglabel was measured, then ``more``."""
    return machine(
        sqlite=sqlite3.sqlite_version,
        # Which raglabel was measured: PYTHONPATH can pin a snapshot (see the README).
        raglabel_path=raglabel_path(),
        pythonpath=os.environ.get("PYTHONPATH"),
        **more,
    )


def _mib(n: float) -> str:
    return f"{n / 2**20:,.1f} MiB"


class Bench:
    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        self.raglabel = raglabel_command()
        self.lines: list[Line] = []
        self.rows: list[Row] = []  # every child process, with all its samples
        self.failed = False

    # -- child processes -------------------------------------------------------------

    def child(self, row: Row) -> tuple[float, str]:
        """Run the row's command once more; its wall time and stdout."""
        sample = run_row(row)
        if sample.exit_code != 0:
            row.samples.append(sample)
            raise CommandError(f"{row.case} | {row.tool}: {row.error}")
        sample.load_s, sample.compute_s = parse_timings(sample.stderr)
        stdout = sample.stdout
        sample.stdout = sample.stderr = ""  # keep the results file readable
        row.samples.append(sample)
        return sample.wall_s, stdout

    def new_row(self, case: str, tool: str, argv: list[str]) -> Row:
        row = Row(case, tool, argv)
        self.rows.append(row)
        return row

    def import_argv(self, db: Path, ds: Dataset, *, with_runs: bool) -> list[str]:
        argv = [*self.raglabel, "import", str(db), "--qrels", str(ds.qrels)]
        if with_runs:
            for name, path in ds.runs.items():
                argv += ["--run", f"{name}={path}"]
        return argv

    def eval_argv(self, source: Path | Dataset, extra: list[str]) -> list[str]:
        argv = [*self.raglabel, "eval"]
        if isinstance(source, Path):
            argv.append(str(source))
        else:
            argv += ["--qrels", str(source.qrels)]
            for name, path in source.runs.items():
                argv += ["--run", f"{name}={path}"]
        return [*argv, *extra, "--format", "json", "--timings"]

    # -- 1. import -------------------------------------------------------------------

    def imports(self, ds: Dataset, repeats: int) -> Path:
        """Fresh projects, with and without the run; the last full one is kept for eval."""
        name = ds.spec.name
        lines = run_lines(ds)
        run_bytes = sum(p.stat().st_size for p in ds.runs.values())
        case = f"{name}: import"
        init_row = self.new_row(case, "init", [])
        qrels_row = self.new_row(case, "import --qrels", [])
        full_row = self.new_row(case, "import --qrels --run", [])
        full_sizes: list[int] = []
        qrels_sizes: list[int] = []
        kept = self.scratch / name / "project.db"
        for repeat in range(repeats):
            directory = self.scratch / name / f"import-{repeat}"
            directory.mkdir(parents=True)
            qrels_db, full_db = directory / "qrels-only.db", directory / "project.db"
            for db, row, with_runs in ((qrels_db, qrels_row, False), (full_db, full_row, True)):
                init_row.argv = [*self.raglabel, "init", str(db)]
                self.child(init_row)
                row.argv = self.import_argv(db, ds, with_runs=with_runs)
                self.child(row)
            qrels_sizes.append(file_bytes(qrels_db))
            full_sizes.append(file_bytes(full_db))
            # Only the last project is kept (for eval): a large one is 300 MB.
            checkpoint(full_db)
            full_db.replace(kept)
            shutil.rmtree(directory)

        wall_init, wall_qrels, wall_full = init_row.wall(), qrels_row.wall(), full_row.wall()
        assert wall_init is not None and wall_qrels is not None and wall_full is not None
        graded = ds.qrels.read_bytes().count(b"\n")
        goal_here = name in GOAL_SIZES
        self.lines.append(Line(name, "init (empty project)", wall_init, init_row.peak(), figure=""))
        self.lines.append(
            Line(
                name,
                f"import --qrels only ({graded:,} labels)",
                wall_qrels,
                qrels_row.peak(),
                figure=f"{graded / wall_qrels:,.0f} labels/s",
            )
        )
        per_s = lines / wall_full
        run_share_s = wall_full - wall_qrels
        self.lines.append(
            Line(
                name,
                f"import --qrels --run ({lines:,} run lines)",
                wall_full,
                full_row.peak(),
                figure=f"{per_s:,.0f} lines/s (run's share {run_share_s:.2f} s: "
                f"{lines / run_share_s:,.0f} lines/s)"
                # Below a tenth of the wall time the difference of two medians is noise.
                if run_share_s > wall_full / 10
                else f"{per_s:,.0f} lines/s (run's share lost in the noise)",
                goal=f">= {IMPORT_LINES_PER_S:,} lines/s"
                + ("" if goal_here else " (goal for large)"),
                met=per_s >= IMPORT_LINES_PER_S if goal_here else None,
                data={"lines": lines, "lines_per_s": per_s, "run_share_s": run_share_s},
            )
        )
        full_size = statistics.median(full_sizes)
        qrels_size = statistics.median(qrels_sizes)
        ratio = full_size / run_bytes
        self.lines.append(
            Line(
                name,
                "project file after import (incl. -wal)",
                figure=f"{_mib(full_size)} = {ratio:.2f}x the run file ({_mib(run_bytes)}); "
                f"without the run {_mib(qrels_size)}, so the run's share is "
                f"{(full_size - qrels_size) / run_bytes:.2f}x",
                goal=f"<= {SIZE_RATIO}x the run file" + ("" if goal_here else " (goal for large)"),
                met=ratio <= SIZE_RATIO if goal_here else None,
                data={
                    "project_bytes": full_sizes,
                    "qrels_only_bytes": qrels_sizes,
                    "run_bytes": run_bytes,
                    "ratio": ratio,
                    "space_by_table": space_by_table(kept),
                },
            )
        )
        return kept

    # -- 2. eval from the project vs from the files ------------------------------------

    def evals(
        self, ds: Dataset, db: Path, repeats: int, cases: Sequence[tuple[str, list[str]]]
    ) -> None:
        name = ds.spec.name
        pairs = []
        for label, extra in cases:
            case = f"{name}: eval {label}"
            from_db = self.new_row(case, "eval DB", self.eval_argv(db, extra))
            from_files = self.new_row(case, "eval --qrels --run", self.eval_argv(ds, extra))
            pairs.append((label, from_db, from_files))
        outputs: dict[str, str] = {}
        # Interleaved, so drift in a shared machine hits both alike.
        for _ in range(repeats):
            for _label, from_db, from_files in pairs:
                for row in (from_db, from_files):
                    _, outputs[f"{row.case}|{row.tool}"] = self.child(row)
        for label, from_db, from_files in pairs:
            db_wall, files_wall = from_db.wall(), from_files.wall()
            assert db_wall is not None and files_wall is not None
            disagreement = _compare_means(
                outputs[f"{from_db.case}|{from_db.tool}"],
                outputs[f"{from_files.case}|{from_files.tool}"],
                list(ds.runs),
            )
            if disagreement:
                self.failed = True
                print(f"  {name} {label}: {disagreement}", file=sys.stderr)
            for row, what in ((from_files, "from the files"), (from_db, "from the project")):
                self.lines.append(
                    Line(
                        name,
                        f"eval {label}, {what}",
                        row.wall(),
                        row.peak(),
                        figure=f"load {row.load() or 0:.2f} s, compute {row.compute() or 0:.3f} s",
                    )
                )
            ratio = db_wall / files_wall
            self.lines.append(
                Line(
                    name,
                    f"eval {label}: project / files",
                    figure=f"{ratio:.2f}x"
                    + (f" ({disagreement})" if disagreement else ", same means"),
                    goal=f"<= {EVAL_RATIO}x",
                    met=ratio <= EVAL_RATIO and not disagreement,
                    data={"ratio": ratio, "disagreement": disagreement},
                )
            )

    # -- 3. recording grades ---------------------------------------------------------

    def grading(self, repeats: int, events: int) -> None:
        ds = generate(GRADING)
        warm_page_cache([ds.qrels, *ds.runs.values()])
        directory = self.scratch / GRADING
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
        pristine = directory / "pristine.db"
        init_row = self.new_row(
            f"{GRADING}: build", "init", [*self.raglabel, "init", str(pristine)]
        )
        self.child(init_row)
        build = self.new_row(
            f"{GRADING}: build",
            "import --qrels --run x10",
            self.import_argv(pristine, ds, with_runs=True),
        )
        wall, _ = self.child(build)
        spec = ds.spec
        self.lines.append(
            Line(
                GRADING,
                f"build: import qrels + {spec.runs} runs "
                f"({spec.queries:,} queries x {spec.depth} x {spec.runs})",
                wall,
                build.peak(),
                figure=f"{run_lines(ds) / wall:,.0f} lines/s, {_mib(file_bytes(pristine))}",
            )
        )
        self.evals(ds, pristine, repeats, [EVAL_CASES[1]])
        checkpoint(pristine)

        samples: list[tuple[str, float]] = []
        per_repeat: list[dict[str, float]] = []
        for repeat in range(repeats):
            work = directory / f"session-{repeat}.db"
            shutil.copyfile(pristine, work)
            print(
                f"  {GRADING}: {events} events, session {repeat + 1} ...", end="", file=sys.stderr
            )
            session = grade_session(work, events, seed=repeat)
            ms = [s for _, s in session]
            per_repeat.append(
                {"p50": nearest_rank(ms, 0.5), "p99": nearest_rank(ms, 0.99), "max": max(ms)}
            )
            print(
                f" p50 {per_repeat[-1]['p50']:.2f} ms, p99 {per_repeat[-1]['p99']:.2f} ms",
                file=sys.stderr,
            )
            samples += session
            remove_db(work)

        kinds = ["all", *sorted({kind for kind, _ in samples})]
        for kind in kinds:
            ms = [s for k, s in samples if kind in ("all", k)]
            stats = percentiles(ms, (0.5, 0.9, 0.99))
            what = {
                "all": f"record one event, commit included ({len(ms):,} events: "
                f"{repeats} x {events:,})",
                "grade": "  of which grade",
                "clear": "  of which clear",
                "undo": "  of which undo_last",
            }.get(kind, f"  of which {kind}")
            self.lines.append(
                Line(
                    GRADING,
                    what,
                    figure=spread(stats, ("p50", "p99")),
                    goal=f"p99 < {RECORD_P99_MS:g} ms" if kind == "all" else "",
                    met=stats["p99_ms"] < RECORD_P99_MS if kind == "all" else None,
                    data={**stats, **({"per_session": per_repeat} if kind == "all" else {})},
                )
            )


def _compare_means(db_out: str, files_out: str, runs: list[str]) -> str | None:
    """Why the two outputs disagree, or None when every mean is the same."""
    try:
        db_runs = json.loads(db_out)["runs"]
        files_runs = json.loads(files_out)["runs"]
    except (ValueError, KeyError, TypeError):
        return "output is not raglabel's JSON"
    worst = 0.0
    for run in runs:
        db_mean = db_runs.get(run, {}).get("mean") or {}
        files_mean = files_runs.get(run, {}).get("mean") or {}
        if not db_mean or db_mean.keys() != files_mean.keys():
            return f"run {run}: different metrics"
        for metric, value in files_mean.items():
            other = db_mean[metric]
            if isinstance(value, int | float) and isinstance(other, int | float):
                worst = max(worst, abs(float(value) - float(other)))
            elif value != other:
                return f"run {run}: {metric} differs"
    return f"means differ by up to {worst:.2e}" if worst > MEANS_TOLERANCE else None


def grade_session(db: Path, events: int, seed: int) -> list[tuple[str, float]]:
    """One simulated grading session; (kind, milliseconds) of every call."""
    from raglabel.storage.grades import GradeEvent, record, undo_last
    from raglabel.storage.project import Project

    rng = random.Random(seed)
    names = [f"annotator{i + 1}" for i in range(ANNOTATORS)]
    grades, weights = list(GRADE_WEIGHTS), list(GRADE_WEIGHTS.values())
    timed: list[tuple[str, float]] = []
    with Project.open(db) as project:
        pairs: list[tuple[str, str]] = project.conn.execute(
            "SELECT q.ext_id, p.ext_id FROM candidate c"
            " JOIN query q ON q.id = c.query_id JOIN passage p ON p.id = c.passage_id"
            " ORDER BY c.query_id, c.passage_id"
        ).fetchall()
        recent: dict[str, list[tuple[str, str]]] = {name: [] for name in names}
        for _ in range(events):
            who = rng.choice(names)
            roll = rng.random()
            if roll < UNDO_SHARE:
                started = time.perf_counter()
                undo_last(project, who, origin="bench")
                timed.append(("undo", (time.perf_counter() - started) * 1000))
                continue
            mine = recent[who]
            clear = roll < UNDO_SHARE + CLEAR_SHARE
            revisit = mine and (clear or rng.random() < REVISIT_SHARE)
            query, passage = rng.choice(mine) if revisit else rng.choice(pairs)
            event = GradeEvent(
                query=query,
                passage=passage,
                annotator=who,
                kind="clear" if clear else "grade",
                grade=None if clear else rng.choices(grades, weights)[0],
                origin="bench",
                active_ms=rng.randint(1_000, 30_000),
            )
            started = time.perf_counter()
            record(project, event)
            timed.append((event.kind, (time.perf_counter() - started) * 1000))
            mine.append((query, passage))
            del mine[:-RECENT_ITEMS]
    return timed


def table(lines: Sequence[Line]) -> str:
    head = ["size", "measured", "wall s", "peak MiB", "figure", "goal", "met"]
    out = []
    for line in lines:
        met = {True: "yes", False: "**NO**", None: ""}[line.met]
        cells = [
            line.size,
            line.what,
            "" if line.wall_s is None else f"{line.wall_s:.2f}",
            "" if line.peak_mib is None else f"{line.peak_mib:,.0f}",
            line.figure,
            line.goal,
            met,
        ]
        out.append(cells)
    return markdown_table(head, out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = make_parser(__doc__)
    add_size(parser, SIZES, "small")
    add_repeat(
        parser,
        "timed runs of every command and grading sessions "
        f"(default: small {DEFAULT_REPEATS['small']}, large {DEFAULT_REPEATS['large']}, "
        f"grading {DEFAULT_GRADING_REPEATS})",
    )
    add_grades(parser, DEFAULT_GRADES, "events per grading session")
    add_keep(parser)
    args = parse(parser, argv)
    sizes = chosen_sizes(args, SIZES)

    started = datetime.now(UTC)
    with scratch_directory("projbench-", args.keep) as scratch:
        bench = Bench(scratch)
        try:
            for size in sizes:
                ds = generate(size)
                repeats = args.repeat or DEFAULT_REPEATS[size]
                print(f"{size}: {repeats} timed run(s) per command", file=sys.stderr)
                warm_page_cache([ds.qrels, *ds.runs.values()])
                db = bench.imports(ds, repeats)
                bench.evals(ds, db, repeats, EVAL_CASES)
                shutil.rmtree(db.parent, ignore_errors=True)
            grading_repeats = args.repeat or DEFAULT_GRADING_REPEATS
            print(f"{GRADING}: {grading_repeats} session(s)", file=sys.stderr)
            bench.grading(grading_repeats, args.grades)
        except CommandError as exc:
            print(f"failed: {exc}", file=sys.stderr)
            bench.failed = True

    print()
    print(table(bench.lines))
    print_goals(
        [
            (line.met, f"{line.size}: {line.what}: {line.figure} (goal {line.goal})")
            for line in bench.lines
            if line.met is not None
        ]
    )
    for line in bench.lines:
        space = line.data.get("space_by_table")
        if space:
            print(f"\n{line.size}: space by table and index (dbstat)")
            for table_name, size in space[:8]:
                print(f"  {table_name:<30} {_mib(size):>12}")

    report = {
        "started": started.isoformat(timespec="seconds"),
        "machine": measured_machine(versions=versions()),
        "sizes": {size: asdict(SPECS[size]) for size in [*sizes, GRADING]},
        "lines": [asdict(line) for line in bench.lines],
    }
    save_results(report, bench, f"project-{utc_stamp(started)}-{'-'.join(sizes)}")
    return 1 if bench.failed else 0


def save_results(report: dict[str, Any], bench: Bench, name: str) -> Path:
    """Write ``report`` with every process's samples to results/NAME.json, and say where."""
    report["processes"] = [
        {**asdict(row), "wall_s_median": row.wall(), "peak_mib_max": row.peak()}
        for row in bench.rows
    ]
    out = write_results(name, report)
    print(f"\nraglabel measured: {raglabel_path()}")
    print(f"results: {out}")
    return out


if __name__ == "__main__":
    raise SystemExit(main())
