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
from raglabel.metrics.criteria import CRITERIA, LENGTH_RULE, RUBRICS
from raglabel.metrics.table import metric

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


#: What the keys the Answers view shares with the Grade screen do there.
ANSWER_MEANINGS = {
    **{f"grade_{g}": f"grade the ▸ criterion {g}, save and move on" for g in range(1, 6)},
    "clear": "clear your grade on the ▸ criterion (and its marks)",
    "undo": "undo your latest action, answer or passage",
    "down": "next answer (system)",
    "up": "previous answer (system)",
    "next_query": "next query with answers",
    "prev_query": "previous query with answers",
    "help": "this help",
    "palette": "command palette",
    "queries": "back to the queries; quit from there",
    "runs": "runs (t there: answer statistics)",
}


def key_table(keymap: dict[str, str], *, answers: bool = False) -> Table:
    """Every key, or (``answers``) those the Answers view uses, with their meaning there."""
    table = Table(title="Keys (remap them by id in keys.toml)", expand=True)
    table.add_column("keys", no_wrap=True)
    table.add_column("id", style="dim", no_wrap=True)
    table.add_column("what it does")
    for binding_id, (keys, meaning) in BINDING_IDS.items():
        shown = meaning
        if answers:
            if binding_id in ANSWER_MEANINGS:
                shown = ANSWER_MEANINGS[binding_id]
            elif meaning.startswith("answers: "):
                shown = meaning.removeprefix("answers: ")
            else:
                continue
        table.add_row(readable(keymap.get(binding_id, keys)), binding_id, shown)
    if answers:
        table.add_row("Escape", "", "back one screen")
        table.add_row("ctrl+q", "", "quit (asks first while unsupported marks wait)")
        return table
    for keys, description in (
        (
            "o",
            f"Queries: sort by file order, progress, holes, or a run's {metric('ra_nwg').display}",
        ),
        ("Enter", "open the highlighted query (on Runs: the highlighted divergent query)"),
        ("space / c", "Runs: mark two runs / compare them"),
        ("Escape", "close a prompt or this help; back one screen"),
        ("ctrl+q", "quit (every grade is already saved)"),
    ):
        table.add_row(keys, "", description)
    return table


_NAMES = {
    "slash": "/",
    "question_mark": "?",
    "down": "↓",
    "up": "↑",
    "left": "←",
    "right": "→",
    "space": "space",
    "left_square_bracket": "[",
    "right_square_bracket": "]",
}


def readable(keys: str) -> str:
    return ", ".join(_NAMES.get(key.strip(), key.strip()) for key in keys.split(","))


NOTES = Text.assemble(
    ("How grading moves\n", "bold"),
    "A grade key saves the grade and moves to the next passage of the query that you have "
    "not graded. The labeling queue (g) goes to the ungraded passage that most runs put in "
    "their top K, first in this query, then in the query with most such holes: grading in "
    "that order makes every run's metrics exact with the fewest grades. Queries assigned "
    "to you (raglabel assign) come before all that, in their order, each until you have "
    "graded it down to the deepest K; y lists only them on the Queries screen. Undo "
    "reverts your latest action on any query and takes you there.\n",
)


def answer_rubric() -> Table:
    """The three answer criteria: what each asks, and when to give each grade."""
    table = Table(title="Answer criteria, each graded 1-5", show_lines=True, expand=True)
    table.add_column("grade", justify="center", no_wrap=True)
    for criterion in CRITERIA:
        table.add_column(criterion)
    table.add_row("", *(Text(RUBRICS[c].question, style="italic") for c in CRITERIA))
    for i, grade in enumerate((5, 4, 3, 2, 1)):
        table.add_row(str(grade), *(RUBRICS[c].anchors[i] for c in CRITERIA))
    return table


ANSWER_NOTES = Text.assemble(
    (LENGTH_RULE + "\n\n", "bold"),
    ("How grading answers moves\n", "bold"),
    "The ▸ criterion is the one the grade keys grade. A grade key saves the grade and "
    "moves to the next criterion of this answer you have not graded, then to the next "
    "answer with one. A criterion whose inputs are missing (no answer, no contexts, no "
    "question, no reference and no passage graded relevant) is NA and takes no grade.\n\n",
    ("Unsupported sentences\n", "bold"),
    "The mark key marks the sentence under the cursor as unsupported by the contexts, or "
    "unmarks it; the words of that sentence are highlighted in the contexts. Marks are "
    "saved with the faithfulness grade, as character spans of the answer: marked before "
    "that grade, they wait (the answer's title says (waiting); not yet saved) and are "
    "saved with it; changed after it, the grade is saved again with the new marks, so "
    "undo brings the old ones back. Clearing the faithfulness grade clears its marks.\n\n",
    ("The judge\n", "bold"),
    "In italics, the lower median of the judge's grades over models and repeats (~4 in "
    "the table); ~✗ when every answer failed. Blind (the default), the judge's grade on a "
    "criterion shows only once you have graded it, and you see only your own grades. Undo "
    "takes back your latest action, answer or passage, in the order you made them.\n",
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

    def __init__(
        self, keymap: dict[str, str], definitions: list[str], *, answers: bool = False
    ) -> None:
        """``answers``: opened over the Answers view, so the answer criteria come first."""
        super().__init__()
        self.keymap = keymap
        self.definitions = definitions
        self.answers = answers

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            if self.answers:
                yield Static(answer_rubric())
                yield Static(ANSWER_NOTES)
                yield Static(key_table(self.keymap, answers=True))
            else:
                yield Static(rubric_table())
                yield Static(NOTES)
                yield Static(metrics_text(self.definitions))
                yield Static(key_table(self.keymap))
        yield Footer()
