"""The one clock every stored event is stamped with.

Its own module so that any storage module may stamp a row without importing the project
module, which imports the schema and, through the schema's migrations, the runs module:
the runs module stamping its rows through the project module made that a cycle.
"""

from __future__ import annotations

from datetime import UTC, datetime


def now() -> str:
    """UTC time as ISO 8601 with milliseconds: sortable as text, exact enough for timing."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")
