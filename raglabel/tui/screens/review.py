"""Every passage the annotator skipped or flagged, with the reason or note: filter, open."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, cast

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static

from raglabel.session.grading import ReviewRow
from raglabel.tui.keys import bind
from raglabel.tui.widgets.format import GRADE_STYLES

if TYPE_CHECKING:
    from raglabel.tui.app import GradingApp


def matches(row: ReviewRow, needle: str) -> bool:
    """A filter word matches the kind ("skip", "flag"), the ids or the note."""
    needle = needle.casefold()
    fields = (row.kind, row.query_ext, row.passage_ext, row.note)
    return all(any(word in f.casefold() for f in fields) for word in needle.split())


class ReviewScreen(Screen[None]):
    # Focused as the screen is pushed, not only once mounted: keys typed ahead ("v ?")
    # must not land in the hidden filter box.
    AUTO_FOCUS = "#review"
    BINDINGS: ClassVar[list[BindingType]] = [
        bind("filter", "filter"),
        bind("down", "down", show=False),
        bind("up", "up", show=False),
        bind("queries", "app.queries"),
        Binding("escape", "back", "back"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.text_filter = ""
        self.every: list[ReviewRow] = []
        self.shown: list[ReviewRow] = []

    @property
    def glapp(self) -> GradingApp:
        return cast("GradingApp", self.app)

    def compose(self) -> ComposeResult:
        yield Static(id="review-head")
        yield Input(
            placeholder="filter: skip, flag, a query, a passage or words of the note",
            id="review-filter",
        )
        yield DataTable(id="review", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#review", DataTable)
        table.add_column("mark", key="kind", width=5)
        table.add_column("query", key="query")
        table.add_column("passage", key="passage")
        table.add_column("grade", key="grade", width=5)
        table.add_column("reason or note", key="note")
        self.query_one("#review-filter", Input).display = False
        self.refill()
        table.focus()

    def on_screen_resume(self) -> None:
        self.refill()

    def refill(self) -> None:
        table = self.query_one("#review", DataTable)
        keep = table.cursor_row
        self.every = self.glapp.session.review()
        self.shown = [r for r in self.every if matches(r, self.text_filter)]
        table.clear()
        for row in self.shown:
            grade = (
                Text(str(row.grade), style=GRADE_STYLES[row.grade])
                if row.grade is not None
                else Text("·", style="dim")
            )
            table.add_row(
                Text(row.kind, style="yellow" if row.kind == "skip" else "red"),
                row.query_ext,
                row.passage_ext,
                grade,
                row.note or Text("(no note)", style="dim"),
            )
        if self.shown:
            table.move_cursor(row=min(keep, len(self.shown) - 1))
        skips = sum(r.kind == "skip" for r in self.every)
        head = Text.assemble(
            ("Review ", "bold"),
            f"{skips} skipped, {len(self.every) - skips} flagged by "
            f"{self.glapp.session.annotator} · ",
            ("Enter opens one", "dim"),
            (
                f" · filter {self.text_filter!r}: {len(self.shown)} shown"
                if self.text_filter
                else "",
                "yellow",
            ),
        )
        if not self.every:
            head.append(" · nothing skipped or flagged yet", style="dim")
        self.query_one("#review-head", Static).update(head)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if 0 <= event.cursor_row < len(self.shown):
            row = self.shown[event.cursor_row]
            self.glapp.open_query(row.query, row.pid)

    def action_down(self) -> None:
        self.query_one("#review", DataTable).action_cursor_down()

    def action_up(self) -> None:
        self.query_one("#review", DataTable).action_cursor_up()

    def action_filter(self) -> None:
        box = self.query_one("#review-filter", Input)
        box.display = True
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.text_filter = event.value.strip()
        self.refill()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.query_one("#review", DataTable).focus()

    def action_back(self) -> None:
        box = self.query_one("#review-filter", Input)
        if box.has_focus or self.text_filter:
            box.value = ""
            box.display = False
            self.text_filter = ""
            self.refill()
            self.query_one("#review", DataTable).focus()
            return
        self.app.pop_screen()
