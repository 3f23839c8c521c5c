"""The passage being graded, in full, with the query's words picked out."""

from __future__ import annotations

import re

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from raglabel.session.catalog import Passage

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
    return sorted({w for w in words if len(w) > 2 and w not in _STOP}, key=len, reverse=True)


def highlighted(text: str, terms: list[str]) -> Text:
    out = Text(text)
    if terms:
        pattern = r"\b(" + "|".join(re.escape(t) for t in terms) + r")\w*"
        out.highlight_regex(re.compile(pattern, re.IGNORECASE), style="bold reverse")
    return out


class PassageView(VerticalScroll):
    def compose(self):  # type: ignore[no-untyped-def]
        yield Static(id="passage-title")
        yield Static(id="passage-text")

    def show(self, passage: Passage | None, query: str) -> None:
        title = self.query_one("#passage-title", Static)
        body = self.query_one("#passage-text", Static)
        if passage is None:
            title.update("")
            body.update(Text("No candidate passages for this query.", style="dim"))
            return
        head = Text(passage.ext_id, style="bold")
        if passage.title:
            head.append(f" · {passage.title}")
        title.update(head)
        body.update(highlighted(passage.text or "(no text stored)", query_terms(query)))
        self.scroll_home(animate=False)
