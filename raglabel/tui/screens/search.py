"""Search the whole corpus for the open query: what no run retrieved, found and graded."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, cast

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static

from raglabel.session.grading import SearchRow
from raglabel.tui.keys import bind
from raglabel.tui.widgets.format import GRADE_STYLES, cut
from raglabel.tui.widgets.passage_view import query_terms

if TYPE_CHECKING:
    from raglabel.tui.app import GradingApp


def snippet_text(snippet: str) -> Text:
    """The matching stretch, its matches (between [ and ]) picked out."""
    out = Text(no_wrap=True, overflow="ellipsis")
    for i, part in enumerate(snippet.replace("\n", " ").replace("]", "[").split("[")):
        out.append(part, style="bold reverse" if i % 2 else "")
    return out


class SearchScreen(Screen[None]):
    """Type words, Enter searches; on a hit a grade key grades it for the open query
    (it joins the query's pool), Enter opens it in the Grade screen."""

    # The hits have the focus from the push, so a grade key typed ahead ("b 3") grades
    # the first hit; with no hit, mounting hands the focus to the search box.
    AUTO_FOCUS = "#hits"
    BINDINGS: ClassVar[list[BindingType]] = [
        *(bind(f"grade_{g}", f"grade({g})", show=g in (1, 5)) for g in (1, 2, 3, 4, 5)),
        bind("filter", "edit", label="search"),
        bind("down", "down", show=False),
        bind("up", "up", show=False),
        Binding("escape", "back", "back"),
    ]

    def __init__(self, query: int) -> None:
        super().__init__()
        self.qi = query
        self.hits: list[SearchRow] = []
        self.words = ""

    @property
    def glapp(self) -> GradingApp:
        return cast("GradingApp", self.app)

    def compose(self) -> ComposeResult:
        yield Static(id="search-head")
        yield Input(placeholder="words to find in every passage (Enter searches)", id="search-box")
        yield DataTable(id="hits", cursor_type="row", zebra_stripes=True)
        yield Static(id="search-status")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#hits", DataTable)
        table.add_column("grade", key="grade", width=5)
        table.add_column("pool", key="pool", width=4)
        table.add_column("passage", key="passage")
        table.add_column("match", key="match")
        query = self.glapp.session.catalog.queries[self.qi]
        box = self.query_one("#search-box", Input)
        box.value = " ".join(query_terms(query.text))
        self.run_search(box.value)
        # With hits for the query's own words, grading can start at once; / edits them.
        (table if self.hits else box).focus()

    def on_screen_resume(self) -> None:
        self.run_search(self.words, keep=True)

    def _head(self) -> Text:
        query = self.glapp.session.catalog.queries[self.qi]
        return Text.assemble(
            ("Search the corpus for ", "bold"),
            (f"{query.ext_id} ", "bold"),
            query.text,
            "\n",
            (
                f"{len(self.hits)} passages match, best BM25 first · grade keys "
                "grade the highlighted one for this query · Enter opens it",
                "dim",
            ),
        )

    def run_search(self, words: str, *, keep: bool = False) -> None:
        self.words = words
        table = self.query_one("#hits", DataTable)
        cursor = table.cursor_row if keep else 0
        self.hits = self.glapp.session.search(self.qi, words) if words.strip() else []
        table.clear()
        for hit in self.hits:
            table.add_row(*self._cells(hit), key=str(hit.pid))
        if self.hits:
            table.move_cursor(row=min(cursor, len(self.hits) - 1))
        self.query_one("#search-head", Static).update(self._head())

    def _cells(self, hit: SearchRow) -> tuple[Text, Text, Text, Text]:
        grade = (
            Text(str(hit.grade), style=GRADE_STYLES[hit.grade])
            if hit.grade is not None
            else Text("·", style="dim")
        )
        pool = Text("yes" if hit.in_pool else "new", style="dim" if hit.in_pool else "cyan")
        name = Text(hit.ext_id, style="bold")
        if hit.title:
            name.append(f"  {cut(hit.title, 40)}", style="dim")
        return grade, pool, name, snippet_text(hit.snippet)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.run_search(event.value)
        if self.hits:
            self.query_one("#hits", DataTable).focus()
        else:
            self.query_one("#search-status", Static).update(
                Text("No passage holds any of these words.", style="dim")
            )

    def _current(self) -> SearchRow | None:
        table = self.query_one("#hits", DataTable)
        if not self.hits or not table.has_focus:
            return None
        return self.hits[min(table.cursor_row, len(self.hits) - 1)]

    def action_grade(self, grade: int) -> None:
        hit = self._current()
        status = self.query_one("#search-status", Static)
        if hit is None:
            return
        try:
            change = self.glapp.session.grade(self.qi, hit.pid, grade)
        except Exception as exc:
            status.update(Text.assemble(("✗ NOT saved ", "bold white on red"), str(exc)))
            self.app.bell()
            return
        self.glapp.changed(change)
        status.update(
            Text.assemble(
                ("✓ saved ", "bold green"),
                f"{hit.ext_id} = {grade} for this query · event {change.event_id}",
            )
        )
        self.run_search(self.words, keep=True)
        self.action_down()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        hit = self._current()
        if hit is not None:
            self.glapp.session.include(self.qi, hit.pid)
            self.app.pop_screen()  # back to the Grade screen this search came from
            self.glapp.open_query(self.qi, hit.pid)

    def action_edit(self) -> None:
        self.query_one("#search-box", Input).focus()

    def action_down(self) -> None:
        self.query_one("#hits", DataTable).action_cursor_down()

    def action_up(self) -> None:
        self.query_one("#hits", DataTable).action_cursor_up()

    def action_back(self) -> None:
        self.app.pop_screen()
