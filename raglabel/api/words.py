"""The API's words for what the evaluation says: options named as keyword arguments,
and every refusal a ``ValueError``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from raglabel.errors import InputError, UsageError
from raglabel.formats.option_words import OPTION_WORDS, keyword_argument


@contextmanager
def keyword_errors() -> Iterator[None]:
    """While the evaluation runs for the API, a warning or an error that names an
    option names the keyword a notebook types (``grade_map="0:2,1:5"``, ``baseline``),
    not the command's option; a refusal of the inputs or options is a ``ValueError``
    with that message (no command-line usage text, no exit)."""
    token = OPTION_WORDS.set(keyword_argument)
    try:
        yield
    except (UsageError, InputError) as exc:
        raise ValueError(str(exc)) from None
    finally:
        OPTION_WORDS.reset(token)
