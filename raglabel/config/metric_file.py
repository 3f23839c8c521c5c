"""A metric config file: the conventions of the metric spec, set once for a project.

    [metrics]
    alpha = 0.5
    cap3 = 0.2
    harm_threshold = 1
    base_utilities = { 5 = 1.0, 4 = 0.5, 3 = 0.1, 2 = 0.0, 1 = 0.0 }

Options given on the command line win over the file. Every value is checked as the
options are, and a bad one is reported at its line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from raglabel.config.toml_file import line_of, read_toml
from raglabel.errors import InputError
from raglabel.metrics.config import ConfigError, MetricConfig

TABLE = "metrics"


def load_config_fields(path: Path) -> dict[str, Any]:
    """The ``[metrics]`` settings of a config file, each checked; unknown ones are errors."""
    table, text = read_toml(path, "config file")
    for name in table:
        if name != TABLE:
            raise InputError(
                path,
                f"unknown table or setting {name!r}: a config file holds a [{TABLE}] table",
                line_of(text, name),
            )
    fields = table.get(TABLE, {})
    if not isinstance(fields, dict):
        raise InputError(path, f"{TABLE} must be a table", line_of(text, TABLE))
    try:
        MetricConfig.from_fields(fields)
    except ConfigError as exc:
        if exc.field is None:
            raise InputError(path, exc.message) from None
        raise InputError(
            path, f"{exc.field}: {exc.message}", line_of(text, exc.field, TABLE)
        ) from None
    return dict(fields)
