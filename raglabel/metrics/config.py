"""Every convention the metrics depend on, with the defaults of the metric spec.

Rarity weights depend on these numbers as much as on the labels, so a report always
prints the whole configuration beside its figures.

A hand-written validated record rather than a pydantic model: ``raglabel eval`` builds
one on every start, and pydantic's import alone costs more than evaluating a small run.
Nor a frozen dataclass, which compiled six generated methods at every eval's start-up
(7M instructions, 1.5% of an eval of 10,000 run lines); it behaves as that one did
(fields by keyword, equality, repr, no assignment). Coercions and messages
follow pydantic's lax mode, which this class replaced.
"""

from __future__ import annotations

import math
from typing import Any

from raglabel.metrics.record import FrozenRecord

GRADES = (1, 2, 3, 4, 5)


def trec_grades() -> dict[int, int]:
    """The TREC 0-3 relevance labels as grades (0->2, 1->3, 2->4, 3->5): how imported
    qrels and a prompt file's labels become grades unless a map says otherwise. A new
    dict each time, as callers keep it."""
    return {0: 2, 1: 3, 2: 4, 3: 5}


class ConfigError(ValueError):
    """A convention that is out of range: ``field`` names it (None: the combination)."""

    def __init__(self, field: str | None, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}" if field else message)


def _default_gain_map() -> dict[int, float]:
    # The TREC 0-3 scale shifted onto 1-5 grades: with the default import map the
    # gains equal the original labels, so nDCG matches trec_eval's ndcg_cut.
    return {g: float(max(0, g - 2)) for g in GRADES}


# Defaults of the per-grade tables, best grade first as the report prints them.
_DEFAULT_TABLES: dict[str, dict[int, float]] = {
    "base_utilities": {5: 1.0, 4: 0.5, 3: 0.1, 2: 0.0, 1: 0.0},
    "fallback_weights": {5: 1.0, 4: 1.0, 3: 0.2, 2: 0.0, 1: 0.0},
    "gain_map": _default_gain_map(),
}

# The default of a table argument: the spec's table (None stays an error, as it was).
_SPEC_TABLE: Any = object()


def _number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ConfigError(name, "Input should be a valid number")
    try:
        number = float(value)
    except (ValueError, OverflowError):
        raise ConfigError(
            name, "Input should be a valid number, unable to parse string as a number"
        ) from None
    # inf passes every lower bound and NaN every comparison written the wrong way
    # round; neither is a convention anyone means.
    if not math.isfinite(number):
        raise ConfigError(name, "Input should be a finite number")
    return number


def _integer(name: str, value: Any) -> int:
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, float):
        raise ConfigError(
            name, "Input should be a valid integer, got a number with a fractional part"
        )
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            pass
        raise ConfigError(
            name, "Input should be a valid integer, unable to parse string as an integer"
        )
    raise ConfigError(name, "Input should be a valid integer")


def _bounded(name: str, value: float, low: float | None, high: float | None) -> None:
    # Written as "not >=" so that NaN fails, as it does in pydantic.
    if low is not None and not value >= low:
        raise ConfigError(name, f"Input should be greater than or equal to {low:g}")
    if high is not None and not value <= high:
        raise ConfigError(name, f"Input should be less than or equal to {high:g}")


def _per_grade(name: str, value: Any) -> dict[int, float]:
    if not isinstance(value, dict):
        raise ConfigError(name, "Input should be a valid dictionary")
    table = {_integer(name, k): _number(name, v) for k, v in value.items()}
    missing = [g for g in GRADES if g not in table]
    extra = sorted(k for k in table if k not in GRADES)
    if missing or extra:
        raise ConfigError(
            name,
            f"Value error, needs exactly the grades 1-5 as keys (missing {missing}, "
            f"unknown {extra})",
        )
    if any(v < 0 for v in table.values()):
        raise ConfigError(name, "Value error, values must not be negative")
    return {g: table[g] for g in GRADES}


# Field -> (kind, lower bound, upper bound), in declaration order: the first bad field
# is the one reported.
_RULES: dict[str, tuple[str, float | None, float | None]] = {
    "alpha": ("number", 0.0, None),
    "cap4": ("number", 0.0, None),
    "cap3": ("number", 0.0, None),
    "base_utilities": ("grades", None, None),
    "fallback_weights": ("grades", None, None),
    "harm_threshold": ("integer", 1, 5),
    "relevance_threshold": ("integer", 1, 5),
    "gain_map": ("grades", None, None),
    "ctx_threshold": ("number", 0.0, 100.0),
    "default_k": ("integer", 1, None),
}


class MetricConfig(FrozenRecord):
    """Conventions of the metric family; all have the spec's defaults.

    - ``alpha``: rarity exponent, r_g = b_g / p_g^alpha.
    - ``cap4``: upper bound of the grade-4 weight; ``cap3``: of grades 3 and below.
    - ``base_utilities``: base utility b_g of each grade. Grades 2 and 1 default to 0
      (weight 0, as in the metric's definition); given a positive utility they are
      capped by cap3.
    - ``fallback_weights``: weights of a query whose labeled slice has no grade 5.
    - ``harm_threshold``: Harm@K counts grades at or below it.
    - ``relevance_threshold``: binary relevance of classic metrics, grade at or above.
    - ``gain_map``: nDCG gain of each grade; ``ctx_threshold``: ctx_rank_prec pass mark.
    - ``default_k``: cutoff when neither query nor caller sets one.
    """

    # In declaration order (the order of _RULES), which the repr and as_dict follow.
    __slots__ = tuple(_RULES)

    alpha: float
    cap4: float
    cap3: float
    base_utilities: dict[int, float]
    fallback_weights: dict[int, float]
    harm_threshold: int
    relevance_threshold: int
    gain_map: dict[int, float]
    ctx_threshold: float
    default_k: int

    def __init__(
        self,
        *,
        alpha: float = 1.0,
        cap4: float = 1.0,
        cap3: float = 0.25,
        base_utilities: dict[int, float] = _SPEC_TABLE,
        fallback_weights: dict[int, float] = _SPEC_TABLE,
        harm_threshold: int = 2,
        relevance_threshold: int = 4,
        gain_map: dict[int, float] = _SPEC_TABLE,
        ctx_threshold: float = 80.0,
        default_k: int = 5,
    ) -> None:
        given: dict[str, Any] = {
            "alpha": alpha,
            "cap4": cap4,
            "cap3": cap3,
            "base_utilities": base_utilities,
            "fallback_weights": fallback_weights,
            "harm_threshold": harm_threshold,
            "relevance_threshold": relevance_threshold,
            "gain_map": gain_map,
            "ctx_threshold": ctx_threshold,
            "default_k": default_k,
        }
        for name, (kind, low, high) in _RULES.items():
            raw = given[name]
            value: float | dict[int, float]
            if kind == "grades":
                # A table equal to its default keeps the default's key order, as the
                # pydantic model (which never validated defaults) printed it.
                default = _DEFAULT_TABLES[name]
                value = (
                    dict(default) if raw is _SPEC_TABLE or raw == default else _per_grade(name, raw)
                )
            else:
                value = _number(name, raw) if kind == "number" else _integer(name, raw)
                _bounded(name, value, low, high)
            object.__setattr__(self, name, value)
        if self.base_utilities[5] <= 0:
            raise ConfigError(
                None,
                "Value error, base_utilities[5] must be positive: weights are relative to it",
            )

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in _RULES)
        return f"MetricConfig({fields})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in _RULES)

    # Its tables are dicts: unhashable, as the frozen dataclass's generated hash was.
    __hash__ = None  # type: ignore[assignment]

    @classmethod
    def from_fields(cls, fields: dict[str, Any]) -> MetricConfig:
        """Like the constructor, but an unknown field is a :class:`ConfigError` too."""
        for name in fields:
            if name not in _RULES:
                raise ConfigError(name, "Extra inputs are not permitted")
        return cls(**fields)

    def as_dict(self) -> dict[str, Any]:
        """Every field, in declaration order (as the report prints them); the tables are
        copies."""
        return {
            name: dict(value) if isinstance(value, dict) else value
            for name in _RULES
            for value in (getattr(self, name),)
        }
