"""raglabel: grade passages, measure retrieval."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["ProjectReader", "RaglabelWarning", "Report", "evaluate", "open_project"]

# Where each public name lives: the API layer, and the module of what every layer raises.
_HOMES = {
    "Report": "raglabel.api.report",
    "evaluate": "raglabel.api.evaluate",
    "ProjectReader": "raglabel.api.project",
    "open_project": "raglabel.api.project",
    "RaglabelWarning": "raglabel.errors",
}

if TYPE_CHECKING:
    from raglabel.api.evaluate import evaluate
    from raglabel.api.project import ProjectReader, open_project
    from raglabel.api.report import Report
    from raglabel.errors import RaglabelWarning


def __getattr__(name: str) -> Any:
    # A facade, loaded on first use: the command and the app start without the API.
    # import_module, not an import statement, because the root package is no layer:
    # the cli reads __version__ here and must not seem to depend on the API above it.
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'raglabel' has no attribute {name!r}")
