"""Time raglabel, pytrec_eval and ranx as whole processes on the generated data.

    python benchmarks/run.py [--size small|large|multi|all] [--repeat N] [--tools LIST]

Every measurement is one child process started from scratch (interpreter start, imports,
reading the files from disk, computing, printing), timed on the wall clock, with its peak
resident memory taken from the rusage that os.wait4 returns for that very child.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from common import (
    HERE,
    Row,
    add_repeat,
    add_size,
    chosen_sizes,
    machine,
    make_parser,
    markdown_table,
    parse,
    parse_timings,
    print_goals,
    raglabel_command,
    run_row,
    utc_stamp,
    versions,
    warm_page_cache,
    write_results,
)
from generate import SPECS, Dataset, generate

TOOLS_DIR = HERE / "tools"

CLASSIC = ("ndcg@10", "recall@100", "mrr")
TOLERANCE = 1e-6
ALL_TOOLS = ("pytrec_eval", "ranx", "raglabel")
# A full repeat of `large` costs minutes (ranx and pytrec_eval parse 10M lines in Python).
DEFAULT_REPEATS = {"small": 5, "large": 1, "multi": 3}
SIZES = ("small", "large", "multi")


def raglabel_has_timings(command: list[str]) -> bool:
    try:
        found = subprocess.run(
            [*command, "eval", "--help"], capture_output=True, text=True, check=False
        )
    except OSError:
        return False
    return found.returncode == 0 and "--timings" in found.stdout


@dataclass
class Command:
    case: str
    tool: str
    argv: list[str]
    env: dict[str, str] | None = None
    runs: list[str] = field(default_factory=list)  # raglabel run names, to read its JSON
    compare: bool = False  # prints nDCG@10, recall@100 and MRR for the cross-check


class Bench:
    def __init__(self, tools: Sequence[str], numba_dir: Path) -> None:
        self.tools = tools
        self.numba_dir = numba_dir
        self.raglabel = raglabel_command()
        self.timings = "raglabel" in tools and raglabel_has_timings(self.raglabel)
        self.rows: list[Row] = []

    def _raglabel_eval(self, qrels: Path, runs: dict[str, Path], extra: list[str]) -> list[str]:
        argv = [*self.raglabel, "eval", "--qrels", str(qrels)]
        for name, path in runs.items():
            argv += ["--run", f"{name}={path}"]
        argv += [*extra, "--format", "json"]
        if self.timings:
            argv.append("--timings")
        return argv

    def commands(self, ds: Dataset) -> tuple[list[Command], Command | None]:
        """The commands of one dataset, and ranx's cold-cache first run, if any."""
        name = ds.spec.name
        qrels = ds.qrels
        if name == "multi":
            if "raglabel" not in self.tools:
                return [], None
            argv = self._raglabel_eval(qrels, ds.runs, ["-k", "5,10,20", "--metrics", "set"])
            case = f"multi: {len(ds.runs)} runs, set metrics @5,10,20"
            return [Command(case, "raglabel", argv, runs=list(ds.runs))], None

        ((run_name, run),) = ds.runs.items()
        classic = f"{name}: nDCG@10, recall@100, MRR"
        commands: list[Command] = []
        cold: Command | None = None
        if "pytrec_eval" in self.tools:
            argv = [sys.executable, str(TOOLS_DIR / "pytrec_eval_eval.py"), str(qrels), str(run)]
            commands.append(Command(classic, "pytrec_eval", argv, compare=True))
        if "ranx" in self.tools:
            argv = [sys.executable, str(TOOLS_DIR / "ranx_eval.py"), str(qrels), str(run)]
            # A cache directory of our own: the first run compiles into it, later ones load
            # from it, and ranx's own install is left untouched.
            cache = self.numba_dir / name
            shutil.rmtree(cache, ignore_errors=True)
            env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
            cold = Command(classic, "ranx (first run)", argv, env, compare=True)
            commands.append(Command(classic, "ranx (warm)", argv, env, compare=True))
        if "raglabel" in self.tools:
            extra = ["-k", "10,100", "--metrics", ",".join(CLASSIC)]
            argv = self._raglabel_eval(qrels, {run_name: run}, extra)
            commands.append(Command(classic, "raglabel", argv, runs=[run_name], compare=True))
            argv = self._raglabel_eval(
                qrels, {run_name: run}, ["-k", "5,10,20", "--metrics", "set"]
            )
            case = f"{name}: set metrics @5,10,20"
            commands.append(Command(case, "raglabel", argv, runs=[run_name]))
        return commands, cold

    def run_dataset(self, ds: Dataset, repeats: int) -> None:
        commands, cold = self.commands(ds)
        if not commands:
            return
        warm_page_cache([ds.qrels, *ds.runs.values()])
        rows = {id(c): Row(c.case, c.tool, c.argv) for c in commands}
        cold_row = None
        if cold is not None:
            # Before any warm run, or the warm runs would find nothing to load.
            cold_row = Row(cold.case, cold.tool, cold.argv)
            self._record(cold, cold_row)
        # Interleaved rather than tool after tool, so drift in the machine hits all alike.
        for _ in range(repeats):
            for command in commands:
                self._record(command, rows[id(command)])
        for command in commands:
            if cold_row is not None and command.tool == "ranx (warm)":
                self.rows.append(cold_row)
            self.rows.append(rows[id(command)])

    def _record(self, command: Command, row: Row) -> None:
        sample = run_row(row, command.env)
        if sample.exit_code != 0:
            print(f"    failed: {row.error}", file=sys.stderr)
        if command.tool == "raglabel":
            sample.load_s, sample.compute_s = parse_timings(sample.stderr)
        if sample.exit_code == 0:
            problem = _check_output(command, sample.stdout)
            if problem:
                row.error = problem
                print(f"    bad output: {problem}", file=sys.stderr)
            elif command.compare and row.means is None:
                row.means = _means(command, sample.stdout)
        # Keep the results file readable: outputs are only needed when something failed.
        if row.error is None:
            sample.stdout = sample.stderr = ""
        row.samples.append(sample)


def _check_output(command: Command, stdout: str) -> str | None:
    """Why the output is not a usable result, or None: a fast wrong answer is no result."""
    try:
        data: Any = json.loads(stdout)
    except ValueError:
        return "output is not JSON"
    if command.tool == "raglabel":
        reported = data.get("runs", {}) if isinstance(data, dict) else {}
        missing = [name for name in command.runs if not reported.get(name, {}).get("mean")]
        if missing:
            return f"no means for run(s) {', '.join(missing)}"
    return None


def _means(command: Command, stdout: str) -> dict[str, float] | None:
    try:
        data: Any = json.loads(stdout)
        if command.tool == "raglabel":
            found = data["runs"][command.runs[0]]["mean"]
        else:
            found = data["mean"]
        means = {metric: float(found[metric]) for metric in CLASSIC if metric in found}
    except (ValueError, KeyError, TypeError):
        return None
    return means or None


def _fmt(value: float | None, digits: int = 2) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def _ratio(value: float | None, reference: float | None) -> str:
    if value is None or not reference:
        return ""
    return f"{value / reference:.2f}"


def reference_row(rows: Sequence[Row], case: str) -> Row | None:
    """pytrec_eval's row for the same files (the classic case of the same size)."""
    size = case.split(":", 1)[0]
    for row in rows:
        if row.tool == "pytrec_eval" and row.case.startswith(f"{size}:") and row.ok:
            return row
    return None


def table(rows: Sequence[Row]) -> str:
    head = ["case", "tool", "wall s", "peak MiB", "time / pytrec_eval", "memory / pytrec_eval"]
    head += ["load s", "compute s", "runs"]
    lines = []
    for row in rows:
        ref = reference_row(rows, row.case)
        wall, peak = row.wall(), row.peak()
        cells = [
            row.case,
            row.tool,
            _fmt(wall) if row.ok else f"FAILED ({row.error})" if row.error else "",
            _fmt(peak, 0),
            _ratio(wall, ref.wall() if ref else None),
            _ratio(peak, ref.peak() if ref else None),
            _fmt(row.load(), 3),
            _fmt(row.compute(), 3),
            str(len(row.samples)),
        ]
        lines.append(cells)
    return markdown_table(head, lines)


def cross_check(rows: Sequence[Row]) -> tuple[str, list[dict[str, Any]]]:
    """Mean values side by side, with any difference from pytrec_eval over TOLERANCE."""
    lines: list[list[str]] = []
    findings: list[dict[str, Any]] = []
    for row in rows:
        if row.means is None or row.tool == "ranx (first run)":
            continue
        ref = reference_row(rows, row.case)
        ref_means = ref.means if ref is not None else None
        diffs = {
            metric: abs(row.means[metric] - ref_means[metric])
            for metric in CLASSIC
            if ref_means and metric in row.means and metric in ref_means
        }
        worst = max(diffs.values(), default=None)
        flag = ""
        if worst is not None and worst > TOLERANCE:
            flag = " DISAGREES"
            if row.tool.startswith("ranx"):
                flag += " (ranx breaks score ties differently, see tools/ranx_eval.py)"
        values = [_fmt(row.means.get(metric), 6) for metric in CLASSIC]
        diff_text = "" if worst is None else f"{worst:.2e}{flag}"
        lines.append([row.case, row.tool, *values, diff_text])
        findings.append(
            {
                "case": row.case,
                "tool": row.tool,
                "means": row.means,
                "abs_diff_vs_pytrec_eval": diffs,
                "agrees": worst is None or worst <= TOLERANCE,
            }
        )
    head = ["case", "tool", *CLASSIC, "max abs diff vs pytrec_eval"]
    return markdown_table(head, lines), findings


def goals(rows: Sequence[Row]) -> list[dict[str, Any]]:
    def find(case_prefix: str, tool: str) -> Row | None:
        for row in rows:
            if row.case.startswith(case_prefix) and row.tool == tool and row.ok:
                return row
        return None

    results: list[dict[str, Any]] = []
    rag, ref = find("large: nDCG", "raglabel"), find("large: nDCG", "pytrec_eval")
    if rag and ref:
        rag_wall, ref_wall = rag.wall() or 0.0, ref.wall() or 0.0
        rag_peak, ref_peak = rag.peak() or 0.0, ref.peak() or 0.0
        results.append(
            {
                "goal": "10M lines: raglabel wall <= 1/5 of pytrec_eval's, and lower peak memory",
                "measured": f"{rag_wall:.2f}s vs {ref_wall:.2f}s (x{rag_wall / ref_wall:.2f}), "
                f"{rag_peak:.0f} vs {ref_peak:.0f} MiB",
                "met": rag_wall <= ref_wall / 5 and rag_peak < ref_peak,
            }
        )
    rag, ref = find("small: nDCG", "raglabel"), find("small: nDCG", "pytrec_eval")
    if rag and ref:
        rag_wall, ref_wall = rag.wall() or 0.0, ref.wall() or 0.0
        results.append(
            {
                "goal": "100k lines: raglabel's whole process no slower than pytrec_eval's",
                "measured": f"{rag_wall:.2f}s vs {ref_wall:.2f}s (x{rag_wall / ref_wall:.2f})",
                "met": rag_wall <= ref_wall,
            }
        )
    multi = find("multi:", "raglabel")
    if multi:
        compute = multi.compute()
        results.append(
            {
                "goal": "set metrics, 10 runs x 10,000 queries: under 2 s after loading",
                "measured": "no --timings output" if compute is None else f"{compute:.3f}s",
                "met": None if compute is None else compute < 2.0,
            }
        )
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = make_parser(__doc__)
    add_size(parser, SIZES, "small")
    add_repeat(parser, "timed runs per command (default: small 5, large 1, multi 3)")
    parser.add_argument(
        "--tools",
        default=",".join(ALL_TOOLS),
        help=f"comma-separated subset of {','.join(ALL_TOOLS)}",
    )
    args = parse(parser, argv)
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    unknown = sorted(set(tools) - set(ALL_TOOLS))
    if unknown:
        parser.error(f"unknown tools: {', '.join(unknown)}")
    sizes = chosen_sizes(args, SIZES)

    started = datetime.now(UTC)
    with tempfile.TemporaryDirectory(prefix="numba-cache-") as numba_dir:
        bench = Bench(tools, Path(numba_dir))
        if "raglabel" in tools and not bench.timings:
            print("raglabel eval has no --timings: load/compute left empty", file=sys.stderr)
        for size in sizes:
            ds = generate(size)
            repeats = args.repeat or DEFAULT_REPEATS[size]
            print(f"{size}: {repeats} timed run(s) per command", file=sys.stderr)
            bench.run_dataset(ds, repeats)

    rows = bench.rows
    checks_text, checks = cross_check(rows)
    goal_results = goals(rows)
    print()
    print(table(rows))
    print()
    print("Mean values (cross-check against pytrec_eval, tolerance 1e-6):")
    print()
    print(checks_text)
    print_goals([(goal["met"], f"{goal['goal']}: {goal['measured']}") for goal in goal_results])

    report = {
        "started": started.isoformat(timespec="seconds"),
        "machine": machine(versions=versions()),
        "sizes": {size: asdict(SPECS[size]) for size in sizes},
        "rows": [
            {
                **asdict(row),
                "wall_s_median": row.wall(),
                "peak_mib_max": row.peak(),
                "load_s_median": row.load(),
                "compute_s_median": row.compute(),
            }
            for row in rows
        ],
        "cross_check": checks,
        "goals": goal_results,
    }
    out = write_results(f"bench-{utc_stamp(started)}-{'-'.join(sizes)}", report)
    print(f"\nresults: {out}")
    failed = any(row.error for row in rows)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
