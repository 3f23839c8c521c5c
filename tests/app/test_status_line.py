"""The status line is one line high: after a key, what it says of that key comes first,
whole, and what the line always shows (the assignment, the audit) is cut at the right
edge with an ellipsis when both do not fit."""

from __future__ import annotations

from textual.app import App, ComposeResult

from raglabel.tui.widgets.status import SaveMark


class Host(App[None]):
    def compose(self) -> ComposeResult:
        yield SaveMark()


async def test_the_message_comes_first_and_what_is_kept_is_cut() -> None:
    app = Host()
    async with app.run_test(size=(60, 3)) as pilot:
        mark = app.query_one(SaveMark)
        mark.keep("your assignment: 0 of 2 queries done")
        await pilot.pause()
        assert mark.render_line(0).text.rstrip() == "your assignment: 0 of 2 queries done"
        mark.saved("q27 / kb-0373 = 3 (partial) · event 424")
        await pilot.pause()
        line = mark.render_line(0).text
        assert line.startswith("✓ saved q27 / kb-0373 = 3 (partial) · event 424 · your")
        assert line.rstrip().endswith("…") and len(line) == 60
        assert mark.size.height == 1
