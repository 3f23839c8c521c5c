"""The user's key file, which remaps the grading app's bindings by id.

A key file is TOML with one table::

    [keys]
    undo = "u,ctrl+z"
    filter = ["slash", "ctrl+f"]
"""

from __future__ import annotations

import os
from pathlib import Path

from raglabel.config.toml_file import read_toml
from raglabel.errors import InputError

ENV_KEYS = "RAGLABEL_KEYS"


def default_path() -> Path:
    """``$XDG_CONFIG_HOME/raglabel/keys.toml``, which defaults to ``~/.config/...``."""
    config = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    if not config.is_absolute():  # the XDG spec says to ignore a relative one
        config = Path.home() / ".config"
    return config / "raglabel" / "keys.toml"


def load_keymap(path: Path | None = None) -> dict[str, str]:
    """The binding ids the key file remaps, each to its keys joined by commas.

    With no ``path``: the file ``$RAGLABEL_KEYS`` names, else the default key file if it
    exists, else no remapping at all.
    """
    if path is None:
        named = os.environ.get(ENV_KEYS)
        if named:
            path = Path(named)
            if not _is_file(path):
                raise InputError(path, f"no such key file (named by ${ENV_KEYS})")
        else:
            path = default_path()
            if not _is_file(path):
                return {}
    table, text = read_toml(path, "key file")
    # pydantic only when there is a file to check: the app's start should not pay for it.
    from raglabel.config.keyfile import parse_keys

    return parse_keys(path, table, text)


def _is_file(path: Path) -> bool:
    """Whether ``path`` is a file; a folder on the way that may not be searched is an
    error, not "no key file": the app would start with keys the user did not choose."""
    try:
        return path.is_file()
    except OSError as exc:
        raise InputError(
            path,
            f"cannot look for the key file here ({exc.strerror or exc}): set ${ENV_KEYS} to"
            " a key file, or XDG_CONFIG_HOME to a folder this account may read",
        ) from None
