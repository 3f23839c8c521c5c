"""Every query with its progress, holes and each run's RA-nWG at K."""

from __future__ import annotations

from rich.text import Text
from textual.coordinate import Coordinate
from textual.events import Resize
from textual.message import Message
from textual.widgets import DataTable

from raglabel.session.grading import QueryRow
from raglabel.tui.widgets.columns import PAD, fit_columns, set_widths
from raglabel.tui.widgets.format import number, short_run

#: Rows added before the first paint, and rows added per step after it.
FIRST_PAGE = 100
CHUNK = 200
#: A score column is never narrower than its number ("0.359").
SCORE_WIDTH = 5
#: The query text keeps this much before run names are shortened.
TEXT_WANTED = 48


def _progress(row: QueryRow) -> Text:
    if not row.counted:  # candidates and grades still being read: unknown, not 0/0
        return Text("…", style="dim")
    done = row.candidates and row.graded >= row.candidates
    return Text(f"{row.graded}/{row.candidates}", style="green" if done else "")


def _holes(row: QueryRow) -> Text:
    if not row.scored:
        return Text("…", style="dim")
    return Text(str(row.holes), style="bold yellow" if row.holes else "dim")


def _score(row: QueryRow, value: float) -> Text:
    # Runs still being read show as "…", not as NA: NA means undefined, not unknown.
    return Text(number(value) if row.scored else "…", justify="right")


class QueryTable(DataTable[Text | str]):
    """Rows keyed by the query's index in the session."""

    class Opened(Message):
        def __init__(self, query: int) -> None:
            self.query = query
            super().__init__()

    def __init__(self, run_names: list[str], id_width: int, *, id: str | None = None) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, id=id)
        self.run_names = run_names
        self.id_width = id_width

    def on_mount(self) -> None:
        # Fixed widths: sizing columns to their content measures every cell, which
        # costs most of a second with thousands of queries.
        self.add_column("query", key="id", width=self.id_width)
        self.add_column("progress", key="progress", width=8)
        self.add_column("holes", key="holes", width=5)
        for i, name in enumerate(self.run_names):
            self.add_column(short_run(name, 9), key=f"run{i}", width=9)
        self.add_column("text", key="text", width=200)

    def on_resize(self, event: Resize) -> None:
        """Run names in full and the query text to the edge, as far as the width allows."""
        fixed = self.id_width + 8 + 5 + 3 * PAD
        runs, text = fit_columns(
            event.size.width, fixed, self.run_names, floor=SCORE_WIDTH, want_text=TEXT_WANTED
        )
        widths: dict[str, tuple[int, str | None]] = {
            f"run{i}": (width, name)
            for i, (width, name) in enumerate(zip(runs, self.run_names, strict=True))
        }
        widths["text"] = (max(text, 10), None)
        set_widths(self, widths)

    def show(self, rows: list[QueryRow], current: int | None = None) -> None:
        """Rows in this order; the first screenful at once, the rest after it is painted.

        A table sizes itself by measuring every new cell, which takes a noticeable
        fraction of a second for thousands of queries: the screen is usable meanwhile.
        """
        self.clear()
        self._generation = getattr(self, "_generation", 0) + 1
        self._positions = {row.index: i for i, row in enumerate(rows)}
        self._order = [row.index for row in rows]
        self._add(rows[:FIRST_PAGE], self._generation)
        if len(rows) > FIRST_PAGE:
            self.call_after_refresh(self._add_rest, rows[FIRST_PAGE:], self._generation, current)
        elif current is not None and current in self._positions:
            self.move_cursor(row=self._positions[current])
        if current is not None and self._positions.get(current, FIRST_PAGE) < FIRST_PAGE:
            self.move_cursor(row=self._positions[current])

    def _add(self, rows: list[QueryRow], generation: int) -> None:
        if generation != self._generation:
            return  # a newer show() replaced these rows
        self.add_rows(
            [
                (
                    row.ext_id,
                    _progress(row),
                    _holes(row),
                    *(_score(row, v) for v in row.ra_nwg),
                    row.text,
                )
                for row in rows
            ]
        )

    def _add_rest(self, rows: list[QueryRow], generation: int, current: int | None) -> None:
        """A chunk now and the rest later, so keys pressed meanwhile are not kept waiting."""
        self._add(rows[:CHUNK], generation)
        if generation != self._generation:
            return
        if len(rows) > CHUNK:
            self.set_timer(0.001, lambda: self._add_rest(rows[CHUNK:], generation, current))
        elif current is not None and current in self._positions:
            self.move_cursor(row=self._positions[current])

    def update(self, row: QueryRow) -> None:
        position = getattr(self, "_positions", {}).get(row.index)
        if position is None:
            return
        self.update_cell_at(Coordinate(position, 1), _progress(row))
        self.update_cell_at(Coordinate(position, 2), _holes(row))
        for i, value in enumerate(row.ra_nwg):
            self.update_cell_at(Coordinate(position, 3 + i), _score(row, value))

    @property
    def current(self) -> int | None:
        order: list[int] = getattr(self, "_order", [])
        if not order or self.cursor_row >= len(order):
            return None
        return order[self.cursor_row]

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        query = self.current
        if query is not None:
            self.post_message(self.Opened(query))
