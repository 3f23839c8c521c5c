"""What ``raglabel label`` and ``raglabel demo`` hand to the app."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from raglabel.metrics.config import MetricConfig
from raglabel.session.cutoffs import DEFAULT_CUTOFFS


@dataclass(frozen=True)
class AppOptions:
    """Everything the grading app needs to start.

    ``keymap`` maps binding ids to comma-separated keys and holds only the ids the user
    remapped; the app's defaults cover the rest. ``blind`` (the default) shows an
    annotator only their own grades, and computes the live metrics on those alone.
    ``adjudicate`` opens the lead's view of pairs whose annotators disagree. ``locked``
    keeps the annotator fixed and leaves out what writes anywhere but the project (the
    qrels export): ``raglabel serve`` starts each browser tab so, because the person at
    the keys is not the person at the server. ``notices`` are shown as the app opens.
    """

    project: Path
    annotator: str
    keymap: dict[str, str] = field(default_factory=dict)
    cutoffs: tuple[int, ...] = DEFAULT_CUTOFFS
    blind: bool = True
    adjudicate: bool = False
    locked: bool = False
    config: MetricConfig = field(default_factory=MetricConfig)
    #: What the command had to guess, said again as the app opens: said only on the
    #: terminal, it showed once the app had closed, after the grades were made.
    notices: tuple[str, ...] = ()
