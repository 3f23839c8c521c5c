"""The rubric in full and every key, as remapped."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from raglabel.config.bindings import BINDING_IDS

RUBRIC = (
    (
        5,
        "Decisive",
        "Holds what is needed to answer the query: someone reading only this "
        "passage could answer correctly and completely.",
    ),
    (
        4,
        "Highly relevant",
        "Substantial, on-topic information that goes most of the way to "
        "an answer, though a detail or a condition is missing.",
    ),
    (
        3,
        "Partial",
        "On the topic and of some use, but far from enough on its own: "
        "background, one piece of a multi-part answer.",
    ),
    (
        2,
        "Weak",
        "Tangential: shares words or a subject with the query but would not help answer it.",
    ),
    (
        1,
        "Junk or harmful",
        "Off-topic, empty, or misleading: outdated or wrong facts, or a "
        "distractor that would lead a reader or a model to a wrong answer.",
    ),
)


def rubric_table() -> Table:
    table = Table(title="The 1-5 utility scale", show_lines=True, expand=True)
    table.add_column("grade", justify="center", no_wrap=True)
    table.add_column("name", no_wrap=True)
    table.add_column("when to give it")
    for grade, name, text in RUBRIC:
        table.add_row(str(grade), name, text)
    return table


def key_table(keymap: dict[str, str]) -> Table:
    table = Table(title="Keys (remap them by id in keys.toml)", expand=True)
    table.add_column("keys", no_wrap=True)
    table.add_column("id", style="dim", no_wrap=True)
    table.add_column("what it does")
    for binding_id, (keys, description) in BINDING_IDS.items():
        table.add_row(readable(keymap.get(binding_id, keys)), binding_id, description)
    for keys, description in (
        ("o", "Queries: sort by file order, progress, holes, or a run's RA-nWG"),
        ("Enter", "open the highlighted query (on Runs: the highlighted divergent query)"),
        ("space / c", "Runs: mark two runs / compare them"),
        ("Escape", "close a prompt or this help; back one screen"),
        ("ctrl+q", "quit (every grade is already saved)"),
    ):
        table.add_row(keys, "", description)
    return table


_NAMES = {"slash": "/", "question_mark": "?", "down": "↓", "up": "↑", "space": "space"}


def readable(keys: str) -> str:
    return ", ".join(_NAMES.get(key.strip(), key.strip()) for key in keys.split(","))


NOTES = Text.assemble(
    ("How grading moves\n", "bold"),
    "A grade key saves the grade and moves to the next passage of the query that you have "
    "not graded. The labeling queue (g) goes to the ungraded passage that most runs put in "
    "their top K, first in this query, then in the query with most such holes: grading in "
    "that order makes every run's metrics exact with the fewest grades. Undo reverts your "
    "latest action on any query and takes you there.\n",
)


def metrics_text(definitions: list[str]) -> Text:
    """The panel's metrics as computed now: each name with its definition in force."""
    text = Text("The metrics panel, at the current K\n", style="bold")
    for line in definitions:
        name, _, meaning = line.partition(": ")
        text.append(name, style="bold")
        text.append(f": {meaning}\n")
    return text


class HelpScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "app.pop_screen", "close help")
    ]

    def __init__(self, keymap: dict[str, str], definitions: list[str]) -> None:
        super().__init__()
        self.keymap = keymap
        self.definitions = definitions

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(rubric_table())
            yield Static(NOTES)
            yield Static(metrics_text(self.definitions))
            yield Static(key_table(self.keymap))
        yield Footer()
