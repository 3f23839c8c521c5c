"""The report of ``raglabel eval`` as plain dataclasses, and its JSON text.

The pydantic models in :mod:`raglabel.formats.report` define the JSON format (the
schema is generated from them and tests validate every JSON report against them);
these mirror them field for field so that an evaluation never imports pydantic,
whose import costs more than evaluating a small run. The JSON text is the one
pydantic's ``model_dump_json(indent=2, exclude_unset=True)`` wrote, float format
included.
"""

from __future__ import annotations

import json
import math
import numbers
from dataclasses import dataclass, field


@dataclass
class LabelsInfo:
    """The label set a report was computed on."""

    queries: int
    graded: int
    fingerprint: str
    source: str = "human"
    grade_inversions: list[str] = field(default_factory=list)


@dataclass
class CtxRankDetail:
    """How one query's returned passages were ordered, against their ideal order."""

    k: int
    actual_ranks: list[int]
    ideal_ranks: list[int]
    grades: list[int | None]
    passed: bool | None


@dataclass
class RunReport:
    """One run's means; ``ci``, ``per_query`` and ``ctx_rank`` only when asked for."""

    mean: dict[str, float | None]
    valid: dict[str, int]
    ci: dict[str, tuple[float, float] | None] | None = None
    per_query: dict[str, dict[str, float | None]] | None = None
    ctx_rank: dict[str, dict[str, CtxRankDetail]] | None = None

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {"mean": self.mean, "valid": self.valid}
        if self.ci is not None:
            out["ci"] = self.ci
        if self.per_query is not None:
            out["per_query"] = self.per_query
            # Asked for with --per-query: null when no ctx_rank_prec metric was.
            out["ctx_rank"] = None if self.ctx_rank is None else _fields(self.ctx_rank)
        return out


@dataclass
class Comparison:
    """Paired randomization test of ``run`` minus ``baseline`` on one metric."""

    baseline: str
    run: str
    metric: str
    mean_difference: float | None
    ci: tuple[float, float] | None
    p_value: float | None
    wins: int
    ties: int
    losses: int
    queries: int


@dataclass
class Report:
    """Everything ``raglabel eval --format json`` prints."""

    labels: LabelsInfo
    config: dict[str, object]
    runs: dict[str, RunReport]
    compare: list[Comparison] | None = None
    warnings: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "labels": vars(self.labels),
            "config": self.config,
            "runs": {name: run.as_json() for name, run in self.runs.items()},
        }
        if self.compare is not None:
            out["compare"] = [vars(c) for c in self.compare]
        out["warnings"] = self.warnings
        return out

    def to_json(self) -> str:
        parts: list[str] = []
        _write(self.as_json(), parts, "\n")
        return "".join(parts) + "\n"


def _fields(details: dict[str, dict[str, CtxRankDetail]]) -> dict[str, dict[str, object]]:
    return {key: {q: vars(d) for q, d in by_query.items()} for key, by_query in details.items()}


def json_float(value: float) -> str:
    """A float as pydantic writes it: shortest round trip, NaN and infinities as null.

    Python's repr and pydantic differ in two details only: the exponent has no
    leading zeros (``1e-7``, not ``1e-07``), and numbers from 1e-5 to 1e-4 are
    written out (``0.000015``, not ``1.5e-05``).
    """
    if not math.isfinite(value):
        return "null"
    text = float.__repr__(value)
    mantissa, sep, exponent = text.partition("e")
    if not sep:
        return text
    power = int(exponent)
    if power == -5:
        sign = "-" if mantissa.startswith("-") else ""
        return f"{sign}0.0000{mantissa.lstrip('-').replace('.', '')}"
    return f"{mantissa}e{'-' if power < 0 else '+'}{abs(power)}"


def _write(value: object, parts: list[str], newline: str) -> None:
    """Append ``value`` as indented JSON (two spaces, as json.dumps(indent=2))."""
    if isinstance(value, dict):
        if not value:
            parts.append("{}")
            return
        inner = newline + "  "
        parts.append("{")
        for i, (key, item) in enumerate(value.items()):
            parts.append(("," if i else "") + inner + json.dumps(str(key), ensure_ascii=False))
            parts.append(": ")
            _write(item, parts, inner)
        parts.append(newline + "}")
    elif isinstance(value, (list, tuple)):
        if not value:
            parts.append("[]")
            return
        inner = newline + "  "
        parts.append("[")
        for i, item in enumerate(value):
            parts.append(("," if i else "") + inner)
            _write(item, parts, inner)
        parts.append(newline + "]")
    elif isinstance(value, bool) or value is None:
        parts.append(json.dumps(value))
    elif isinstance(value, float):
        parts.append(json_float(value))
    elif isinstance(value, str):
        parts.append(json.dumps(value, ensure_ascii=False))
    elif isinstance(value, numbers.Integral):
        parts.append(str(int(value)))
    else:
        raise TypeError(f"cannot write {type(value).__name__} as JSON")
