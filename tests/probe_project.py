"""A small project for probe tests (``raglabel agree --probe``): six queries of five
passages each, every pair graded by one annotator, each passage opening with the
``[[grade=N]]`` marker the loopback chat server's overrating judge grades by
(tests/chat_server.py, "An overrating judge"), so what the probe must find is known.

Passages are about 300 characters of words none of the queries holds, so a control
passage is neither long (under ``LONG_CHARS``) nor stuffed; padded to about twice its
length it is long, and with the query's words appended it is stuffed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from raglabel.storage.grades import GradeEvent, record
from raglabel.storage.importer import ImportRequest, run_import
from raglabel.storage.project import Project

#: The overrating judge's length: between a passage's length and twice it.
LONG_CHARS = 450
QUERIES = {
    "q1": "tidal turbine maintenance",
    "q2": "sourdough starter feeding",
    "q3": "violin bow rehair",
    "q4": "glacier calving rates",
    "q5": "bicycle chain wear",
    "q6": "espresso grind size",
}
_WORDS = [
    "meadow",
    "river",
    "stone",
    "lantern",
    "harbor",
    "willow",
    "copper",
    "orchard",
    "valley",
    "candle",
    "ribbon",
    "window",
    "pebble",
    "garden",
    "shadow",
    "marble",
    "thunder",
    "saddle",
    "feather",
    "compass",
    "blanket",
    "village",
    "quarry",
    "meadowlark",
    "canyon",
    "prairie",
    "basket",
    "chimney",
    "anchor",
    "velvet",
]


@dataclass(frozen=True)
class Pair:
    qid: str
    pid: str
    human: int  # the annotator's grade
    base: int  # the overrating judge's grade of the passage as it is


def pairs() -> list[Pair]:
    """Every pair with its grades, the same each call."""
    rng = random.Random(7)
    found = []
    for at, qid in enumerate(QUERIES):
        for n in range(1, 6):
            # Every query has a passage of each judge grade, 5 (which cannot rise) too.
            found.append(Pair(qid, f"{qid}p{n}", rng.randint(1, 5), 1 + (n + at) % 5))
    return found


def passage_text(pair: Pair, fault: str = "") -> str:
    rng = random.Random(pair.pid)
    words = [rng.choice(_WORDS) for _ in range(60)]
    body = " ".join(words)[:290].rsplit(" ", 1)[0]
    return f"[[grade={pair.base}]]{fault} {body.capitalize()}."


def build(db: Path, *, faults: dict[str, str] | None = None) -> list[Pair]:
    """The project at ``db``; ``faults`` puts a chat server fault marker into the named
    passages. Returns the pairs."""
    faults = faults or {}
    found = pairs()
    folder = db.parent
    (folder / "queries.tsv").write_text(
        "".join(f"{qid}\t{text}\n" for qid, text in QUERIES.items()), encoding="utf-8"
    )
    (folder / "passages.tsv").write_text(
        "".join(f"{p.pid}\t{passage_text(p, faults.get(p.pid, ''))}\n" for p in found),
        encoding="utf-8",
    )
    with Project.create(db) as project:
        request = ImportRequest(queries=folder / "queries.tsv", passages=folder / "passages.tsv")
        run_import(project, request)
        for p in found:
            record(project, GradeEvent(query=p.qid, passage=p.pid, annotator="ann", grade=p.human))
    return found
