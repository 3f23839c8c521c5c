"""Every query with its progress, holes and each run's RA-nWG at K."""

from __future__ import annotations

from rich.text import Text
from textual.coordinate import Coordinate
from textual.message import Message
from textual.widgets import DataTable

from raglabel.session.desk import QueryRow
from raglabel.tui.widgets.format import number, short_run


def _progress(row: QueryRow) -> Text:
    done = row.candidates and row.graded >= row.candidates
    return Text(f"{row.graded}/{row.candidates}", style="green" if done else "")


def _holes(row: QueryRow) -> Text:
    return Text(str(row.holes), style="bold yellow" if row.holes else "dim")


class QueryTable(DataTable[Text | str]):
    """Rows keyed by the query's index in the session."""

    class Opened(Message):
        def __init__(self, query: int) -> None:
            self.query = query
            super().__init__()

    def __init__(self, run_names: list[str], *, id: str | None = None) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, id=id)
        self.run_names = run_names

    def on_mount(self) -> None:
        self.add_column("query", key="id")
        self.add_column("progress", key="progress")
        self.add_column("holes", key="holes")
        for i, name in enumerate(self.run_names):
            self.add_column(short_run(name, 9), key=f"run{i}")
        self.add_column("text", key="text")

    def show(self, rows: list[QueryRow], current: int | None = None) -> None:
        self.clear()
        self.add_rows(
            [
                (
                    row.ext_id,
                    _progress(row),
                    _holes(row),
                    *(Text(number(v), justify="right") for v in row.ra_nwg),
                    row.text,
                )
                for row in rows
            ]
        )
        # add_rows gives generated keys; keep our own index -> row position map instead.
        self._positions = {row.index: i for i, row in enumerate(rows)}
        self._order = [row.index for row in rows]
        if current is not None and current in self._positions:
            self.move_cursor(row=self._positions[current])

    def update(self, row: QueryRow) -> None:
        position = getattr(self, "_positions", {}).get(row.index)
        if position is None:
            return
        self.update_cell_at(Coordinate(position, 1), _progress(row))
        self.update_cell_at(Coordinate(position, 2), _holes(row))
        for i, value in enumerate(row.ra_nwg):
            self.update_cell_at(Coordinate(position, 3 + i), Text(number(value), justify="right"))

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
