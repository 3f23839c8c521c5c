"""Every run's means with bootstrap intervals at K; a paired comparison of two runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar, TypeVar, cast

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static
from textual.worker import Worker, get_current_worker

from raglabel.formats.report import RunReport
from raglabel.metrics.definitions import display_name
from raglabel.metrics.names import MetricKey
from raglabel.metrics.table import metric
from raglabel.session.answer_figures import (
    AnswerFigure,
    AnswerRequest,
    answer_figures,
    answer_request,
    has_answer_systems,
)
from raglabel.session.run_figures import (
    FIGURE_METRICS,
    ComparisonDetail,
    ViewInputs,
    compare_runs,
    run_reports,
    view_inputs,
)
from raglabel.tui.keys import bind
from raglabel.tui.widgets.answer_figures import AnswerFigureTable, detail
from raglabel.tui.widgets.format import number, run_interval
from raglabel.tui.widgets.run_chart import RunChart

if TYPE_CHECKING:
    from raglabel.tui.app import GradingApp

T = TypeVar("T")


def _cell(report: RunReport, metric: str) -> Text:
    ci = report.ci[metric] if report.ci else None
    text = Text(number(report.mean[metric]))
    if ci is not None:
        # Compact so nine metrics fit in 140 columns: ".57-.79" is the 95% interval.
        text.append(f" {run_interval(ci, compact=True)}", style="dim")
    return text


def no_values_reason(result: ComparisonDetail) -> str:
    """Why two runs have no query to compare on: no grades, or no values of the
    metric for one run, for both, or never on the same query."""
    t = result.comparison
    metric = display_name(MetricKey("ra_nwg", result.k))
    graded = result.graded
    if not graded:
        return "No query has grades in view yet: grade some passages first."
    of = f"of the {graded} graded {'query' if graded == 1 else 'queries'}"
    base, run = result.defined
    if not base and not run:
        return f"{metric} is NA for both runs on every one {of}."
    for name, count, other, others in (
        (t.baseline, base, t.run, run),
        (t.run, run, t.baseline, base),
    ):
        if not count:
            return (
                f"{metric} is NA for {name} on every one {of} ({other} has a value on "
                f"{others}): no query to pair."
            )
    return (
        f"No query has a value of {metric} for both runs: {t.baseline} has one on {base} "
        f"and {t.run} on {run} {of}, never the same query."
    )


class RunsScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space", "mark", "mark run"),
        Binding("c", "compare", "compare marked"),
        bind("cycle_k", "cycle_k"),
        bind("answer_figures", "toggle_answers"),
        bind("down", "down", show=False),
        bind("up", "up", show=False),
        bind("queries", "app.queries"),
        Binding("escape", "back", show=False),
    ]

    def __init__(self, select: str | None = None) -> None:
        super().__init__()
        self.select = select
        self.marked: list[str] = []
        self.latest: dict[str, RunReport] = {}
        self.answer_rows: list[AnswerFigure] | None = None  # None until first computed
        self.has_answers = False
        self.compared = False  # a comparison's divergent queries are listed
        self.no_grades = False  # no query has grades in view: no figures to show

    @property
    def glapp(self) -> GradingApp:
        return cast("GradingApp", self.app)

    def compose(self) -> ComposeResult:
        yield Static(id="runs-head")
        with VerticalScroll(id="runs-body"):
            yield RunChart(id="chart")
            yield DataTable(id="standings", cursor_type="row")
            yield Static(id="duel")
            yield DataTable(id="divergent", cursor_type="row")
            yield AnswerFigureTable(id="answer-figures", cursor_type="row")
            yield Static(id="answer-detail")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#standings", DataTable)
        table.add_column("run", key="run")
        for name in FIGURE_METRICS:
            # Display names, not short ones: each column is wider than its name
            # anyway, for the interval beside the mean.
            table.add_column(metric(name).display, key=name)
        divergent = self.query_one("#divergent", DataTable)
        divergent.display = False
        self.has_answers = has_answer_systems(self.glapp.session)
        self._show_mode()
        self.recompute()

    @property
    def answers_shown(self) -> bool:
        """The answer criteria are in view instead of the retrieval metrics (the choice
        holds for the app's session, so the view opens again as it was left)."""
        return self.has_answers and self.glapp.runs_answers

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "toggle_answers":
            return self.has_answers  # no answer systems: no key in the footer
        if action in ("mark", "compare"):
            return not self.answers_shown  # they act on the runs' table
        return True

    def _show_mode(self) -> None:
        answers = self.answers_shown
        for widget in ("#chart", "#standings", "#duel"):
            self.query_one(widget).display = not answers
        # The comparison's table comes back with the runs, if it was showing.
        divergent = self.query_one("#divergent", DataTable)
        divergent.display = not answers and self.compared
        for widget in ("#answer-figures", "#answer-detail"):
            self.query_one(widget).display = answers
        self.query_one("#answer-figures" if answers else "#standings").focus()
        self.refresh_bindings()
        self._show_head()

    def _show_head(self) -> None:
        session = self.glapp.session
        if self.answers_shown:
            head = Text.assemble(
                ("Answers ", "bold"),
                "on all annotators' grades, as eval --answers · ",
                ("n/NA: valid/NA samples", "dim"),
            )
        else:
            head = Text.assemble(
                ("Runs ", "bold"),
                f"at K={session.k}, on the grades in view · ",
                ("space marks two runs, c compares them", "dim"),
            )
        self.query_one("#runs-head", Static).update(head)

    def action_toggle_answers(self) -> None:
        self.glapp.runs_answers = not self.glapp.runs_answers
        self._show_mode()
        if self.answers_shown:
            self._start_answers()

    def recompute(self) -> None:
        session = self.glapp.session
        session.ensure_runs()
        self._show_head()
        if self.answers_shown:
            self._start_answers()
        if not session.catalog.runs:
            self.query_one("#chart", RunChart).update("No runs in this project: import some.")
            return
        inputs = view_inputs(session)
        self.no_grades = not inputs.rows
        if self.no_grades:
            # Nothing to average (and a bootstrap over no query would fail): say so.
            self.latest = {}
            self._show_no_grades()
            return
        self.query_one("#chart", RunChart).update(Text("computing intervals…", style="dim"))
        self._reports(inputs)

    def _show_no_grades(self) -> None:
        """The runs by name (they can still be marked and compared), and why there are
        no figures."""
        session = self.glapp.session
        table = self.query_one("#standings", DataTable)
        keep = table.cursor_row
        table.clear()
        for run in session.catalog.run_names:
            mark = "▶ " if run in self.marked else "  "
            table.add_row(Text(mark + run), *("NA" for _ in FIGURE_METRICS), key=run)
        table.move_cursor(row=min(max(keep, 0), table.row_count - 1))
        self.call_after_refresh(self._fit_standings)
        whose = session.annotator if session.blind else "anyone"
        self.query_one("#chart", RunChart).update(
            Text(
                f"No query has grades in view yet (by {whose}): the runs' means and"
                " intervals come with the first grades.",
                style="yellow",
            )
        )

    # Described by name: Textual would spell out repr(inputs), every query id of them.
    @work(thread=True, exclusive=True, group="reports", description="reports")
    def _reports(self, inputs: ViewInputs) -> None:
        result = run_reports(inputs)
        self.app.call_from_thread(
            self._if_current, get_current_worker(), self._show_reports, result
        )

    def _if_current(self, worker: Worker[None], show: Callable[[T], None], result: T) -> None:
        # Checked on the app's thread, where workers are cancelled: a worker superseded
        # by a newer one (K changed meanwhile) has stale figures, and one that finishes
        # after Escape finds a screen losing its widgets while it still counts as attached.
        if not worker.is_cancelled and self in self.app.screen_stack:
            show(result)

    def _start_answers(self) -> None:
        if self.answer_rows is None:
            self.query_one("#answer-detail", Static).update(
                Text("computing the answer figures…", style="dim")
            )
        self._answers(answer_request(self.glapp.session))

    @work(thread=True, exclusive=True, group="answers", description="answers")
    def _answers(self, request: AnswerRequest) -> None:
        rows = answer_figures(request)
        self.app.call_from_thread(self._if_current, get_current_worker(), self._show_answers, rows)

    def _show_answers(self, rows: list[AnswerFigure]) -> None:
        self.answer_rows = rows
        self.query_one("#answer-figures", AnswerFigureTable).show(rows)
        self._show_detail()

    def _show_detail(self) -> None:
        rows = self.answer_rows
        if not rows:
            return
        table = self.query_one("#answer-figures", AnswerFigureTable)
        row = rows[min(max(table.cursor_row, 0), len(rows) - 1)]
        self.query_one("#answer-detail", Static).update(
            detail(row, self.latest.get(row.system), self.glapp.session.k)
        )

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "answer-figures":
            self._show_detail()

    def _show_reports(self, result: dict[str, RunReport]) -> None:
        self.latest = result
        if self.answers_shown:
            self._show_detail()  # its retrieval line
        ra = display_name(MetricKey("ra_nwg", self.glapp.session.k))
        self.query_one("#chart", RunChart).show(result, "ra_nwg", ra)
        table = self.query_one("#standings", DataTable)
        keep = table.cursor_row
        table.clear()
        for run, report in result.items():
            name = Text(("▶ " if run in self.marked else "  ") + run)
            table.add_row(name, *(_cell(report, m) for m in FIGURE_METRICS), key=run)
        if self.select is not None:
            table.move_cursor(row=table.get_row_index(self.select))
            self.select = None
        elif keep < table.row_count:
            table.move_cursor(row=keep)
        self.call_after_refresh(self._fit_standings)

    def on_resize(self) -> None:
        self.call_after_refresh(self._fit_standings)

    def _fit_standings(self) -> None:
        """The runs' table only as wide as its columns that fit whole, so its right edge
        never cuts a value in two (``.49-.7`` of ``.49-.71``); the other columns are a
        scroll to the right, as its scrollbar shows."""
        table = self.query_one("#standings", DataTable)
        room = self.query_one("#runs-body").scrollable_content_region.width
        tallest = table.styles.max_height
        if tallest is not None and table.row_count + 1 > tallest.value:
            room -= table.styles.scrollbar_size_vertical  # rows to scroll: a bar beside
        widths = [column.get_render_width(table) for column in table.ordered_columns]
        whole = 0
        for width in widths:
            if whole + width > room:
                break
            whole += width
        table.styles.max_width = whole if 0 < whole < sum(widths) else None

    def _cursor_run(self) -> str | None:
        table = self.query_one("#standings", DataTable)
        if not table.row_count:
            return None
        return str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)

    def action_mark(self) -> None:
        run = self._cursor_run()
        if run is None:
            return
        if run in self.marked:
            self.marked.remove(run)
        else:
            self.marked = [*self.marked[-1:], run]
        if self.no_grades:
            self._show_no_grades()
        else:
            self._show_reports(self.latest)

    def action_compare(self) -> None:
        if len(self.marked) != 2:
            self.notify("Mark two runs with space first.", severity="warning")
            return
        self.query_one("#duel", Static).update(Text("comparing…", style="dim"))
        self._compare(view_inputs(self.glapp.session), *self.marked)

    @work(thread=True, exclusive=True, group="comparison", description="comparison")
    def _compare(self, inputs: ViewInputs, baseline: str, run: str) -> None:
        result = compare_runs(inputs, baseline, run)
        self.app.call_from_thread(
            self._if_current, get_current_worker(), self._show_comparison, result
        )

    def _show_comparison(self, result: ComparisonDetail) -> None:
        t = result.comparison
        ci = "NA" if t.ci is None else f"[{number(t.ci[0])}, {number(t.ci[1])}]"
        p = "NA" if t.p_value is None else f"{t.p_value:.4f}"
        duel = self.query_one("#duel", Static)
        table = self.query_one("#divergent", DataTable)
        table.clear(columns=True)
        if not t.queries:
            # Nothing to pair: a line of NAs over zero queries would not say why.
            duel.update(
                Text.assemble(
                    (f"{t.run} vs {t.baseline}", "bold"),
                    f" on {display_name(MetricKey('ra_nwg', result.k))}: nothing to compare. ",
                    (no_values_reason(result), "yellow"),
                )
            )
            self._no_divergent()
            return
        differ = (
            " Queries that differ most (Enter opens one):"
            if result.queries
            else " They score the same on every one of these queries: none differs."
        )
        duel.update(
            Text.assemble(
                (f"{t.run} vs {t.baseline}", "bold"),
                f" on {display_name(MetricKey('ra_nwg', result.k))}: mean difference "
                f"{number(t.mean_difference)} {ci}, ",
                f"p = {p} (paired randomization), wins/ties/losses {t.wins}/{t.ties}/{t.losses} ",
                f"over {t.queries} {'query' if t.queries == 1 else 'queries'}.",
                differ,
            )
        )
        if not result.queries:
            self._no_divergent()
            return
        table.add_columns("query", t.baseline, t.run, "difference", "text")
        texts = self.glapp.session.catalog.queries
        for d in result.queries:
            diff = Text(f"{d.difference:+.3f}", style="green" if d.difference > 0 else "red")
            table.add_row(
                d.ext_id,
                number(d.baseline_value),
                number(d.run_value),
                diff,
                texts[d.query].text,
                key=str(d.query),
            )
        self.compared = True
        if not self.answers_shown:  # answers came into view meanwhile: keep them there
            table.display = True
            table.focus()
            # Shown just now, the table has no place yet to scroll to: once laid out,
            # the comparison's sentence goes to the top, the queries under it.
            self.call_after_refresh(self._comparison_into_view)

    def _no_divergent(self) -> None:
        """No queries to list under the comparison's sentence: the runs' table again."""
        self.compared = False
        self.query_one("#divergent", DataTable).display = False
        if not self.answers_shown:
            self.query_one("#standings", DataTable).focus()
        self.call_after_refresh(self._comparison_into_view)

    def _comparison_into_view(self) -> None:
        if self in self.app.screen_stack:
            self.query_one("#duel", Static).scroll_visible(top=True, animate=False)

    def on_screen_resume(self) -> None:
        self.recompute()

    def action_down(self) -> None:
        focused = self.focused
        if isinstance(focused, DataTable):
            focused.action_cursor_down()

    def action_up(self) -> None:
        focused = self.focused
        if isinstance(focused, DataTable):
            focused.action_cursor_up()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id == "divergent" and event.row_key.value is not None:
            self.glapp.open_query(int(event.row_key.value))

    def action_cycle_k(self) -> None:
        self.glapp.set_k(self.glapp.session.cycle_k())

    def refresh_for_k(self) -> None:
        self.recompute()

    def action_back(self) -> None:
        self.app.pop_screen()
