"""The cutoffs the grading app shows, in a module of its own so that a command's
``--help`` reads them without importing the metrics (and numpy) that use them."""

from __future__ import annotations

#: Cutoffs ``K`` cycles through in the app; the first is the default.
DEFAULT_CUTOFFS = (5, 10, 20)

#: The same cutoffs as a command line spells them (``--cutoffs``' default).
DEFAULT_CUTOFFS_OPTION = ",".join(str(k) for k in DEFAULT_CUTOFFS)
