"""The people who grade: the one rule for a new annotator's name, and where a person
is created.

Every way a person enters a project (a grade or an answer grade of theirs, a qrels import
under ``--annotator``, an invite, an assignment) creates them through :func:`person_id`,
so a name that would mislead is refused once, here, whichever door it came by. A judge's
own events (``source = 'judge'``) and a merged copy's log keep the names they carry.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from raglabel.errors import UsageError
from raglabel.storage.items import annotator_id


def person_id(conn: sqlite3.Connection, name: str) -> int:
    """The annotator row of the person ``name``, created after :func:`refuse_names`
    passes it when the project does not know them yet."""
    row = conn.execute("SELECT id FROM annotator WHERE name = ?", (name,)).fetchone()
    if row is not None:
        return int(row[0])
    refuse_names(conn, [name])
    return annotator_id(conn, name)


def refuse_names(conn: sqlite3.Connection, names: Iterable[str]) -> None:
    """Stop the creation of a person whose name misleads: empty or padded, one ``agree``
    gives its own raters (``humans``, ``judge``, ``judge (...)``), a judge model's in any
    case (their grades would read as the model's), or another of ``names`` or an
    annotator's in another case (two names for one person). Annotators already stored
    pass, unless ``names`` spells them in two cases."""
    # Imported here: the judgment import brings its file readers, which the grading app
    # (it reads shares through storage.assignments) must not pay for at its start.
    from raglabel.storage.judgment_import import asked_models, imported_models, reserved_name

    names = list(names)
    people = annotator_names(conn)
    # The names given against each other first: two new spellings of one name would
    # otherwise be told apart from a stored annotator that is neither of them.
    spelled: dict[str, str] = {}
    for name in names:
        other = spelled.setdefault(name.casefold(), name)
        if other != name:
            raise UsageError(
                f"annotators {other!r} and {name!r}: both are named here, the same name in"
                " two cases (two names for one person); give one spelling"
            )
    models = [*asked_models(conn), *sorted(imported_models(conn))]
    for name in names:
        if name in people:
            continue
        if not name.strip() or name != name.strip():
            raise UsageError(f"annotator {name!r}: a name has no space at either end")
        if reserved_name(name) is not None:
            raise UsageError(
                f"annotator {name!r}: raglabel agree gives that name its own raters (humans:"
                " people's resolved grades; judge (...): the models together); choose another"
            )
        folded = name.casefold()
        model = next((m for m in models if m.casefold() == folded), None)
        if model is not None:
            raise UsageError(
                f"annotator {name!r}: the judge model {model!r} of this project has that name;"
                " a person's grades under it would read as the model's. Choose another"
            )
        person = next((p for p in people if p.casefold() == folded), None)
        if person is not None:
            raise UsageError(
                f"annotator {name!r}: the project has annotator {person!r}, the same name in"
                " another case; use that spelling, or a name of its own"
            )


def annotator_names(conn: sqlite3.Connection) -> list[str]:
    """Every annotator the project knows, by name."""
    return sorted(str(name) for (name,) in conn.execute("SELECT name FROM annotator"))
