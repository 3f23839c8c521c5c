"""The line that says whether the last action reached the database."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


class SaveMark(Static):
    def saved(self, what: str) -> None:
        self.update(Text.assemble(("✓ saved ", "bold green"), what))

    def failed(self, what: str) -> None:
        self.update(Text.assemble(("✗ NOT saved ", "bold white on red"), " ", what))

    def note(self, what: str) -> None:
        self.update(Text(what, style="dim"))
