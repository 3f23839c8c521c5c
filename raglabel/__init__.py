"""raglabel: grade passages, measure retrieval."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Report", "evaluate"]

if TYPE_CHECKING:
    from raglabel.api.evaluate import Report, evaluate


def __getattr__(name: str) -> Any:
    # A facade, loaded on first use: the command and the app start without the API.
    # import_module, not an import statement, because the root package is no layer:
    # the cli reads __version__ here and must not seem to depend on the API above it.
    if name in __all__:
        return getattr(importlib.import_module("raglabel.api.evaluate"), name)
    raise AttributeError(f"module 'raglabel' has no attribute {name!r}")
