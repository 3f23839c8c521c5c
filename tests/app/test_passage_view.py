"""The passage view wraps its lines as a Static would, scrolls a long passage, and
starts each passage at its top, without a layout pass of the screen for a new passage,
long or short: its scrollbar is always there, a bare track while the passage fits."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from rich.text import Text
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.strip import Strip
from textual.widgets import Static

from raglabel.session.catalog import Passage
from raglabel.session.suggestions import Suggestion
from raglabel.tui.widgets.passage_view import PassageView, highlighted

LONG = " ".join(f"word{i} of the long passage about backups." for i in range(40))
SHORT = "Short: fits at once."


class Host(App[None]):
    """The passage view beside a Static holding the same passage text, same width."""

    CSS = "PassageView { height: 1fr; } #same { height: auto; display: none; }"

    def compose(self) -> ComposeResult:
        yield PassageView(id="passage")
        yield Static(id="same")


def _passage(text: str) -> Passage:
    return Passage(pid=1, ext_id="kb-1", title="Backups", text=text)


def _cells(strip: Strip) -> list[tuple[str, object]]:
    """Each character with its style (Textual's offset meta aside), trailing blanks cut."""
    cells = [(char, segment.style) for segment in strip for char in segment.text]
    while cells and cells[-1][0] == " ":
        cells.pop()
    return [(char, style.clear_meta_and_links() if style else None) for char, style in cells]


def _lines(view: PassageView) -> list[str]:
    return [strip.text.rstrip() for strip in view._lines]


@contextlib.asynccontextmanager
async def long_passage_shown(
    size: tuple[int, int], terms: str = ""
) -> AsyncIterator[tuple[Host, Pilot[None], PassageView]]:
    """A Host app of ``size`` showing the long passage, drawn."""
    app = Host()
    async with app.run_test(size=size) as pilot:
        view = app.query_one(PassageView)
        view.show(_passage(LONG), terms)
        await pilot.pause()
        yield app, pilot, view


async def test_a_long_passage_scrolls_and_a_new_one_starts_at_its_top() -> None:
    async with long_passage_shown((40, 12), "backups") as (_, pilot, view):
        assert view.virtual_size.height == len(view._lines) > view.size.height
        assert view.show_vertical_scrollbar
        view.scroll_end(animate=False)
        await pilot.pause()
        assert view.scroll_y == view.max_scroll_y > 0
        shown = [view.render_line(y).text for y in range(view.scrollable_content_region.height)]
        assert "word39" in "".join(shown)

        view.show(_passage(SHORT), "")
        await pilot.pause()
        assert view.scroll_y == view.max_scroll_y == 0
        assert view.show_vertical_scrollbar  # kept, as a bare track: nothing to scroll
        assert view.virtual_size.height == view.scrollable_content_region.height
        assert _lines(view) == ["Short: fits at once."]


async def test_lines_wrap_as_a_static_wraps_them() -> None:
    app = Host()
    async with app.run_test(size=(40, 50)) as pilot:
        view = app.query_one(PassageView)
        view.styles.height = 20  # room for the whole text
        view.show(_passage(LONG[:600]), "backups")
        same = app.query_one("#same", Static)
        same.styles.width = 38  # beside the view's scrollbar, 2 wide
        same.display = True
        same.update(highlighted(LONG[:600], ["backups"]))
        await pilot.pause()
        assert view.scrollable_content_region.width == same.size.width == 38
        drawn = same.render_lines(same.size.region)
        assert [_cells(line) for line in view._lines] == [_cells(line) for line in drawn]


async def test_marks_and_the_judge_line_come_first_each_with_a_blank_line_after() -> None:
    app = Host()
    async with app.run_test(size=(60, 20)) as pilot:
        view = app.query_one(PassageView)
        view.show(_passage(SHORT), "")
        view.marks = Text("skipped: dup")
        view.judge = Text("judge suggests 3")
        view._changed()
        await pilot.pause()
        assert _lines(view)[:5] == ["skipped: dup", "", "judge suggests 3", "", SHORT]


async def test_a_wider_terminal_wraps_the_passage_again() -> None:
    async with long_passage_shown((40, 12)) as (_, pilot, view):
        narrow = len(view._lines)
        await pilot.resize_terminal(100, 12)
        await pilot.pause()
        assert len(view._lines) < narrow
        assert view.virtual_size.height == max(
            len(view._lines), view.scrollable_content_region.height
        )
        assert max(len(line) for line in _lines(view)) > 40


async def test_a_new_passage_of_another_length_lays_nothing_out_again() -> None:
    # A layout of the whole screen for each passage was a third of a grade's CPU; the
    # view's own size does not change, so only it is drawn again. Nor does a passage
    # that fits after one that scrolls, or the other way round: a scrollbar that came
    # and went laid the screen out twice more.
    async with long_passage_shown((40, 12)) as (app, pilot, view):
        layouts: list[object] = []
        refresh_layout = app.screen._refresh_layout

        def counted(*args: object, **kwargs: object) -> None:
            layouts.append(args)
            refresh_layout(*args, **kwargs)  # type: ignore[arg-type]

        app.screen._refresh_layout = counted  # type: ignore[method-assign]
        view.show(_passage(LONG[: len(LONG) // 2]), "backups")
        await pilot.pause()
        assert layouts == []
        assert view.virtual_size.height == len(view._lines)
        assert "word0" in view.render_line(0).text
        width = view.scrollable_content_region.width
        for text in (SHORT, LONG, SHORT):
            view.show(_passage(text), "")
            await pilot.pause()
            assert layouts == [], text
            assert view.scrollable_content_region.width == width
            assert view.render_line(0).text.startswith(text[:10])


async def test_a_passage_wrapped_ahead_is_shown_without_wrapping_again() -> None:
    async with long_passage_shown((40, 12), "backups") as (_, pilot, view):
        judged = Suggestion(grade=3, models=("m",), low=3, high=3, reason=None)
        view.prepare(_passage(SHORT), "backups", judged)
        wraps: list[int] = []
        wrapped = view._wrapped

        def counted(*args: Any) -> list[Strip]:
            wraps.append(1)
            return wrapped(*args)

        view._wrapped = counted  # type: ignore[method-assign]
        view.show(_passage(SHORT), "backups", judged)
        await pilot.pause()
        assert wraps == []
        assert _lines(view) == ["judge suggests 3 (m)", "", SHORT]
        assert view.virtual_size.height == view.scrollable_content_region.height

        # Anything else shown, or the same passage once its suggestion changed, wraps
        # anew: what was wrapped ahead is used once, for exactly what it was made from.
        view.prepare(_passage(SHORT), "backups", judged)
        del wraps[:]
        view.show(_passage(SHORT), "backups", None)
        await pilot.pause()
        assert wraps == [1] and _lines(view) == [SHORT]
        view.show(_passage(SHORT), "backups", None)
        assert wraps == [1, 1]


async def test_a_passage_wrapped_ahead_at_another_width_is_wrapped_again() -> None:
    async with long_passage_shown((40, 12)) as (_, pilot, view):
        view.prepare(_passage(LONG), "")
        narrow = list(view._ahead.lines) if view._ahead else []
        await pilot.resize_terminal(100, 12)
        await pilot.pause()
        view.show(_passage(LONG), "")
        await pilot.pause()
        assert len(view._lines) < len(narrow)
        assert max(len(line) for line in _lines(view)) > 40
