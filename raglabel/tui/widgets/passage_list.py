"""The candidate passages of one query: grade, suggestion, each run's rank, id."""

from __future__ import annotations

from rich.text import Text
from textual.message import Message
from textual.widgets import DataTable

from raglabel.session.grading import PassageRow
from raglabel.tui.widgets.format import GRADE_STYLES, short_run


def _grade_cell(row: PassageRow) -> Text:
    if row.grade is not None:
        mark = "" if row.own is None or row.own == row.grade else f"({row.own})"
        return Text(f"{row.grade}{mark}", style=GRADE_STYLES[row.grade])
    if row.skipped:
        return Text("skip", style="dim italic")
    return Text("·", style="dim")


def _suggestion_cell(row: PassageRow) -> Text:
    s = row.suggestion
    if s is None:
        return Text("")
    spread = "" if s.low == s.high else f" {s.low}-{s.high}"
    # Italic and dim on purpose: a suggestion must never be mistaken for a grade.
    cell = Text(f"~{s.grade}{spread}", style="italic #8a8aff")
    if s.flagged:
        cell.append("!", style="bold red")
    return cell


def _passage_cell(row: PassageRow) -> Text:
    text = Text(row.ext_id, style="bold")
    if row.flagged:
        text.append(" ⚑", style="red")
    if row.title:
        text.append(f"  {row.title}", style="dim")
    return text


class PassageList(DataTable[Text]):
    """Rows keyed by passage row id; the highlighted row is the passage being graded."""

    class Focused(Message):
        def __init__(self, pid: int) -> None:
            self.pid = pid
            super().__init__()

    def __init__(self, run_names: list[str], *, id: str | None = None) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, id=id)
        self.run_names = run_names

    def on_mount(self) -> None:
        self.add_column("grade", key="grade", width=5)
        self.add_column("judge", key="judge", width=5)
        for i, name in enumerate(self.run_names):
            self.add_column(short_run(name, 5), key=f"run{i}", width=5)
        self.add_column("passage", key="passage")

    def show(self, rows: list[PassageRow], current: int | None = None) -> None:
        self.clear()
        for row in rows:
            ranks = [Text(str(r) if r is not None else "", justify="right") for r in row.ranks]
            self.add_row(
                _grade_cell(row),
                _suggestion_cell(row),
                *ranks,
                _passage_cell(row),
                key=str(row.pid),
            )
        if current is not None:
            self.select(current)

    def update(self, row: PassageRow) -> None:
        key = str(row.pid)
        self.update_cell(key, "grade", _grade_cell(row))
        self.update_cell(key, "judge", _suggestion_cell(row))
        self.update_cell(key, "passage", _passage_cell(row))

    def select(self, pid: int) -> None:
        try:
            self.move_cursor(row=self.get_row_index(str(pid)))
        except Exception:
            return

    @property
    def current(self) -> int | None:
        if not self.row_count:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        return None if key is None else int(key)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        if event.row_key.value is not None:
            self.post_message(self.Focused(int(event.row_key.value)))
