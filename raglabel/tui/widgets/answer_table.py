"""The answers of one query, a row per system: each criterion's grade and suggestion."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import events
from textual.message import Message
from textual.widgets import DataTable

from raglabel.metrics.criteria import CRITERIA
from raglabel.tui.widgets.format import GRADE_STYLES

if TYPE_CHECKING:
    from raglabel.session.answers import AnswerKey, AnswerView, CriterionView

#: Column headers, short enough that the three fit beside the system at 80 columns.
HEADERS = {
    "faithfulness": "faithful",
    "answer_relevancy": "relevant",
    "context_recall": "recall",
}
CELL_WIDTH = 12
JUDGE_STYLE = "italic #8a8aff"


def grade_cell(view: CriterionView, marks: int = 0, waiting: bool = False) -> Text:
    """The grade in view (with the annotator's own in brackets when it differs), the
    judge's suggestion in italics (``~?`` while hidden, ``~✗`` when it failed), and
    the unsupported marks."""
    if not view.gradable:
        return Text("NA", style="dim")
    if view.grade is None:
        cell = Text("·", style="dim")
    else:
        cell = Text(str(view.grade), style=GRADE_STYLES[view.grade])
        if view.own is not None and view.own != view.grade:
            cell.append(f"({view.own})")
    judge = view.judge
    if judge is not None:
        if judge.grade is not None:
            cell.append(f" ~{judge.grade}", style=JUDGE_STYLE)
        elif judge.hidden:
            cell.append(" ~?", style=JUDGE_STYLE)
        elif judge.error is not None:
            cell.append(" ~✗", style="italic red")
    if marks:
        cell.append(f" ✗{marks}", style="yellow" if waiting else "red")
    return cell


def row_key(key: AnswerKey) -> str:
    return f"{key[0]}\x1f{key[1]}"


class AnswerTable(DataTable[Text]):
    """Rows keyed by (system, sample); the screen moves the cursor, the table never
    takes the focus (so every key reaches the screen's bindings)."""

    can_focus = False

    class Picked(Message):
        """A click on an answer (``key``), a criterion's column (``criterion``), or both."""

        def __init__(self, key: AnswerKey | None, criterion: str | None) -> None:
            self.key = key
            self.criterion = criterion
            super().__init__()

    async def _on_click(self, event: events.Click) -> None:
        # The screen moves the cursor, so a click says what was picked and no more.
        meta = event.style.meta
        if "row" not in meta or "column" not in meta:
            return
        event.stop()
        row, column = int(meta["row"]), int(meta["column"])
        key = None
        if 0 <= row < len(self.ordered_rows):
            value = self.ordered_rows[row].key.value
            if value is not None:
                system, _, sample = value.partition("\x1f")
                key = (system, sample)
        criterion = CRITERIA[column - 1] if 1 <= column <= len(CRITERIA) else None
        self.post_message(self.Picked(key, criterion))

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, id=id)
        self._criterion: str | None = None
        self._views: list[AnswerView] = []

    def show(self, views: list[AnswerView], current: AnswerKey | None, criterion: str) -> None:
        self._views = views
        if criterion != self._criterion or not self.columns:
            self.clear(columns=True)
            longest = max((len(v.item.system) for v in views), default=6)
            self.add_column("system", key="system", width=max(6, min(longest + 3, 28)))
            for name in CRITERIA:
                mark = "▸" if name == criterion else " "
                label = Text(mark + HEADERS[name], style="bold reverse" if mark != " " else "")
                self.add_column(label, key=name, width=CELL_WIDTH)
            self._criterion = criterion
        else:
            self.clear()
        for view in views:
            self.add_row(
                Text(view.item.system, style="bold"),
                *(
                    grade_cell(
                        view.criterion(name),
                        len(view.unsupported) if name == "faithfulness" else 0,
                        view.waiting,
                    )
                    for name in CRITERIA
                ),
                key=row_key(view.key),
            )
        if current is not None:
            self.select(current)

    def select(self, key: AnswerKey) -> None:
        try:
            self.move_cursor(row=self.get_row_index(row_key(key)), animate=False)
        except Exception:
            return

    @property
    def current(self) -> AnswerKey | None:
        if not self.row_count:
            return None
        value = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        if value is None:
            return None
        system, _, sample = value.partition("\x1f")
        return system, sample
