"""The grading app's binding ids, their default keys, and how a key is written.

No Textual here: the CLI checks a key file before the app starts, so a typo is a plain
error message and exit code 2, not a traceback from inside a running app. Key names
follow Textual's (``ctrl+x``, ``f5``, ``question_mark``).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

#: Binding id -> (default keys, comma-separated; description). The order is the help
#: screen's.
BINDING_IDS: dict[str, tuple[str, str]] = {
    "grade_1": ("1", "grade 1, save and advance"),
    "grade_2": ("2", "grade 2, save and advance"),
    "grade_3": ("3", "grade 3, save and advance"),
    "grade_4": ("4", "grade 4, save and advance"),
    "grade_5": ("5", "grade 5, save and advance"),
    "clear": ("x", "clear the grade"),
    "undo": ("u", "undo"),
    "down": ("j,down", "next passage"),
    "up": ("k,up", "previous passage"),
    "next_query": ("n", "next query"),
    "prev_query": ("p", "previous query"),
    "queue": ("g", "next passage in the labeling queue"),
    "cycle_k": ("K", "cycle the cutoff K"),
    "accept": ("a", "accept the judge's suggestion"),
    "accept_all": ("A", "accept all suggestions (asks first)"),
    "judge": ("J", "judge this query in the background"),
    "skip": ("s", "skip the passage"),
    "flag": ("f", "flag the passage"),
    "filter": ("slash", "filter"),
    "help": ("question_mark", "help"),
    "palette": ("ctrl+p", "command palette"),
    "queries": ("q", "back to the queries; quit from there"),
    "runs": ("r", "runs"),
    "review": ("v", "review skipped and flagged passages"),
    "progress": ("P", "team progress (the lead's view)"),
    "search": ("b", "browse: search the whole corpus"),
    "metrics": ("m", "show or hide all metrics"),
    "run_columns": ("c", "queries: next runs' columns, or none"),
    "mine": ("y", "queries: only my assignment, or all"),
    "answer_figures": ("t", "runs: retrieval or answer criteria"),
    "estimate": ("e", "runs: people's, judge's or corrected"),
    # The Answers view (grading RAG answers); the grade, clear, up and down keys above
    # act there too.
    "answers": ("w", "grade the query's answers"),
    "next_criterion": ("l,right", "answers: next criterion"),
    "prev_criterion": ("h,left", "answers: previous criterion"),
    "next_sentence": ("right_square_bracket", "answers: next sentence"),
    "prev_sentence": ("left_square_bracket", "answers: previous sentence"),
    "unsupported": ("i", "answers: mark sentence unsupported"),
    "contexts_down": ("pagedown", "answers: scroll the contexts down"),
    "contexts_up": ("pageup", "answers: scroll the contexts up"),
}

MODIFIERS = ("ctrl", "shift", "alt", "meta", "super", "hyper")
_KEY_NAME = re.compile(r"[a-z][a-z0-9_]*")
# Textual names a few punctuation keys differently from their Unicode names.
_RENAMED = {
    "solidus": "slash",
    "reverse_solidus": "backslash",
    "commercial_at": "at",
    "hyphen_minus": "minus",
    "plus_sign": "plus",
    "low_line": "underscore",
}


def _character_name(char: str) -> str:
    """What Textual calls the key that types ``char``, as its own bindings normalise it."""
    if char.isalnum():
        return char
    try:
        name = unicodedata.name(char).lower().replace("-", "_").replace(" ", "_")
    except ValueError:
        raise ValueError(f"{char!r} is not a key Textual can bind") from None
    return _RENAMED.get(name, name)


def key_name(text: str) -> str:
    """One key, checked and normalised: ``ctrl+x``, ``f5``, ``K``, ``?`` -> ``question_mark``."""
    key = text.strip()
    if not key:
        raise ValueError("empty key")
    if any(ch.isspace() for ch in key):
        raise ValueError(f"{key!r} contains whitespace; write keys like 'ctrl+x' or 'pageup'")
    *modifiers, name = key.split("+")
    if not name or not all(modifiers):
        raise ValueError(f"{key!r} has an empty part; write 'plus' for the + key")
    for modifier in modifiers:
        if modifier not in MODIFIERS:
            raise ValueError(
                f"{key!r}: {modifier!r} is not a modifier (one of {', '.join(MODIFIERS)})"
            )
    if len(name) == 1:
        name = _character_name(name)
    elif not _KEY_NAME.fullmatch(name):
        raise ValueError(
            f"{key!r} is not a Textual key name (names are lower case, like 'escape', "
            "'f5', 'slash', 'question_mark')"
        )
    return "+".join([*modifiers, name])


def key_list(value: Any) -> tuple[str, ...]:
    """A key string (``"u,ctrl+z"``) or a list of them, as distinct normalised keys."""
    if isinstance(value, str):
        parts = value.split(",")
    elif isinstance(value, list) and all(isinstance(item, str) for item in value):
        parts = [part for item in value for part in item.split(",")]
    else:
        raise ValueError("expected a key string like 'u,ctrl+z' or a list of key strings")
    if not parts:
        raise ValueError("empty key list")
    return tuple(dict.fromkeys(key_name(part) for part in parts))
