"""What the benchmarks share: timing a child process (wall clock and peak memory), the
medians and percentiles of repeats, markdown tables and goal lines, the common options,
the machine's description and the results file.

The benchmark scripts import it as ``common`` (``python benchmarks/run.py`` puts this
folder first on sys.path). The per-tool scripts in tools/ do not: whatever they import
counts in their own timed start.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS_DIR = HERE / "results"

#: The packages whose versions every results file records.
PACKAGES = ("raglabel", "pytrec-eval-terrier", "ranx", "numba", "numpy", "polars")


# -- timing a child process ------------------------------------------------------------


@dataclass
class Sample:
    """One run of a child process."""

    wall_s: float
    peak_mib: float
    exit_code: int
    stdout: str
    stderr: str
    load_s: float | None = None
    compute_s: float | None = None

    def failure(self) -> str:
        """The exit code and the last lines the child wrote to stderr."""
        tail = "\n".join(self.stderr.strip().splitlines()[-5:])
        return f"exit {self.exit_code}: {tail}"


def measure(argv: Sequence[str], env: dict[str, str] | None = None) -> Sample:
    """Run ``argv`` once: the wall clock around the child, and that child's peak RSS."""
    # Output goes to files, not pipes: wait4 blocks, and a child filling a pipe would hang.
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        child = subprocess.Popen(list(argv), stdout=out, stderr=err, env=env)
        # wait4 on this pid gives this child's own rusage, not a max over all children.
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        stderr = err.read().decode(errors="replace")
    # Linux reports ru_maxrss in KiB.
    return Sample(wall, usage.ru_maxrss / 1024, child.returncode, stdout, stderr)


class CommandError(Exception):
    """A child process that had to succeed did not."""


@dataclass
class Row:
    """One (case, tool) line of a table: every repeat of the same command."""

    case: str
    tool: str
    argv: list[str]
    samples: list[Sample] = field(default_factory=list)
    means: dict[str, float] | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return bool(self.samples) and self.error is None

    def wall(self) -> float | None:
        """The median wall time of the repeats."""
        return statistics.median(s.wall_s for s in self.samples) if self.ok else None

    def peak(self) -> float | None:
        """The largest peak memory of the repeats."""
        return max(s.peak_mib for s in self.samples) if self.ok else None

    def _median_of(self, values: list[float | None]) -> float | None:
        present = [v for v in values if v is not None]
        return statistics.median(present) if self.ok and present else None

    def load(self) -> float | None:
        return self._median_of([s.load_s for s in self.samples])

    def compute(self) -> float | None:
        return self._median_of([s.compute_s for s in self.samples])


def run_row(row: Row, env: dict[str, str] | None = None) -> Sample:
    """Run the row's command once more, saying so on stderr; a failure is set on the row.

    The sample is returned, not added to the row: what to keep of it is the caller's.
    """
    print(f"  {row.case} | {row.tool} ...", end="", file=sys.stderr, flush=True)
    sample = measure(row.argv, env)
    print(f" {sample.wall_s:.2f}s {sample.peak_mib:.0f} MiB", file=sys.stderr)
    if sample.exit_code != 0:
        row.error = sample.failure()
    return sample


def warm_page_cache(paths: Sequence[Path]) -> None:
    # The first tool to run would otherwise pay for the disk reads of every tool after it.
    for path in paths:
        with open(path, "rb") as handle:
            while handle.read(64 << 20):
                pass


# -- raglabel as a child ---------------------------------------------------------------


def raglabel_command() -> list[str]:
    # The console script next to this interpreter is the one the venv installed.
    script = Path(sys.executable).parent / "raglabel"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "raglabel"]


def parse_timings(stderr: str) -> tuple[float | None, float | None]:
    """The load and compute seconds of raglabel's ``--timings`` line, if there is one."""
    for line in stderr.splitlines():
        if not line.startswith("timings:"):
            continue
        fields = dict(part.split("=", 1) for part in line.split()[1:] if "=" in part)
        try:
            return float(fields["load"].rstrip("s")), float(fields["compute"].rstrip("s"))
        except (KeyError, ValueError):
            return None, None
    return None, None


# -- in-process latencies --------------------------------------------------------------


def nearest_rank(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def percentiles(
    values: Sequence[float], quantiles: Sequence[float] = (0.5, 0.95, 0.99)
) -> dict[str, float]:
    """Count, nearest-rank percentiles (``p50_ms``, ...), max and mean of milliseconds."""
    found: dict[str, float] = {"count": len(values)}
    for q in quantiles:
        found[f"p{round(q * 100)}_ms"] = nearest_rank(values, q)
    found["max_ms"] = max(values)
    found["mean_ms"] = statistics.fmean(values)
    return found


def spread(stats: dict[str, float], shown: Sequence[str] = ("p50", "p95", "p99")) -> str:
    """``p50 1.00 ms, p95 2.00 ms, ..., max 3.0 ms`` from what percentiles() gives."""
    parts = [f"{name} {stats[f'{name}_ms']:.2f} ms" for name in shown]
    return ", ".join([*parts, f"max {stats['max_ms']:.1f} ms"])


# -- printing --------------------------------------------------------------------------


def markdown_table(head: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cells) + " |" for cells in rows]
    return "\n".join(lines)


def verdict(met: bool | None) -> str:
    return {True: "MET", False: "NOT MET", None: "UNKNOWN"}[met]


def print_goals(goals: Sequence[tuple[bool | None, str]]) -> None:
    """A ``Goals:`` block, one ``[MET]`` or ``[NOT MET]`` line a goal; nothing if none."""
    if not goals:
        return
    print()
    print("Goals:")
    for met, text in goals:
        print(f"  [{verdict(met)}] {text}")


# -- options ---------------------------------------------------------------------------


def make_parser(doc: str | None) -> argparse.ArgumentParser:
    """A parser described by the first line of the script's docstring."""
    return argparse.ArgumentParser(description=doc.splitlines()[0] if doc else None)


def add_size(parser: argparse.ArgumentParser, sizes: Sequence[str], default: str) -> None:
    parser.add_argument("--size", choices=[*sizes, "all"], default=default)


def chosen_sizes(args: argparse.Namespace, sizes: Sequence[str]) -> list[str]:
    return list(sizes) if args.size == "all" else [args.size]


def add_repeat(parser: argparse.ArgumentParser, what: str, default: int | None = None) -> None:
    """``--repeat N``: how many times ``what`` runs; checked by parse()."""
    parser.add_argument("--repeat", type=int, default=default, metavar="N", help=what)


def add_grades(parser: argparse.ArgumentParser, default: int, what: str) -> None:
    """``--grades N``, checked by parse()."""
    parser.add_argument(
        "--grades", type=int, default=default, metavar="N", help=f"{what} (default {default})"
    )


def add_keep(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--keep", action="store_true", help="keep the scratch directory with the projects"
    )


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """The options, with ``--repeat`` and ``--grades`` (where given) at least 1."""
    args = parser.parse_args(argv)
    for name in ("repeat", "grades"):
        value = getattr(args, name, None)
        if value is not None and value < 1:
            parser.error(f"--{name} must be at least 1")
    return args


@contextmanager
def scratch_directory(prefix: str, keep: bool) -> Iterator[Path]:
    """A temporary directory, removed afterwards unless ``keep`` (then its name is said)."""
    scratch = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield scratch
    finally:
        if keep:
            print(f"projects kept in {scratch}", file=sys.stderr)
        else:
            shutil.rmtree(scratch, ignore_errors=True)


# -- the results file ------------------------------------------------------------------


def versions(*extra: str) -> dict[str, str]:
    """Python's version and those of PACKAGES and ``extra`` that are installed."""
    found = {"python": platform.python_version()}
    for package in (*PACKAGES, *extra):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    return found


def raglabel_path() -> str | None:
    """The folder of the raglabel that is imported (PYTHONPATH can pin a snapshot)."""
    spec = importlib.util.find_spec("raglabel")
    return None if spec is None or spec.origin is None else str(Path(spec.origin).parent)


def machine(**more: Any) -> dict[str, Any]:
    """The platform and the number of CPUs, then ``more``."""
    return {"platform": platform.platform(), "cpus": os.cpu_count(), **more}


def utc_stamp(when: datetime) -> str:
    """``when`` (UTC) as results file names have it: 20240611T120000Z."""
    return when.strftime("%Y%m%dT%H%M%SZ")


def write_results(name: str, report: dict[str, Any]) -> Path:
    """``report`` as results/NAME.json; its path."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    out = RESULTS_DIR / f"{name}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    return out
