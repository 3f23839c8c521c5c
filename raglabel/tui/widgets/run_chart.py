"""A bar per run with its bootstrap interval drawn across it, in plain characters."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from raglabel.formats.report import RunReport
from raglabel.tui.widgets.format import number, run_interval


def bar(mean: float | None, ci: tuple[float, float] | None, width: int) -> Text:
    """``mean`` as a bar over [0, 1], the interval as ├──┤ over it."""
    cells = [" "] * width
    styles = [""] * width
    if mean is not None:
        filled = round(max(0.0, min(1.0, mean)) * width)
        for i in range(filled):
            cells[i], styles[i] = "█", "cyan"
    if ci is not None:
        lo = min(width - 1, round(max(0.0, ci[0]) * (width - 1)))
        hi = min(width - 1, round(min(1.0, ci[1]) * (width - 1)))
        for i in range(lo, hi + 1):
            if cells[i] == " ":
                cells[i] = "─"
            styles[i] = "bold white" if cells[i] == "─" else "bold cyan on grey23"
        cells[lo], cells[hi] = "├", "┤"
        styles[lo] = styles[hi] = "bold white"
    out = Text()
    for char, style in zip(cells, styles, strict=True):
        out.append(char, style=style)
    return out


class RunChart(Static):
    def show(
        self,
        reports: dict[str, RunReport],
        metric: str,
        label: str,
        width: int = 40,
        interval: str = "bootstrap",
    ) -> None:
        name_width = max((len(run) for run in reports), default=4)
        out = Text(f"{label}: mean and 95% {interval} interval\n", style="bold")
        for run, report in reports.items():
            mean, ci = report.mean[metric], report.ci[metric] if report.ci else None
            out.append(run.ljust(name_width) + " ")
            out.append_text(bar(mean, ci, width))
            # As the table below rounds it: one interval reads the same in both.
            span = "" if ci is None else f" {run_interval(ci)}"
            out.append(f" {number(mean)}{span}\n")
        self.update(out)
