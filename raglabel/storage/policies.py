"""The policies that resolve several annotators' grades of a pair to one, by name.

Kept apart from ``labels``, which applies them, so that the CLI offers them as choices
without loading what resolving grades needs.
"""

from __future__ import annotations

from typing import Literal, get_args

Policy = Literal["median", "max", "min"]
POLICIES: tuple[Policy, ...] = get_args(Policy)
