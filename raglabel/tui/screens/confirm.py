"""A yes-or-no question before an action that writes many grades at once."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label


class ConfirmScreen(ModalScreen[bool]):
    """Only y confirms; anything meant as no (n, Escape) cancels. Grading keys never
    reach the screen below while it is open."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "yes"),
        Binding("n", "answer(False)", "no"),
        Binding("escape", "answer(False)", "cancel", show=False),
    ]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="prompt"):
            yield Label(self.question)
            yield Label("y to confirm · n or Escape to cancel", classes="hint")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
