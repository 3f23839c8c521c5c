"""Every run's means with bootstrap intervals at K; a paired comparison of two runs; the
same runs on the judge's labels or judge-corrected (``e``), each pair with how many more
drawn queries would settle it."""

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
from raglabel.session.run_estimates import (
    COMPARED,
    NOT_CORRECTED,
    EstimateAsk,
    EstimateFigures,
    EstimateRefusal,
    estimate_figures,
    next_estimate,
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


def settling_text(result: EstimateFigures, label: str) -> Text:
    """Each pair of runs judge-corrected on the metric ``label`` names: the difference,
    its interval, and how many more complete drawn queries would settle it (or that it
    is)."""
    info = result.estimate
    text = Text.assemble(
        (f"{label}, each pair judge-corrected", "bold"),
        f": judge on {info.population} queries, people on {info.complete} complete of"
        f" {info.drawn} drawn",
    )
    if not result.comparisons:
        text.append("; one run, nothing to compare.")
    names = {id(c): f"{c.run} - {c.baseline}" for c in result.comparisons}
    width = max((len(name) for name in names.values()), default=0)
    for c in result.comparisons:
        text.append(f"\n  {names[id(c)].ljust(width)}  ")
        if c.mean_difference is None or c.ci is None:
            text.append("NA: too few complete drawn queries where it is defined", style="dim")
            continue
        low, high = c.ci
        text.append(f"{c.mean_difference:+.3f} [{low:+.3f}, {high:+.3f}]  ")
        text.append(c.settling, style="green" if c.queries_to_settle == 0 else "yellow")
    for name in NOT_CORRECTED:
        text.append(
            f"\n{metric(name).display}: a ratio of means, not estimated judge-corrected (NA)",
            style="dim",
        )
    return text


def _add_columns(table: DataTable[object]) -> None:
    table.add_column("run", key="run")
    for name in FIGURE_METRICS:
        # Display names, not short ones: each column is wider than its name
        # anyway, for the interval beside the mean.
        table.add_column(metric(name).display, key=name)


def _fill(table: DataTable[object], rows: dict[str, list[Text]]) -> None:
    """The runs' table with ``rows`` (by run), each column exactly as wide as its
    widest cell. Set here, not measured by the table when it is next idle: measured
    late, a column stays as wide as what it held before, cutting wider figures of
    another estimate, and the table is fitted to the screen on stale widths."""
    heads = ["run", *(metric(name).display for name in FIGURE_METRICS)]
    widths = [len(head) for head in heads]
    for cells in rows.values():
        widths = [max(width, cell.cell_len) for width, cell in zip(widths, cells, strict=True)]
    keep = table.cursor_row
    table.clear(columns=True)
    for head, key, width in zip(heads, ["run", *FIGURE_METRICS], widths, strict=True):
        table.add_column(head, key=key, width=width)
    for run, cells in rows.items():
        table.add_row(*cells, key=run)
    if table.row_count:
        table.move_cursor(row=min(max(keep, 0), table.row_count - 1))


class RunsScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space", "mark", "mark run"),
        Binding("c", "compare", "compare marked"),
        bind("cycle_k", "cycle_k"),
        bind("answer_figures", "toggle_answers"),
        bind("estimate", "cycle_estimate"),
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
        _add_columns(self.query_one("#standings", DataTable))
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
            # They act on the runs' table of people's grades in view; the other
            # estimates compare every pair themselves.
            return not self.answers_shown and self.glapp.runs_estimate == "human"
        if action == "cycle_estimate":
            return not self.answers_shown
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
        elif self.glapp.runs_estimate == "judge":
            head = Text.assemble(
                ("Runs ", "bold"),
                f"at K={session.k}, on the judge's labels, as eval --estimate judge · ",
                ("e: corrected", "dim"),
            )
        elif self.glapp.runs_estimate == "corrected":
            head = Text.assemble(
                ("Runs ", "bold"),
                f"at K={session.k}, judge-corrected by everyone's grades on the audit"
                " sample, as eval --estimate corrected · ",
                ("e: grades in view", "dim"),
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
        kind = self.glapp.runs_estimate
        if kind != "human":
            self._show_pending()
            path = session.project.path
            self._estimate(EstimateAsk(kind, path, session.k, session.options.config))
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
        self._name_rows()
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

    def action_cycle_estimate(self) -> None:
        self.glapp.runs_estimate = next_estimate(self.glapp.runs_estimate)
        # Figures of the estimate left behind, still on their way, must not land.
        for group in ("reports", "estimate", "comparison"):
            self.workers.cancel_group(self, group)
        self.refresh_bindings()
        # The comparison of two marked runs was on the grades in view: it goes with them.
        self.query_one("#duel", Static).update("")
        self.compared = False
        self.query_one("#divergent", DataTable).display = False
        self.query_one("#standings", DataTable).focus()
        self.recompute()

    def _show_pending(self) -> None:
        """While the estimate is computed: the runs by name, no figures yet."""
        self._name_rows()
        what = "judge's" if self.glapp.runs_estimate == "judge" else "judge-corrected"
        self.query_one("#chart", RunChart).update(
            Text(f"computing the {what} estimate…", style="dim")
        )

    def _name_rows(self) -> None:
        """Every run by name with NA figures (marks shown only where they act)."""
        session = self.glapp.session
        marks = self.glapp.runs_estimate == "human"
        rows = {
            run: [
                Text(("▶ " if marks and run in self.marked else "  ") + run),
                *(Text("NA") for _ in FIGURE_METRICS),
            ]
            for run in session.catalog.run_names
        }
        _fill(self.query_one("#standings", DataTable), rows)
        self.call_after_refresh(self._fit_standings)

    @work(thread=True, exclusive=True, group="estimate", description="estimate")
    def _estimate(self, ask: EstimateAsk) -> None:
        result = estimate_figures(ask)
        self.app.call_from_thread(
            self._if_current, get_current_worker(), self._show_estimate, result
        )

    def _show_estimate(self, result: EstimateFigures | EstimateRefusal) -> None:
        duel = self.query_one("#duel", Static)
        chart = self.query_one("#chart", RunChart)
        if isinstance(result, EstimateRefusal):
            what = "judge's" if self.glapp.runs_estimate == "judge" else "judge-corrected"
            chart.update(Text(f"No {what} estimate: {result.line}", style="yellow"))
            duel.update("")
            return
        k = self.glapp.session.k
        ra = display_name(MetricKey(COMPARED, k))
        corrected = result.kind == "corrected"
        chart.show(result.reports, COMPARED, ra, interval="normal" if corrected else "bootstrap")
        rows = {
            run: [Text("  " + run), *(_cell(report, m) for m in FIGURE_METRICS)]
            for run, report in result.reports.items()
        }
        _fill(self.query_one("#standings", DataTable), rows)
        self.call_after_refresh(self._fit_standings)
        duel.update(settling_text(result, ra) if corrected else "")

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
        rows = {
            run: [
                Text(("▶ " if run in self.marked else "  ") + run),
                *(_cell(report, m) for m in FIGURE_METRICS),
            ]
            for run, report in result.items()
        }
        _fill(table, rows)
        if self.select is not None:
            table.move_cursor(row=table.get_row_index(self.select))
            self.select = None
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
