"""The candidate passages of one query: grade, suggestion, each run's rank, id."""

from __future__ import annotations

from rich.text import Text
from textual.events import Resize
from textual.message import Message
from textual.widgets import DataTable

from raglabel.session.grading import PassageRow
from raglabel.tui.widgets.columns import PAD, fit_columns
from raglabel.tui.widgets.format import GRADE_STYLES, short_run

#: A rank column is never narrower than this ("rank" of three digits and a margin).
RANK_WIDTH = 4
#: The passage column keeps this much (id and the start of the title) before run
#: names are shortened.
PASSAGE_WANTED = 44


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
    if row.skipped and row.grade is not None:
        text.append(" skipped", style="dim italic")
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
        self._rows: dict[int, PassageRow] = {}
        self._layout: tuple[bool, tuple[int, ...], int] | None = None

    def _columns_for(self, width: int) -> tuple[bool, tuple[int, ...], int]:
        """(judge column or not, each run's width, the passage column's width)."""
        judge = any(row.suggestion is not None for row in self._rows.values())
        fixed = (5 + PAD) + ((5 + PAD) if judge else 0)
        longest = max((len(_passage_cell(row)) for row in self._rows.values()), default=20)
        runs, passage = fit_columns(
            width,
            fixed,
            self.run_names,
            floor=RANK_WIDTH,
            want_text=min(longest, PASSAGE_WANTED),
        )
        return judge, tuple(runs), max(passage, 20)

    def _build_columns(self, layout: tuple[bool, tuple[int, ...], int]) -> None:
        judge, runs, passage = layout
        self.clear(columns=True)
        self.add_column("grade", key="grade", width=5)
        if judge:  # only for a query the judge has seen: the column is empty otherwise
            self.add_column("judge", key="judge", width=5)
        for i, (name, width) in enumerate(zip(self.run_names, runs, strict=True)):
            self.add_column(short_run(name, width), key=f"run{i}", width=width)
        self.add_column("passage", key="passage", width=passage)
        self._layout = layout

    def on_resize(self, event: Resize) -> None:
        layout = self._columns_for(event.size.width)
        if layout != self._layout and self._rows:
            self.show(list(self._rows.values()), self.current)

    def show(self, rows: list[PassageRow], current: int | None = None) -> None:
        self._rows = {row.pid: row for row in rows}
        layout = self._columns_for(self.size.width or 80)
        if layout != self._layout:
            self._build_columns(layout)
        else:
            self.clear()
        judge = layout[0]
        for row in rows:
            ranks = [Text(str(r) if r is not None else "", justify="right") for r in row.ranks]
            self.add_row(
                _grade_cell(row),
                *([_suggestion_cell(row)] if judge else []),
                *ranks,
                _passage_cell(row),
                key=str(row.pid),
            )
        if current is not None:
            self.select(current)

    def update(self, row: PassageRow) -> None:
        key = str(row.pid)
        self._rows[row.pid] = row
        if row.suggestion is not None and not (self._layout and self._layout[0]):
            self.show(list(self._rows.values()), self.current)
            return
        self.update_cell(key, "grade", _grade_cell(row))
        if self._layout and self._layout[0]:
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
