"""The line that says whether the last action reached the database, then what it always
shows (the annotator's assignment, when they have one, and the audit sample's progress,
when the project has a draw)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


def assignment_text(done: int, assigned: int) -> str:
    """An annotator's assignment as the app words it wherever it shows it."""
    return f"your assignment: {done} of {assigned} {'query' if assigned == 1 else 'queries'} done"


def assignment_change_text(assigned: int) -> str:
    """The notice that the lead assigned anew while the app was open: the share now."""
    if assigned == 0:
        return "your assignment changed: no queries are assigned to you now"
    return f"your assignment changed: now {assigned} {'query' if assigned == 1 else 'queries'}"


def standing(assignment: tuple[int, int] | None, audit: tuple[int, int] | None) -> str:
    """What the status line keeps in view: the assignment's ``(done, assigned)``, then the
    audit's ``(complete, drawn)``, each when there is one ("" for neither)."""
    parts = []
    if assignment is not None:
        parts.append(assignment_text(*assignment))
    if audit is not None:
        parts.append(f"audit {audit[0]}/{audit[1]} complete")
    return " · ".join(parts)


class SaveMark(Static):
    DEFAULT_CSS = "SaveMark { height: 1; text-wrap: nowrap; text-overflow: ellipsis; }"

    # Both replaced, never changed in place: the class's own serve as the defaults.
    _kept = ""  # shown after the message, whatever it is
    _message = Text()  # the last message

    def keep(self, text: str) -> None:
        """Show ``text`` after every message from now on ("" for nothing)."""
        if text != self._kept:
            self._kept = text
            self._show(self._message)

    def saved(self, what: str) -> None:
        self._show(Text.assemble(("✓ saved ", "bold green"), what))

    def failed(self, what: str) -> None:
        self._show(Text.assemble(("✗ NOT saved ", "bold white on red"), " ", what))

    def note(self, what: str) -> None:
        self._show(Text(what, style="dim"))

    def _show(self, message: Text) -> None:
        self._message = message
        parts: list[Text | tuple[str, str]] = [message] if message.plain else []
        if self._kept:
            if parts:
                parts.append((" · ", "dim"))
            parts.append((self._kept, "bold"))
        self._line(Text.assemble(*parts))

    def _line(self, text: Text) -> None:
        # One line high, whatever it says (DEFAULT_CSS): a new message repaints the line
        # alone, and spares the screen a layout pass on every grade. So the message,
        # what the annotator needs after a key, comes first; what the line keeps is cut
        # at the right edge with an ellipsis when both do not fit.
        self.update(text, layout=False)
