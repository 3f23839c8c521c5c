"""The live metrics of one query: every run at the current K, and its rarity weights."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from raglabel.session.live_metrics import QueryPanel
from raglabel.tui.widgets.format import number

_HEADERS = {
    "ra_nwg": "RA-nWG",
    "proc": "PROC",
    "pct_proc": "%PROC",
    "n_recall_4plus": "NR4+",
    "n_recall_5": "NR5",
    "harm": "Harm",
    "judged": "Judged",
}


class MetricsPanel(Static):
    def show(self, panel: QueryPanel) -> None:
        table = Table(box=None, pad_edge=False, header_style="bold", expand=True)
        table.add_column(f"@{panel.k}", no_wrap=True)
        for name in _HEADERS.values():
            table.add_column(name, justify="right", no_wrap=True)
        for run, values in panel.values.items():
            table.add_row(run, *(number(values[key], 2) for key in _HEADERS))
        counts = Text("grades ", style="bold")
        for g in (5, 4, 3, 2, 1):
            counts.append(f"{g}:{panel.counts[g]} ")
        weights = Text("weights ", style="bold")
        for g in (5, 4, 3, 2, 1):
            weights.append(f"w{g}={panel.weights[g]:.3g} ")
        parts: list[Table | Text] = [table, counts, weights]
        if panel.inverted:
            parts.append(
                Text("⚠ grade inversion: a lower grade outweighs a higher one", "bold red")
            )
        if not panel.values:
            parts.insert(0, Text("No runs in this project.", style="dim"))
        self.update(Group(*parts))
