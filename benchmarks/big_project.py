"""The grading app on a big project: 100,000 queries x 100 candidates x 5 runs.

speed.py's `project` part. The project is the `bigproject` dataset imported under the
annotator app.py uses, without a corpus (queries and passages are shown by id), built
once into benchmarks/data/bigproject/ and reused while its stamp matches.

- Start-up: app.py's start-up child (whole process, to the Queries table painted and
  the event loop free), as app.py measures it.
- In one Pilot session on a copy: `o` (sort) and a filter typed into the filter box and
  applied with Enter, each from the key to the app idle again; Enter on a query to the
  Grade screen shown; grade keys to the metrics panel updated (app.py's probe).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app import ANNOTATOR, TERMINAL, _first_after, probed, startup
from common import raglabel_command, warm_page_cache
from generate import Dataset, generate

DATASET = "bigproject"
# Filters a person would type: an id prefix, a whole id, one that matches nothing.
FILTERS = ("123", "99999", "5000", "nothing-like-this")


@dataclass
class Latencies:
    sort_ms: list[float] = field(default_factory=list)
    filter_ms: list[float] = field(default_factory=list)
    open_ms: list[float] = field(default_factory=list)
    grade_ms: list[float] = field(default_factory=list)


def project(env: dict[str, str]) -> Path:
    """The big project, built unless a current one is there."""
    from raglabel.storage.schema import SCHEMA_VERSION

    ds: Dataset = generate(DATASET)
    db = ds.directory / "project.db"
    stamp_file = ds.directory / "project.json"
    wanted = {
        "dataset": json.loads(ds.stamp_file.read_text()),
        "annotator": ANNOTATOR,
        "schema_version": SCHEMA_VERSION,
    }
    if db.is_file() and stamp_file.is_file():
        stamp = json.loads(stamp_file.read_text())
        if stamp.get("params") == wanted and stamp.get("bytes") == db.stat().st_size:
            return db
    stamp_file.unlink(missing_ok=True)
    building = db.with_name("project.building.db")
    for path in (db, building):
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
    warm_page_cache([ds.qrels, *ds.runs.values()])
    raglabel = raglabel_command()
    print(f"  building {db} (a few minutes) ...", file=sys.stderr)
    subprocess.run([*raglabel, "init", str(building)], env=env, check=True, capture_output=True)
    argv = [*raglabel, "import", str(building), "--qrels", str(ds.qrels), "--annotator", ANNOTATOR]
    for name, path in ds.runs.items():
        argv += ["--run", f"{name}={path}"]
    subprocess.run(argv, env=env, check=True, capture_output=True)
    building.replace(db)
    stamp_file.write_text(json.dumps({"params": wanted, "bytes": db.stat().st_size}) + "\n")
    return db


def copy_of(db: Path, scratch: Path) -> Path:
    target = scratch / "bigproject.db"
    shutil.copyfile(db, target)
    return target


async def _session(db: Path, rounds: int, grades: int) -> Latencies:
    from raglabel.session.options import AppOptions
    from raglabel.tui.app import create_app
    from raglabel.tui.screens.grade import GradeScreen
    from raglabel.tui.screens.queries import QueriesScreen

    found = Latencies()
    app = create_app(AppOptions(project=db, annotator=ANNOTATOR))
    async with app.run_test(size=TERMINAL) as pilot:
        await pilot.pause()
        if not isinstance(app.screen, QueriesScreen):
            raise RuntimeError(f"the app opened on {type(app.screen).__name__}, not Queries")

        async def timed(key: str, into: list[float]) -> None:
            started = time.perf_counter()
            await pilot.press(key)
            into.append((time.perf_counter() - started) * 1000)
            print(f"    {key}: {into[-1]:.0f} ms", file=sys.stderr)

        for round_ in range(rounds):
            await timed("o", found.sort_ms)
            await pilot.press("slash")
            await pilot.press(*FILTERS[round_ % len(FILTERS)])
            await timed("enter", found.filter_ms)
            await pilot.press("escape")
        with probed() as probe:
            for round_ in range(rounds):
                await pilot.press(*(["j"] * (round_ % 7)))
                await timed("enter", found.open_ms)
                if not isinstance(app.screen, GradeScreen):
                    raise RuntimeError("Enter on the Queries screen opened no query")
                for step in range(grades // rounds):
                    probe.reset()
                    started = time.perf_counter()
                    await pilot.press("12345"[(round_ + step) % 5])
                    panel = _first_after(probe.panel, started)
                    if panel is None:
                        raise RuntimeError("a grade key did not update the metrics panel")
                    found.grade_ms.append((panel - started) * 1000)
                await pilot.press("q")
    return found


def latencies(db: Path, rounds: int, grades: int) -> Latencies:
    return asyncio.run(_session(db, rounds, grades))


def start(db: Path) -> tuple[float, dict[str, Any]]:
    """Whole-process start-up seconds and the child's marks."""
    measured = startup(db)
    return measured.wall_s, measured.marks
