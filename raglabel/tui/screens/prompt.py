"""A one-line question (a reason to skip, an annotator's name, a file to export to)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class PromptScreen(ModalScreen[str | None]):
    """Enter answers, Escape cancels; while it is open no grading key reaches the
    screen below, so typing a reason can never grade a passage."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "cancel")]

    def __init__(self, question: str, value: str = "", *, required: bool = True) -> None:
        super().__init__()
        self.question = question
        self.value = value
        self.required = required

    def compose(self) -> ComposeResult:
        with Vertical(id="prompt"):
            yield Label(self.question)
            yield Input(value=self.value, id="prompt-input")
            yield Label("Enter to confirm · Escape to cancel", classes="hint")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        answer = event.value.strip()
        if self.required and not answer:
            self.notify("An answer is needed (Escape cancels).", severity="warning")
            return
        self.dismiss(answer)

    def action_cancel(self) -> None:
        self.dismiss(None)
