"""How a message names the option that fixes it: ``--grade-map 0:2,1:5`` on the command
line, ``grade_map="0:2,1:5"`` in the Python API, from one sentence.

It sits with the readers because their errors name options too (a grade map that does not
cover a label), and they are below every layer that knows who will read the message.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar

from raglabel.formats.trec.shape import is_number


def command_line_option(name: str, value: str | None) -> str:
    """``--grade-map 0:2,1:5``: an option as the command line takes it."""
    return f"--{name}" if value is None else f"--{name} {value}"


def keyword_argument(name: str, value: str | None) -> str:
    """``grade_map="0:2,1:5"``: the same option as the Python API's keyword."""
    key = name.replace("-", "_")
    if value is None:
        return key
    return f"{key}={value}" if is_number(value) else f'{key}="{value}"'


#: How a warning names the option that fixes it. The command line's words by default;
#: ``raglabel.evaluate`` sets :func:`keyword_argument` while it runs the command's own
#: evaluation, so its warnings name what a notebook would type, from the same sentence.
#: A context variable, because the warning is made layers below the call that knows
#: who will read it, and concurrent calls (threads, tasks) must not see each other's.
OPTION_WORDS: ContextVar[Callable[[str, str | None], str]] = ContextVar(
    "option_words", default=command_line_option
)
