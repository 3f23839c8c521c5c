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
}


def bind(binding_id: str, action: str, *, show: bool = True, priority: bool = False) -> Binding:
    keys, description = BINDING_IDS[binding_id]
    label = _FOOTER.get(binding_id, description)
    return Binding(
        keys, action, label, show=show, priority=priority, id=binding_id, tooltip=description
    )
