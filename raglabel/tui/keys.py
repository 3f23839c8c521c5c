"""Bindings built from the keymap's ids, so every key the app answers can be remapped."""

from __future__ import annotations

from textual.binding import Binding

from raglabel.config.bindings import BINDING_IDS

# The footer has one line for every key; the help screen gives the long descriptions.
_FOOTER = {
    "grade_1": "junk",
    "grade_2": "weak",
    "grade_3": "partial",
    "grade_4": "high",
    "grade_5": "decisive",
    "queue": "queue",
    "clear": "clear",
    "skip": "skip",
    "flag": "flag",
    "undo": "undo",
    "runs": "runs",
    "help": "help",
    "filter": "filter",
    "cycle_k": "cycle K",
    "accept": "accept",
    "next_query": "next q",
    "prev_query": "prev q",
    "queries": "queries",
    "palette": "palette",
    "review": "review",
    "progress": "progress",
    "search": "corpus",
    "metrics": "metrics",
    "run_columns": "run columns",
    "mine": "mine",
    "answers": "answers",
    "answer_figures": "answer stats",
    "estimate": "estimate",
    "next_criterion": "criterion",
    "prev_criterion": "criterion",
    "next_sentence": "sentence",
    "prev_sentence": "sentence",
    "unsupported": "unsupported",
}


def bind(
    binding_id: str,
    action: str,
    *,
    show: bool = True,
    priority: bool = False,
    label: str | None = None,
    group: Binding.Group | None = None,
) -> Binding:
    keys, description = BINDING_IDS[binding_id]
    label = label or _FOOTER.get(binding_id, description)
    return Binding(
        keys,
        action,
        label,
        show=show,
        priority=priority,
        id=binding_id,
        tooltip=description,
        group=group,
    )


def first_key(keymap: dict[str, str], binding_id: str) -> str:
    """The first key bound to ``binding_id`` (as remapped), as a person would type it."""
    keys = keymap.get(binding_id, BINDING_IDS[binding_id][0])
    key = keys.split(",")[0].strip()
    return {
        "slash": "/",
        "question_mark": "?",
        "left_square_bracket": "[",
        "right_square_bracket": "]",
    }.get(key, key)
