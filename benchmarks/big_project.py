"""The grading app on a big project: 100,000 queries x 100 candidates x 5 runs.

speed.py's `project` part. The project is the `bigproject` dataset imported under the
annotator app.py uses, without a corpus (queries and passages are shown by id), built
once into benchmarks/data/bigproject/ and reused while its stamp matches.

- Start-up: app.py's start-up child (whole process, to the Queries table painted and
  the event loop free), as app.py measures it.
- In one session on a copy (Textual's test harness, keys sent through the driver as a
  terminal's are): `o` (sort) and a filter typed into the filter box and applied with
  Enter, each from the key to the Queries table painted with the new rows; Enter on a
  query to the Grade screen's passage list painted; grade keys to the metrics panel
  updated (app.py's probe).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from app import (
    ANNOTATOR,
    TERMINAL,
    _first_after,
    after,
    fresh_copy,
    patched,
    probed,
    startup,
)
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
    return fresh_copy(db, scratch / "bigproject.db")


async def _session(db: Path, rounds: int, grades: int) -> Latencies:
    """Keys go to the app the way a terminal's do (the driver's queue), and each is timed
    to the paint that shows its answer: the Queries table's first paint after the screen
    refilled it (sort, filter), the passage list's first paint on the Grade screen (open),
    the metrics panel updated (grade keys, each sent once the app is idle after the one
    before, as an annotator reads the next passage first). Pilot's ``press`` would add
    its wait for the whole process to go idle, background reader included: up to a
    second a wait, twice a key, whatever the app does."""
    from textual import events

    from raglabel.session.options import AppOptions
    from raglabel.tui.app import create_app
    from raglabel.tui.screens.grade import GradeScreen
    from raglabel.tui.screens.queries import QueriesScreen
    from raglabel.tui.widgets.passage_list import PassageList
    from raglabel.tui.widgets.query_table import QueryTable

    found = Latencies()
    # When each method last returned (perf_counter), appended by the wrappers.
    refilled: list[float] = [0.0]
    table_painted: list[float] = [0.0]
    list_painted: list[float] = [0.0]
    patches: list[tuple[type, str, Any]] = [
        (QueriesScreen, "refill", after(QueriesScreen.refill, refilled)),
        (QueryTable, "render_lines", after(QueryTable.render_lines, table_painted)),
        (PassageList, "render_lines", after(PassageList.render_lines, list_painted)),
    ]
    app = create_app(AppOptions(project=db, annotator=ANNOTATOR))
    with patched(patches):
        async with app.run_test(size=TERMINAL) as pilot:
            await pilot.pause()
            if not isinstance(app.screen, QueriesScreen):
                raise RuntimeError(f"the app opened on {type(app.screen).__name__}, not Queries")
            driver = app._driver
            assert driver is not None

            def send(key: str) -> None:
                char = {"enter": "\r", "escape": "\x1b", "slash": "/"}.get(key, key)
                event = events.Key(key, char if len(char) == 1 else None)
                event.set_sender(app)
                driver.send_message(event)

            async def until(done: Callable[[], bool], what: str) -> None:
                started = time.perf_counter()
                while not done():
                    await asyncio.sleep(0.001)
                    if time.perf_counter() - started > 600:
                        raise RuntimeError(f"{what}: nothing painted in 600 s")

            async def timed(key: str, into: list[float], painted: Callable[[float], bool]) -> None:
                started = time.perf_counter()
                send(key)
                await until(lambda: painted(started), key)
                into.append((painted_at[0] - started) * 1000)
                print(f"    {key}: {into[-1]:.0f} ms", file=sys.stderr)

            painted_at = [0.0]

            def table_after(started: float) -> bool:
                done = refilled[-1] > started and table_painted[-1] > refilled[-1]
                painted_at[0] = table_painted[-1]
                return done

            def list_after(started: float) -> bool:
                done = isinstance(app.screen, GradeScreen) and list_painted[-1] > started
                painted_at[0] = list_painted[-1]
                return done

            for round_ in range(rounds):
                await timed("o", found.sort_ms, table_after)
                await asyncio.sleep(0.1)
                send("slash")
                for char in FILTERS[round_ % len(FILTERS)]:
                    send("minus" if char == "-" else char)
                    await asyncio.sleep(0.02)
                await timed("enter", found.filter_ms, table_after)
                await asyncio.sleep(0.1)
                send("escape")
                await asyncio.sleep(0.3)
            with probed() as probe:
                for round_ in range(rounds):
                    for _ in range(round_ % 7):
                        send("j")
                    await asyncio.sleep(0.1)
                    await timed("enter", found.open_ms, list_after)
                    for step in range(grades // rounds):
                        probe.reset()
                        started = time.perf_counter()
                        send("12345"[(round_ + step) % 5])
                        await until(partial(_updated, probe.panel, started), "grade key")
                        panel = _first_after(probe.panel, started)
                        assert panel is not None
                        found.grade_ms.append((panel - started) * 1000)
                        # As an annotator reads the next passage before grading it: the
                        # next key waits for this one's repaint (untimed), instead of
                        # landing while the passage list is still being redrawn.
                        await pilot.pause()
                    send("q")
                    await until(lambda: isinstance(app.screen, QueriesScreen), "back to Queries")
                    await asyncio.sleep(0.1)
    return found


def _updated(times: list[float], started: float) -> bool:
    return _first_after(times, started) is not None


def latencies(db: Path, rounds: int, grades: int) -> Latencies:
    return asyncio.run(_session(db, rounds, grades))


def start(db: Path) -> tuple[float, dict[str, Any]]:
    """Whole-process start-up seconds and the child's marks."""
    measured = startup(db)
    return measured.wall_s, measured.marks
