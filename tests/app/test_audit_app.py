"""The grading app with an audit sample, through Pilot: ``g`` serves the drawn queries
first, in draw order, and the status line shows ``audit N/M complete`` as grades land;
without a draw the status line is as it was."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from raglabel.session.options import AppOptions
from raglabel.storage.audit import draw
from raglabel.storage.project import Project
from raglabel.tui.app import GradingApp, create_app
from raglabel.tui.screens.grade import GradeScreen
from raglabel.tui.widgets.status import SaveMark

ME = "ann"  # the demo annotator (tests/conftest.py)
SIZE = (140, 40)


def status(screen: GradeScreen) -> str:
    return str(screen.query_one(SaveMark).render())


async def started(app: GradingApp, pilot: Pilot[Any], q: int) -> GradeScreen:
    await pilot.pause()
    while not app.session.runs_scored:
        await pilot.pause(0.02)
    app.open_query(q)
    await pilot.pause()
    assert isinstance(app.screen, GradeScreen)
    return app.screen


async def test_the_queue_key_serves_the_drawn_queries_and_the_status_line_counts_them(
    demo_db: Path,
) -> None:
    with Project.open(demo_db) as project:
        members = list(draw(project, 2, seed=5).draw.drawn)
    app = create_app(AppOptions(project=demo_db, annotator=ME))
    async with app.run_test(size=SIZE) as pilot:
        ext = [q.ext_id for q in app.session.catalog.queries]
        start = next(q for q, qid in enumerate(ext) if qid not in members)
        screen = await started(app, pilot, start)
        assert status(screen) == "audit 0/2 complete"
        await pilot.press("g")
        assert ext[screen.qi] == members[0]
        served = 0
        while ext[screen.qi] == members[0]:
            expected = app.session.audit_hole(screen.qi)
            assert expected is not None and screen.current == expected.pid
            await pilot.press("3")
            served += 1
            await pilot.press("g")
            await pilot.pause()
        assert served > 0
        # The first drawn query is complete; the queue went on to the second.
        assert ext[screen.qi] == members[1]
        assert status(screen) == "audit 1/2 complete"
        # A grade's confirmation comes after the count, which stays in view.
        await pilot.press("4")
        await pilot.pause()
        line = status(screen)
        assert line.startswith("✓ saved ") and line.endswith(" · audit 1/2 complete")


async def test_without_a_draw_the_status_line_shows_no_audit(demo_db: Path) -> None:
    app = create_app(AppOptions(project=demo_db, annotator=ME))
    async with app.run_test(size=SIZE) as pilot:
        screen = await started(app, pilot, 25)
        assert status(screen) == ""
        await pilot.press("3")
        await pilot.pause()
        assert status(screen).startswith("✓ saved ")
