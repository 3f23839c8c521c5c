"""``raglabel label --locked`` (how ``raglabel serve`` starts every browser tab): the
annotator stays the one named, and nothing writes outside the project file."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from raglabel.session.options import AppOptions
from raglabel.tui.app import create_app
from raglabel.tui.commands import LabelCommands
from raglabel.tui.screens.prompt import PromptScreen

if TYPE_CHECKING:
    from cli_helpers import Cli


async def test_a_locked_app_neither_switches_annotator_nor_exports_nor_judges(
    demo_db: Path,
) -> None:
    app = create_app(AppOptions(project=demo_db, annotator="alice", locked=True))
    async with app.run_test(size=(120, 32)) as pilot:
        await pilot.pause()
        app.action_switch_annotator()
        await pilot.pause()
        app.action_export()
        await pilot.pause()
        app.judge_query(0)  # its calls would be paid with the server's key
        await pilot.pause()
        assert not isinstance(app.screen, PromptScreen) and app.judging is None
        assert app.session.annotator == "alice"
        notes = [str(n.message) for n in app._notifications]
        assert sum("grades as alice only" in note for note in notes) == 3
        assert any("asking the judge" in note for note in notes)
        app.open_query(0)
        await pilot.pause()
        names = [name for name, _, _ in LabelCommands(app.screen)._commands()]
        assert not any("Switch annotator" in n or "Export" in n for n in names)
        assert not any(n.startswith("Judge query") for n in names)
        assert "Reload grades" in names and any(n.startswith("Accept all") for n in names)
    assert not list(demo_db.parent.glob("*.qrels.txt"))


async def test_an_unlocked_app_still_offers_both(demo_db: Path) -> None:
    app = create_app(AppOptions(project=demo_db, annotator="alice"))
    async with app.run_test(size=(120, 32)) as pilot:
        await pilot.pause()
        names = [name for name, _, _ in LabelCommands(app.screen)._commands()]
        assert "Switch annotator" in names and "Export grades as TREC qrels" in names
        app.action_switch_annotator()
        await pilot.pause()
        assert isinstance(app.screen, PromptScreen)


def test_locked_needs_a_name_and_is_not_the_leads_view(demo_db: Path, cli: Cli) -> None:
    code, _, err = cli("label", demo_db, "--locked")
    assert code == 2 and "--locked needs --annotator NAME" in err
    code, _, err = cli("label", demo_db, "--locked", "--annotator", "a", "--adjudicate")
    assert code == 2 and "--adjudicate" in err
