"""The passage being graded, in full, with the query's words picked out."""

from __future__ import annotations

import re

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from raglabel.session.catalog import Passage
from raglabel.session.grading import PassageRow
from raglabel.session.suggestions import Suggestion
from raglabel.tui.widgets.format import one_line

# Words too common to be worth highlighting in a passage.
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "is",
        "it",
        "its",
        "my",
        "of",
        "on",
        "or",
        "our",
        "so",
        "that",
        "the",
        "their",
        "there",
        "this",
        "to",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
    ]
)


def query_terms(query: str) -> list[str]:
    words = re.findall(r"\w+", query.casefold())
    # Longest first (the highlight tries them in order), ties alphabetically: a set's
    # order changes from one run to the next.
    return sorted({w for w in words if len(w) > 2 and w not in _STOP}, key=lambda w: (-len(w), w))


def highlighted(text: str, terms: list[str]) -> Text:
    out = Text(text)
    if terms:
        pattern = r"\b(" + "|".join(re.escape(t) for t in terms) + r")\w*"
        out.highlight_regex(re.compile(pattern, re.IGNORECASE), style="bold reverse")
    return out


def judge_line(s: Suggestion | None) -> Text:
    """The judge's view, worded and styled so it never reads as a grade."""
    if s is None:
        return Text("")
    spread = "" if s.low == s.high else f", answers ranged {s.low}-{s.high}"
    out = Text(f"judge suggests {s.grade} ({', '.join(s.models)}{spread})", style="italic #8a8aff")
    if s.reason:
        out.append(f": {s.reason}", style="italic dim")
    if s.flagged:
        out.append(f"\n⚠ check by hand: {s.flagged}", style="bold red")
    return out


def mark_line(row: PassageRow | None) -> Text:
    """The annotator's own skip reason and flag note on this passage, if any."""
    out = Text()
    if row is None:
        return out
    if row.skip_reason is not None:
        out.append("skipped: ", style="bold yellow")
        out.append(row.skip_reason)
    if row.flag_note is not None:
        if out:
            out.append("  ")
        out.append("⚑ flagged", style="bold red")
        out.append(f": {row.flag_note}" if row.flag_note else " (no note)")
    return out


class PassageView(VerticalScroll):
    """The passage's id and title ride on the border, so every line inside is text."""

    _marks: tuple[str, object] | None = None  # what the marks line shows

    def show_marks(self, row: PassageRow | None) -> None:
        line = mark_line(row)
        shown = (line.plain, line.spans)
        if shown == self._marks:
            # A grade leaves skip and flag marks as they were: no update, no layout pass.
            return
        self._marks = shown
        marks = self.query_one("#passage-marks", Static)
        marks.update(line)
        marks.display = bool(line)

    def compose(self):  # type: ignore[no-untyped-def]
        yield Static(id="passage-marks")
        yield Static(id="passage-judge")
        yield Static(id="passage-text")

    def show(
        self,
        passage: Passage | None,
        query: str,
        suggestion: Suggestion | None = None,
        row: PassageRow | None = None,
    ) -> None:
        body = self.query_one("#passage-text", Static)
        judge = self.query_one("#passage-judge", Static)
        judge.update(judge_line(suggestion))
        judge.display = suggestion is not None
        self.show_marks(row)
        if passage is None:
            self.border_title = None
            body.update(Text("No candidate passages for this query.", style="dim"))
            return
        # On the border, a line of its own: a newline or an escape in the data is a space.
        head = Text(one_line(passage.ext_id), style="bold")
        if passage.title:
            head.append(f" · {one_line(passage.title)}")
        self.border_title = head
        body.update(highlighted(passage.text or "(no text stored)", query_terms(query)))
        self.scroll_home(animate=False)
