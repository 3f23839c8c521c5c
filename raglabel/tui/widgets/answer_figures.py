"""The Runs screen's answer criteria: a row per answer system and criterion, and the
highlighted row's figures in full below the table.

NA stays NA: a mean without a valid sample reads "NA", never 0, and the counts say how
many samples were valid, NA (with reasons) or not graded yet.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from raglabel.formats.report import GradeSummary, RunReport
from raglabel.metrics.criteria import RANKING
from raglabel.metrics.definitions import display_name
from raglabel.metrics.names import MetricKey
from raglabel.session.answer_figures import CORRECTED_MIN, AnswerFigure
from raglabel.tui.widgets.format import interval_bounds, number, run_interval

#: Short names, so a row fits 80 columns; the detail line names the criterion in full.
CRITERION_LABELS = {
    "faithfulness": "faithful",
    "answer_relevancy": "relevancy",
    "context_recall": "ctx recall",
    RANKING: "rank prec",
}


def _digits(criterion: str) -> tuple[int, int]:
    """Decimals of a mean and of its interval: grades are 1-5, ctx_rank_prec 0-100."""
    return (1, 0) if criterion == RANKING else (2, 1)


def _mean_cell(summary: GradeSummary, criterion: str, *, interval: bool) -> Text:
    if summary.mean is None:
        return Text("NA", style="dim")
    places, ci_places = _digits(criterion)
    text = Text(number(summary.mean, places))
    if interval and summary.ci is not None:
        low, high = interval_bounds(*summary.ci, ci_places)
        text.append(f" {low}-{high}", style="dim")
    return text


def _counts_cell(summary: GradeSummary) -> Text:
    na = sum(summary.na.values())
    text = Text(str(summary.valid))
    text.append(f"/{na}", style="dim" if na == 0 else "yellow")
    return text


def _pass_cell(summary: GradeSummary) -> Text:
    if summary.pass_rate is None:
        return Text("NA", style="dim")
    return Text(f"{summary.pass_rate:.0%}")


_COLUMNS = (
    ("system", "system"),
    ("criterion", "criterion"),
    ("people", "human"),
    ("pass", "pass"),
    ("n/NA", "human_counts"),
    ("judge", "judge"),
    ("n/NA", "judge_counts"),
    ("corr.", "corrected"),
)


class AnswerFigureTable(DataTable[Text]):
    """Rows keyed by their index in the figures last shown.

    Columns get their widths from the cells when the rows are shown, not from the
    table's own measuring, which waits for an idle moment: the table is right from its
    first frame (and a snapshot under load sees what a person sees).
    """

    def on_mount(self) -> None:
        self._columns([len(label) for label, _ in _COLUMNS])

    def _columns(self, widths: list[int]) -> None:
        for (label, key), width in zip(_COLUMNS, widths, strict=True):
            self.add_column(label, key=key, width=width)

    def show(self, rows: list[AnswerFigure]) -> None:
        keep = self.cursor_row
        cells: list[list[Text]] = []
        previous = None
        for row in rows:
            f = row.figures
            corrected = (
                Text("—", style="dim")
                if f.corrected is None
                else Text(number(f.corrected.mean, _digits(row.criterion)[0]))
            )
            cells.append(
                [
                    Text(row.system if row.system != previous else "", style="bold"),
                    Text(CRITERION_LABELS.get(row.criterion, row.criterion)),
                    _mean_cell(f.human, row.criterion, interval=True),
                    _pass_cell(f.human),
                    _counts_cell(f.human),
                    _mean_cell(f.judge, row.criterion, interval=False),
                    _counts_cell(f.judge),
                    corrected,
                ]
            )
            previous = row.system
        widths = [
            max([len(label), *(line[i].cell_len for line in cells)])
            for i, (label, _) in enumerate(_COLUMNS)
        ]
        self.clear(columns=True)
        self._columns(widths)
        for i, line in enumerate(cells):
            self.add_row(*line, key=str(i))
        if 0 <= keep < self.row_count:
            self.move_cursor(row=keep)


def _summary_line(who: str, summary: GradeSummary, criterion: str, verb: str) -> Text:
    places, _ = _digits(criterion)
    text = Text(f"{who}: ", style="bold")
    if summary.mean is None:
        text.append("NA", style="dim")
    else:
        text.append(number(summary.mean, places))
        if summary.ci is not None:
            text.append(f" [{number(summary.ci[0], places)}, {number(summary.ci[1], places)}]")
        text.append(f", pass {_pass_cell(summary)}")
    text.append(f" · {summary.valid} valid of {summary.samples}")
    na = sum(summary.na.values())
    reasons = ", ".join(f"{reason} {count}" for reason, count in summary.na.items())
    text.append(f" · NA {na}" + (f" ({reasons})" if reasons else ""))
    left = summary.samples - summary.valid - na
    if left:
        text.append(f" · {left} not {verb} yet")
    return text


def detail(row: AnswerFigure, retrieval: RunReport | None, k: int) -> Text:
    """Every figure of one row, with the pass mark, the NA reasons and the system's
    retrieval RA-nWG@K when it is also a run."""
    f = row.figures
    places, _ = _digits(row.criterion)
    mark = f"{row.threshold:g}"
    out = Text.assemble(
        (f"{row.system} · {row.criterion}", "bold"),
        f" (pass at {mark} or more)\n",
    )
    out.append_text(_summary_line("people", f.human, row.criterion, "graded"))
    out.append("\n")
    out.append_text(_summary_line("judge", f.judge, row.criterion, "judged"))
    out.append("\n")
    out.append("judge-corrected: ", style="bold")
    if f.corrected is None:
        out.append(f"NA, needs {CORRECTED_MIN} samples graded by both people and judge")
    else:
        c = f.corrected
        out.append(
            f"{number(c.mean, places)} [{number(c.ci[0], places)}, {number(c.ci[1], places)}]"
            f" · {c.n_human} with both grades, {c.n_judge} judged"
        )
    if retrieval is not None:
        ci = retrieval.ci["ra_nwg"] if retrieval.ci else None
        # As the Runs screen's chart and table round it.
        span = "" if ci is None else f" {run_interval(ci)}"
        out.append("\nretrieval: ", style="bold")
        ra = display_name(MetricKey("ra_nwg", k))
        out.append(f"{ra} {number(retrieval.mean['ra_nwg'])}{span}")
    return out
