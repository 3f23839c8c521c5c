"""Whether a TREC file is a run or qrels, from its first data line.

A run line is ``qid Q0 docid rank score tag``; a qrels line ``qid iteration docid
relevance``. Given one for the other, a reader would take a run's rank for a relevance
label (and refuse it only when the rank is one the grade map does not cover, 4 and up
by default) or stop at a qrels line's missing fields: so the shape is checked first,
and the error says which file it looks like, whatever the ranks are.
"""

from __future__ import annotations

from pathlib import Path

from raglabel.errors import InputError
from raglabel.formats.lines import without_byte_order_mark

RUN_LAYOUT = "qid Q0 docid rank score tag"
QRELS_LAYOUT = "qid iteration docid relevance"
#: What is read of a file to find its first data line: enough for comments and long ids.
_HEAD_BYTES = 65536


def first_data_line(path: Path) -> tuple[int, list[str]] | None:
    """(line number, fields) of the first line that is neither blank nor a ``#`` comment,
    from the file's first 64 KB; None when there is none there or it cannot be read
    (the reader then says why)."""
    try:
        with path.open("rb") as handle:
            head = without_byte_order_mark(handle.read(_HEAD_BYTES))
    except OSError:
        return None
    for number, raw in enumerate(head.split(b"\n"), start=1):  # numbered as readers do
        fields = raw.decode("utf-8", "replace").split()
        if fields and not fields[0].startswith("#"):
            return number, fields
    return None


def is_number(text: str) -> bool:
    """Whether ``text`` reads as a number (a score, or exponents such as ``2E-1``)."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def _integer(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def is_run_line(fields: list[str]) -> bool:
    """A run's line: six fields or more with ``Q0`` in the second, or with a rank and a
    score in the fourth and fifth (whatever the second holds: trec_eval ignores it), or
    five with a score that is not a whole number. A qrels line has four fields, the
    fourth a whole-number label."""
    if len(fields) >= 6 and (fields[1].upper() == "Q0" or _integer(fields[3])):
        return is_number(fields[4]) or fields[1].upper() == "Q0"
    return len(fields) == 5 and is_number(fields[4]) and not _integer(fields[4])


def is_qrels_line(fields: list[str]) -> bool:
    """A qrels line: four fields, the fourth a whole-number label, the second not ``Q0``."""
    return len(fields) == 4 and fields[1].upper() != "Q0" and _integer(fields[3])


def _run_words(fields: list[str]) -> str:
    return (
        f"looks like a run ({RUN_LAYOUT}; this line has {len(fields)} fields), not qrels "
        f"({QRELS_LAYOUT}), whose reader would take the rank {fields[3]} for a relevance "
        "label: give runs as --run and the labels as --qrels"
    )


def run_given_as_qrels(path: Path) -> str | None:
    """Why ``path``, given as qrels, is a run instead (None: it does not look like one)."""
    line = first_data_line(path)
    if line is None or not is_run_line(line[1]):
        return None
    return f"{path} {_run_words(line[1])}"


def refuse_run_as_qrels(path: Path) -> None:
    """Raise, naming the line, when a file given as qrels is a run."""
    line = first_data_line(path)
    if line is not None and is_run_line(line[1]):
        raise InputError(path, _run_words(line[1]), line[0])


def require_run_fields(path: Path, number: int, fields: list[str], *, first: bool) -> None:
    """A run line needs six fields; a first line short of them that reads as qrels says
    the file is qrels, whichever command read it."""
    if len(fields) >= 6:
        return
    message = f"expected 6 fields ({RUN_LAYOUT}), found {len(fields)}"
    if first and is_qrels_line(fields):
        message += f": the file looks like qrels ({QRELS_LAYOUT}), not a run; give it as --qrels"
    raise InputError(path, message, number)
