"""The lead's view: pairs whose annotators differ by two grades or more; 1-5 settles one."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, cast

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from raglabel.session.grading import Disagreement
from raglabel.tui.keys import bind
from raglabel.tui.widgets.format import GRADE_STYLES
from raglabel.tui.widgets.passage_view import PassageView
from raglabel.tui.widgets.status import SaveMark

if TYPE_CHECKING:
    from raglabel.tui.app import GradingApp


def _grades(d: Disagreement) -> Text:
    out = Text()
    for name, grade in sorted(d.grades.items()):
        out.append(f"{name}:", style="dim")
        out.append(f"{grade} ", style=GRADE_STYLES[grade])
    return out


class AdjudicationScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        *(bind(f"grade_{g}", f"settle({g})") for g in (1, 2, 3, 4, 5)),
        bind("queries", "back"),
        Binding("escape", "back", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.items: list[Disagreement] = []

    @property
    def glapp(self) -> GradingApp:
        return cast("GradingApp", self.app)

    def compose(self) -> ComposeResult:
        yield Static(id="adjudication-head")
        yield DataTable(id="adjudication", cursor_type="row", zebra_stripes=True)
        yield Static(id="adjudication-query")
        yield PassageView(id="passage")
        yield SaveMark(id="status")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("query", "passage", "spread", "grades", "final")
        self.fill()
        table.focus()

    def fill(self) -> None:
        self.items = self.glapp.session.disagreements()
        table = self.query_one(DataTable)
        table.clear()
        for i, d in enumerate(self.items):
            final = Text("·", style="dim") if d.final is None else Text(str(d.final), "bold")
            table.add_row(d.query, d.passage, str(d.spread), _grades(d), final, key=str(i))
        head = Text.assemble(
            ("Adjudication ", "bold"),
            f"{len(self.items)} pairs whose annotators differ by 2 or more · ",
            (
                f"1-5 sets the final grade as {self.glapp.session.annotator};"
                " it wins over the median",
                "dim",
            ),
        )
        self.query_one("#adjudication-head", Static).update(head)
        if not self.items:
            self.query_one("#adjudication-query", Static).update("")
            self.query_one(PassageView).show(None, "")

    def _current(self) -> Disagreement | None:
        table = self.query_one(DataTable)
        if not self.items or table.cursor_row >= len(self.items):
            return None
        return self.items[table.cursor_row]

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        d = self._current()
        if d is None:
            return
        session = self.glapp.session
        pid = session.catalog.passage_pid(d.passage)
        q = session.catalog.query_by_ext(d.query)
        query_text = "" if q is None else session.catalog.queries[q].text
        # The passage is judged against the question: it heads the passage, as on the
        # Grade screen.
        self.query_one("#adjudication-query", Static).update(
            Text.assemble((f"{d.query} ", "bold"), query_text)
        )
        self.query_one(PassageView).show(None if pid is None else session.passage(pid), query_text)

    def action_settle(self, grade: int) -> None:
        d = self._current()
        if d is None:
            return
        row = self.query_one(DataTable).cursor_row
        try:
            change = self.glapp.session.adjudicate(d.query, d.passage, grade)
        except Exception as exc:
            self.query_one(SaveMark).failed(str(exc))
            return
        self.glapp.changed(change)
        self.query_one(SaveMark).saved(f"{d.query} / {d.passage}: final grade {grade}")
        self.fill()
        self.query_one(DataTable).move_cursor(row=min(row + 1, max(len(self.items) - 1, 0)))

    def undone(self, what: str) -> None:
        """An undo of a final grade (or any grade) changes the disagreements: listed anew."""
        row = self.query_one(DataTable).cursor_row
        self.fill()
        self.query_one(DataTable).move_cursor(row=min(row, max(len(self.items) - 1, 0)))
        self.query_one(SaveMark).saved(f"undo: {what}")

    def action_back(self) -> None:
        self.app.pop_screen()
