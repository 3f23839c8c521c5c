"""The lead's Progress screen: each annotator's assigned and done queries, pace and alpha
with the others, the queries not yet done by all their annotators, and the pairs waiting
for adjudication; the figures of ``raglabel progress``, refreshed while people grade."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, cast

from rich.cells import cell_len
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import DataTable, Static
from textual.worker import get_current_worker

from raglabel.analysis.progress import IDLE_LIMIT_S, MIN_SHARED_PAIRS
from raglabel.session.team_progress import ProgressRequest, progress_request, read_progress
from raglabel.tui.keys import bind
from raglabel.tui.widgets.key_footer import KeyFooter

if TYPE_CHECKING:
    from raglabel.analysis.progress import Progress
    from raglabel.formats.progress_report import ProgressReport
    from raglabel.tui.app import GradingApp

#: How often the figures are read again while the screen is in view: others grade in
#: their own processes, and nothing tells this one when they do.
REFRESH_S = 5.0
#: Between two annotators' alphas in a row's alpha cell.
SEPARATOR = " · "
#: An alpha's width in that cell, two decimals from -1 to 1.
ALPHA_WIDTH = len("-1.00")
#: The annotators table's columns before the alphas.
FIGURE_COLUMNS = ("annotator", "assigned", "done", "grades", "grades/h", "median s")


def _num(value: float | None, digits: int) -> str:
    return "NA" if value is None else f"{value:.{digits}f}"


def alpha_cell(
    alpha_with: dict[str, float | None], room: int | None = None, name_width: int = 0
) -> Text:
    """``bob 0.74 · carol 0.81``: this annotator's alpha with each other annotator where
    it is defined (2 shared pairs or more, not all one grade); ``-`` with none. The
    undefined ones are left out. When the defined ones are wider than ``room`` columns
    they go on several lines, as many a line as fit, in columns: each name padded to
    ``name_width`` (or the longest here), each alpha to the width of ``-1.00``, so that
    the table fits the terminal however many annotators share pairs."""
    pairs = [(name, alpha) for name, alpha in alpha_with.items() if alpha is not None]
    if not pairs:
        return Text("-", style="dim")
    line = [(name, f"{alpha:.2f}") for name, alpha in pairs]
    if room is None or cell_len(SEPARATOR.join(f"{n} {a}" for n, a in line)) <= room:
        return _pairs_line(line)
    names = max(name_width, *(cell_len(name) for name, _ in pairs))
    piece = names + 1 + ALPHA_WIDTH
    per_line = max(1, (room + len(SEPARATOR)) // (piece + len(SEPARATOR)))
    padded = [(name + " " * (names - cell_len(name)), a.rjust(ALPHA_WIDTH)) for name, a in line]
    out = Text()
    for start in range(0, len(padded), per_line):
        if start:
            out.append("\n")
        out.append_text(_pairs_line(padded[start : start + per_line]))
    return out


def _pairs_line(pairs: list[tuple[str, str]]) -> Text:
    out = Text()
    for name, alpha in pairs:
        if out:
            out.append(SEPARATOR, style="dim")
        out.append(f"{name} ")
        out.append(alpha, style="bold")
    return out


def head_text(report: ProgressReport, depth: int) -> Text:
    """What the screen shows, and what each figure means."""
    open_queries = sum(q.done < q.assigned for q in report.queries.values())
    waiting = report.to_adjudicate
    return Text.assemble(
        ("Progress ", "bold"),
        f"{len(report.annotators)} annotators · {len(report.queries)} queries assigned,"
        f" {len(report.queries) - open_queries} done by all their annotators ·"
        f" {waiting} pair{'' if waiting == 1 else 's'} to adjudicate\n",
        (
            f"done: every passage a run ranks in its top {depth} graded · pace from grades"
            f" at the keys, a gap over {IDLE_LIMIT_S:.0f} s a break · alpha: ordinal, with"
            f" each annotator sharing {MIN_SHARED_PAIRS}+ pairs · read again every"
            f" {REFRESH_S:.0f} s",
            "dim",
        ),
    )


class ProgressScreen(Screen[None]):
    """Shown only to the lead (``--all-annotators`` or ``--adjudicate``): the app's key
    for it is off otherwise."""

    DEFAULT_CSS = """
    #progress-head { height: auto; padding: 0 1; background: $boost; }
    #progress-annotators { height: auto; max-height: 50%; }
    #progress-queries-head { height: auto; padding: 0 1; margin-top: 1; }
    #progress-queries { height: 1fr; }
    """
    AUTO_FOCUS = "#progress-annotators"
    BINDINGS: ClassVar[list[BindingType]] = [
        bind("queries", "app.queries"),
        Binding("escape", "back", "back"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self._timer: Timer | None = None
        self._reading = False
        self._report: ProgressReport | None = None  # the last read, drawn again on resize

    @property
    def glapp(self) -> GradingApp:
        return cast("GradingApp", self.app)

    def compose(self) -> ComposeResult:
        yield Static(Text("Progress: reading the project…", style="dim"), id="progress-head")
        yield DataTable(id="progress-annotators", cursor_type="row", zebra_stripes=True)
        yield Static(id="progress-queries-head")
        yield DataTable(id="progress-queries", cursor_type="row", zebra_stripes=True)
        yield KeyFooter()

    def on_mount(self) -> None:
        annotators = self.query_one("#progress-annotators", DataTable)
        for label in FIGURE_COLUMNS:
            annotators.add_column(label, key=label)
        annotators.add_column("alpha with", key="alpha")
        queries = self.query_one("#progress-queries", DataTable)
        queries.add_column("query", key="query")
        queries.add_column("annotators done", key="done")
        self._timer = self.set_interval(REFRESH_S, self.refresh_figures)
        self.refresh_figures()

    def on_resize(self) -> None:
        if self._report is not None:
            self._fill_annotators(self._report)

    def on_screen_resume(self) -> None:
        if self._timer is not None:
            self._timer.resume()
        self.refresh_figures()

    def on_screen_suspend(self) -> None:
        if self._timer is not None:
            self._timer.pause()

    def refresh_figures(self) -> None:
        """Read the figures again in a thread, unless a read is still on its way."""
        if self._reading:
            return
        self._reading = True
        self._read(progress_request(self.glapp.session))

    @work(thread=True, exclusive=True, group="progress", description="progress")
    def _read(self, request: ProgressRequest) -> None:
        worker = get_current_worker()
        try:
            found: Progress | str = read_progress(request)
        except Exception as exc:  # shown on the screen: a failed read must not end the app
            found = f"{type(exc).__name__}: {exc}"
        if not worker.is_cancelled:
            self.app.call_from_thread(self._show, request.depth, found)

    def _show(self, depth: int, found: Progress | str) -> None:
        self._reading = False
        if not self.is_mounted:
            return
        head = self.query_one("#progress-head", Static)
        if isinstance(found, str):
            head.update(Text(f"Progress could not be read: {found}", style="red"))
            return
        report = found.report
        text = head_text(report, depth)
        for note in found.notes:
            text.append(f"\n{note}", style="yellow")
        head.update(text)
        self._report = report
        self._fill_annotators(report)
        self._fill_queries(report)

    def _fill_annotators(self, report: ProgressReport) -> None:
        table = self.query_one("#progress-annotators", DataTable)
        row = table.cursor_row
        table.clear()
        rows = {
            name: (
                name,
                str(a.assigned),
                str(a.done),
                str(a.grades),
                _num(a.grades_per_hour, 1),
                _num(a.median_active_s, 1),
            )
            for name, a in report.annotators.items()
        }
        # What the figures' columns leave the alphas: each column is as wide as its
        # widest cell or label, with the table's padding on both sides; less a vertical
        # scrollbar's width if the rows, wrapped without one, are more than the table
        # may show.
        pad = 2 * table.cell_padding
        taken = sum(
            max([cell_len(label), *(cell_len(cells[i]) for cells in rows.values())]) + pad
            for i, label in enumerate(FIGURE_COLUMNS)
        )
        names = max(map(cell_len, rows), default=0)

        def cells_within(room: int) -> dict[str, Text]:
            return {n: alpha_cell(a.alpha_with, room, names) for n, a in report.annotators.items()}

        room = self.size.width - taken - pad
        alphas = cells_within(room)
        lines = 1 + sum(len(cell.plain.split("\n")) for cell in alphas.values())  # and a head
        most = table.styles.max_height
        if most is not None and lines > most.resolve(self.size, self.app.size):
            alphas = cells_within(room - table.styles.scrollbar_size_vertical)
        for name, cells in rows.items():
            table.add_row(
                cells[0],
                *(Text(figure, justify="right") for figure in cells[1:]),
                alphas[name],
                key=name,
                height=len(alphas[name].plain.split("\n")),
            )
        if report.annotators:
            table.move_cursor(row=min(row, len(report.annotators) - 1))

    def _fill_queries(self, report: ProgressReport) -> None:
        waiting = [(qid, q) for qid, q in report.queries.items() if q.done < q.assigned]
        head = self.query_one("#progress-queries-head", Static)
        if not report.queries:
            head.update(
                Text(
                    "No query is assigned: raglabel assign DB --annotators a,b,c --overlap 2"
                    " assigns them.",
                    style="dim",
                )
            )
        else:
            head.update(
                Text.assemble(
                    ("Queries not yet done by all their annotators ", "bold"),
                    f"{len(waiting)} of {len(report.queries)}",
                )
            )
        table = self.query_one("#progress-queries", DataTable)
        row = table.cursor_row
        table.clear()
        for qid, q in waiting:
            table.add_row(qid, f"{q.done} of {q.assigned}", key=qid)
        if waiting:
            table.move_cursor(row=min(row, len(waiting) - 1))

    def action_back(self) -> None:
        self.app.pop_screen()
