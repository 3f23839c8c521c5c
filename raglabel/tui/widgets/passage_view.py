"""The passage being graded, in full, with the query's words picked out."""

from __future__ import annotations

import re
from dataclasses import dataclass

from rich.text import Text
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.visual import Visual, visualize
from textual.widget import Widget

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


def _title(passage: Passage | None) -> Text | None:
    """The passage's id and title, for the border: a line of its own, so a newline or
    an escape in the data is a space."""
    if passage is None:
        return None
    head = Text(one_line(passage.ext_id), style="bold")
    if passage.title:
        head.append(f" · {one_line(passage.title)}")
    return head


def _parts(
    passage: Passage | None, query: str, suggestion: Suggestion | None, row: PassageRow | None
) -> tuple[Text, Text, Text]:
    """The view's three parts: the annotator's marks, the judge's line, the passage."""
    if passage is None:
        body = Text("No candidate passages for this query.", style="dim")
    else:
        body = highlighted(passage.text or "(no text stored)", query_terms(query))
    return mark_line(row), judge_line(suggestion), body


@dataclass(frozen=True)
class _Ahead:
    """A passage wrapped before it is shown: what its lines were made from, its parts,
    and the lines."""

    given: tuple[object, ...]
    marks: Text
    judge: Text
    body: Text
    lines: list[Strip]


class PassageView(ScrollView):
    """The passage's id and title ride on the border, so every line inside is text: the
    annotator's own marks and the judge's suggestion, each with a blank line after it,
    then the passage.

    One scrolling widget that wraps its lines itself, as a Static does, rather than three
    Statics in a scrolling container: a new passage keeps the widget's place and size,
    so a grade that moves on to the next passage repaints this view alone, without
    laying the screen out twice (Textual lays it out again after any child's size
    changes). That is a third of the CPU a grade costs the app (benchmarks/serve.py
    runs ten such apps on two cores). For the same reason its scrollbar is always
    there: one that came with a long passage and went with a short one laid the
    screen out again, and wrapped the passage again at the other width."""

    DEFAULT_CSS = """
    PassageView {
        overflow-y: scroll;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.marks = Text()
        self.judge = Text()
        self.body = Text()
        self._lines: list[Strip] = []
        self._width = -1  # the width the lines were wrapped at; -1: wrap again
        self._ahead: _Ahead | None = None  # a passage wrapped before it is shown

    def show_marks(self, row: PassageRow | None) -> None:
        line = mark_line(row)
        if (line.plain, line.spans) == (self.marks.plain, self.marks.spans):
            return  # a grade leaves skip and flag marks as they were: nothing to redraw
        self.marks = line
        self._changed()

    def show(
        self,
        passage: Passage | None,
        query: str,
        suggestion: Suggestion | None = None,
        row: PassageRow | None = None,
    ) -> None:
        self.border_title = _title(passage)
        given = self._given(passage, query, suggestion, row)
        ahead, self._ahead = self._ahead, None
        if ahead is not None and ahead.given == given:
            self.marks, self.judge, self.body = ahead.marks, ahead.judge, ahead.body
            self._take(ahead.lines, self.scrollable_content_region.width)
            self.refresh()
        else:
            self.marks, self.judge, self.body = _parts(passage, query, suggestion, row)
            self._changed()
        self.scroll_home(animate=False)

    def prepare(
        self,
        passage: Passage | None,
        query: str,
        suggestion: Suggestion | None = None,
        row: PassageRow | None = None,
    ) -> None:
        """Wrap a passage that is likely shown next, while the annotator reads this
        one: ``show`` with the same arguments, at the same width, then wraps nothing
        (the wrap was a sixth of the CPU a grade's frame takes)."""
        width = self.scrollable_content_region.width
        if width <= 0:
            return
        marks, judge, body = _parts(passage, query, suggestion, row)
        lines = self._wrapped(marks, judge, body, width)
        self._ahead = _Ahead(
            self._given(passage, query, suggestion, row), marks, judge, body, lines
        )

    def _given(
        self,
        passage: Passage | None,
        query: str,
        suggestion: Suggestion | None,
        row: PassageRow | None,
    ) -> tuple[object, ...]:
        """All a passage's lines are made from: equal for equal lines."""
        marks = None if row is None else (row.skip_reason, row.flag_note)
        width = self.scrollable_content_region.width
        return (passage, query, suggestion, marks, width, self.visual_style)

    def _changed(self) -> None:
        self._width = -1
        self._wrap()
        self.refresh()

    def on_resize(self) -> None:
        self._changed()

    def _wrap(self) -> None:
        """Wrap the parts at the width there is, as a Static wraps its content."""
        width = self.scrollable_content_region.width
        if width <= 0:
            return
        self._take(self._wrapped(self.marks, self.judge, self.body, width), width)

    def _wrapped(self, marks: Text, judge: Text, body: Text, width: int) -> list[Strip]:
        style = self.visual_style
        lines: list[Strip] = []
        for part in (marks, judge):
            if part:
                lines += Visual.to_strips(self, visualize(self, part), width, None, style)
                lines.append(Strip.blank(width, style.rich_style))
        lines += Visual.to_strips(self, visualize(self, body), width, None, style)
        return lines

    def _take(self, lines: list[Strip], width: int) -> None:
        """Show ``lines``, wrapped at ``width``, and tell the scrollbar how many there are."""
        self._lines, self._width = lines, width
        # At least the view's height: the scrollbar, always shown, draws a bare track,
        # not a thumb, while the passage fits.
        size = Size(width, max(len(lines), self.scrollable_content_region.height))
        if size != self.virtual_size:
            # Not ``self.virtual_size = size``: that asks for a layout of the whole
            # screen, for a size only this view and its scrollbar use. Textual's own
            # update of both, without the layout, instead.
            self.set_reactive(Widget.virtual_size, size)
            self._scroll_update(size)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        if self._width != width:
            self._wrap()  # resized since: wrap at the new width
        index = y + self.scroll_offset.y
        blank = self.visual_style.rich_style
        if 0 <= index < len(self._lines):
            return self._lines[index].crop_extend(0, width, blank)
        return Strip.blank(width, blank)
