"""Read-only records written by hand, for the classes every ``raglabel eval`` builds.

A dataclass generates the source of its ``__init__``, ``__repr__`` and (frozen)
``__setattr__``/``__delattr__`` and compiles it when its module is imported: 1-5M
instructions each, a few percent of a quick eval's whole process. The records on that
path need little of it: their ``__init__`` is written out, the freezing is inherited
from here, and only what something uses besides (a metric key's equality, hash and
order) is written too; records that hold arrays compare by identity and keep object's
repr, as nothing prints them.
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError


class FrozenRecord:
    """Refuses assignment and deletion after ``__init__``, as a frozen dataclass does
    (same error); ``__init__`` sets fields with :func:`object.__setattr__`."""

    __slots__ = ()

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __setstate__(self, state: object) -> None:
        """Fields restored by ``copy`` and ``pickle`` the way ``__init__`` sets them: both
        would assign them otherwise, which a frozen record refuses. The state is the
        fields' dict, or (dict, slots) for a class with slots."""
        parts = state if isinstance(state, tuple) else (state,)
        for part in parts:
            if isinstance(part, dict):
                for name, value in part.items():
                    object.__setattr__(self, name, value)
