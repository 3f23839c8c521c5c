"""The report of ``raglabel eval``: its dataclasses, and their JSON text.

These dataclasses are the JSON format's one definition. The JSON Schema in ``schemas/``
is generated from them through pydantic (:mod:`raglabel.formats.schemas`), tests
validate written reports against them the same way, and an evaluation never imports
pydantic, whose import costs more than evaluating a small run: the schema's settings are
plain-dict ``__pydantic_config__`` attributes that only pydantic reads, and the field
descriptions are the attribute docstrings. The JSON text is the one pydantic writes for
these types (indented by two, float format included), with the fields a run or report
was not asked for left out.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from raglabel.metrics.stats import Comparison

if TYPE_CHECKING:
    from raglabel.formats.report_details import (
        CorrectedMean,
        CriterionAnswers,
        CtxRankDetail,
        GradeSummary,
        SampleGrades,
    )

__all__ = [
    "Comparison",
    "CorrectedComparison",
    "CorrectedMean",
    "CriterionAnswers",
    "CtxRankDetail",
    "EstimateInfo",
    "Figure",
    "Figures",
    "GradeSummary",
    "LabelsInfo",
    "Report",
    "RunReport",
    "SampleGrades",
    "json_float",
]

# Unknown keys are an error (additionalProperties: false), and attribute docstrings are
# the schema's field descriptions.
_SCHEMA_CONFIG: dict[str, object] = {"extra": "forbid", "use_attribute_docstrings": True}


def _json_key(name: str) -> str:
    """A field's key in the JSON: ``lam`` is ``lambda`` (a Python keyword), the others
    are their own names."""
    return "lambda" if name == "lam" else name


# The report's types whose JSON names a field otherwise than Python does.
_ALIASED_CONFIG: dict[str, object] = {**_SCHEMA_CONFIG, "alias_generator": _json_key}

# Defined in raglabel.formats.report_details, and named here only when asked for: an
# evaluation without --per-query or --answers builds none of these dataclasses.
_DETAILS = frozenset(
    {"CorrectedMean", "CriterionAnswers", "CtxRankDetail", "GradeSummary", "SampleGrades"}
)


def _load_details() -> None:
    """Bind the detail types in this module's namespace, where pydantic resolves the
    string annotations of the report's fields."""
    from raglabel.formats import report_details

    globals().update({name: getattr(report_details, name) for name in _DETAILS})


def __getattr__(name: str) -> object:
    if name in _DETAILS:
        _load_details()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _NamesDetails:
    """For the report's types whose fields name a detail type: pydantic builds their
    schema (validation, serialisation, JSON Schema) only once the detail types are
    bound here, which a plain ``TypeAdapter(Report)`` would not otherwise do."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        _load_details()
        return handler(source)


@dataclass
class LabelsInfo:
    """The label set a report was computed on."""

    __pydantic_config__: ClassVar[dict[str, object]] = _SCHEMA_CONFIG

    queries: int
    """Queries in the label set."""
    graded: int
    """Graded (query, passage) pairs."""
    fingerprint: str
    """Identifies the exact label set; changes when any grade changes."""
    source: str = "human"
    """Which grades the metrics used."""
    grade_inversions: list[str] = field(default_factory=list)
    """Queries whose rarity weights rank a lower grade above a higher one."""


@dataclass
class EstimateInfo:
    """Which estimate the report's means are (``eval --estimate``), and for the
    judge-corrected one the audit sample it stands on."""

    __pydantic_config__: ClassVar[dict[str, object]] = _SCHEMA_CONFIG

    kind: Literal["judge", "corrected"]
    """``judge``: judge labels on every pair, no human grade; ``corrected``: the judge's
    figures on every query corrected by people's on the complete drawn queries."""
    population: int
    """Queries the judge's figures are over: for ``corrected`` the queries the project's
    stored runs cover (the population the draws took from)."""
    drawn: int | None = None
    """Queries drawn by ``raglabel audit`` (``corrected`` only)."""
    complete: int | None = None
    """Drawn queries a person graded in full to ``depth`` (``corrected`` only)."""
    incomplete: list[str] | None = None
    """Drawn queries not complete, left out of the estimate (``corrected`` only)."""
    depth: int | None = None
    """The depth of completeness: the deepest cutoff of the metrics (``corrected`` only)."""

    def as_json(self) -> dict[str, object]:
        return {key: value for key, value in vars(self).items() if value is not None}


@dataclass
class Figures:
    """Means with their normal 95% (``config.confidence``) intervals, per metric: a run's
    judge-only or human-only figures beside its judge-corrected ones."""

    __pydantic_config__: ClassVar[dict[str, object]] = _SCHEMA_CONFIG

    mean: dict[str, float | None]
    """Mean over the queries where the metric is defined; null with fewer than 2."""
    ci: dict[str, tuple[float, float] | None]
    """mean +- z * sd / sqrt(valid)."""
    valid: dict[str, int]
    """Queries that entered each mean."""


@dataclass
class Figure:
    """A mean difference with its normal interval: a comparison's judge-only or
    human-only figure beside its judge-corrected one."""

    __pydantic_config__: ClassVar[dict[str, object]] = _SCHEMA_CONFIG

    mean_difference: float | None
    ci: tuple[float, float] | None
    queries: int
    """Queries with a difference (both runs' values defined)."""


@dataclass(frozen=True)
class CorrectedComparison(Comparison):
    """A paired difference estimated judge-corrected (``eval --estimate corrected
    --compare``): ``mean_difference``, ``ci`` and ``p_value`` (a normal test of no
    difference) are the prediction-powered estimate's over the per-query differences;
    ``wins``, ``ties``, ``losses`` and ``queries`` count the complete drawn queries by
    people's labels where both runs' differences are defined."""

    __pydantic_config__: ClassVar[dict[str, object]] = _ALIASED_CONFIG

    queries_to_settle: int | None = None
    """More complete drawn queries that would likely make the interval exclude 0 at the
    current effect size; 0 when it does already; null when the effect is 0 or no number
    of undrawn queries would."""
    lam: float | None = None
    """The judge's weight (PPI++'s power tuning, clipped to [0, 1]); JSON key ``lambda``."""
    judge_only: Figure | None = None
    """The difference on judge labels over the population."""
    human_only: Figure | None = None
    """The difference on people's labels over the complete drawn queries."""

    @property
    def settling(self) -> str:
        """``queries_to_settle`` in words, the same in every table, screen and page."""
        if self.mean_difference is None:
            return "-"
        if self.queries_to_settle == 0:
            return "settled"
        if self.queries_to_settle is None:
            return "not within the undrawn queries" if self.mean_difference else "no effect"
        return f"{self.queries_to_settle} more queries to settle"

    def as_json(self) -> dict[str, object]:
        out = {_json_key(key): value for key, value in vars(self).items()}
        for key in ("judge_only", "human_only"):
            figure = out[key]
            out[key] = None if figure is None else vars(figure)
        return out


@dataclass
class RunReport(_NamesDetails):
    """One run's means; ``ci``, ``per_query`` and ``ctx_rank`` only when asked for;
    ``lambda``, ``judge_only`` and ``human_only`` with ``--estimate corrected``."""

    __pydantic_config__: ClassVar[dict[str, object]] = _ALIASED_CONFIG

    mean: dict[str, float | None]
    """Macro-average over queries; null is NA."""
    valid: dict[str, int]
    """Queries that entered each mean."""
    judge_share: dict[str, float | None] | None = None
    """Per cutoff K (with --fill-with-judge): of the entries in the run's top K over all
    queries that have a label, the share whose label is the judge's; null when none has."""
    ci: dict[str, tuple[float, float] | None] | None = None
    """Percentile bootstrap interval of each mean (with --ci)."""
    per_query: dict[str, dict[str, float | None]] | None = None
    """Each query's values (with --per-query); null is NA. A metric at a cutoff other than
    the query's own k (``config.query_k``) is left out: that query has no value there."""
    ctx_rank: dict[str, dict[str, CtxRankDetail]] | None = None
    """Per cutoff and query: actual vs ideal ranks (with --per-query)."""
    lam: dict[str, float | None] | None = None
    """The judge's weight per metric (``--estimate corrected``; JSON key ``lambda``):
    PPI++'s power tuning, clipped to [0, 1]; null where there is no corrected mean."""
    judge_only: Figures | None = None
    """Judge labels alone over the population (``--estimate corrected``)."""
    human_only: Figures | None = None
    """People's labels alone over the complete drawn queries (``--estimate corrected``)."""

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {"mean": self.mean, "valid": self.valid}
        if self.judge_share is not None:
            out["judge_share"] = self.judge_share
        if self.ci is not None:
            out["ci"] = self.ci
        if self.per_query is not None:
            out["per_query"] = self.per_query
            # Asked for with --per-query: null when no ctx_rank_prec metric was.
            out["ctx_rank"] = None if self.ctx_rank is None else _fields(self.ctx_rank)
        if self.lam is not None:
            out["lambda"] = self.lam
        if self.judge_only is not None:
            out["judge_only"] = vars(self.judge_only)
        if self.human_only is not None:
            out["human_only"] = vars(self.human_only)
        return out


@dataclass
class Report(_NamesDetails):
    """Everything ``raglabel eval --format json`` prints."""

    __pydantic_config__: ClassVar[dict[str, object]] = _SCHEMA_CONFIG

    labels: LabelsInfo
    config: dict[str, object]
    """Every convention in force."""
    runs: dict[str, RunReport]
    compare: list[Comparison | CorrectedComparison] | None = None
    warnings: list[str] = field(default_factory=list)
    answers: dict[str, dict[str, CriterionAnswers]] | None = None
    """Per answer system and criterion (with --answers)."""
    answer_compare: list[Comparison] | None = None
    """Paired randomization tests between answer systems over their shared samples
    (with --answers and --compare): ``run`` is the system, ``metric`` is
    ``criterion:grader`` (grader ``human`` or ``judge``), ``queries`` the samples."""
    estimate: EstimateInfo | None = None
    """Which estimate the means are (with ``--estimate judge`` or ``corrected``)."""

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "labels": vars(self.labels),
            "config": self.config,
            "runs": {name: run.as_json() for name, run in self.runs.items()},
        }
        if self.compare is not None:
            out["compare"] = [
                c.as_json() if isinstance(c, CorrectedComparison) else vars(c) for c in self.compare
            ]
        out["warnings"] = self.warnings
        if self.answers is not None:
            out["answers"] = {
                system: {name: c.as_json() for name, c in criteria.items()}
                for system, criteria in self.answers.items()
            }
        if self.answer_compare is not None:
            out["answer_compare"] = [vars(c) for c in self.answer_compare]
        # Last, where the model declares it, so the plain JSON keeps pydantic's key order.
        if self.estimate is not None:
            out["estimate"] = self.estimate.as_json()
        return out

    def to_json(self) -> str:
        # json is imported here, not with the module: a table needs none of it.
        from json import dumps

        parts: list[str] = []
        _write(self.as_json(), parts, "\n", dumps)
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


def _write(value: object, parts: list[str], newline: str, dumps: Callable[..., str]) -> None:
    """Append ``value`` as indented JSON (two spaces, as json.dumps(indent=2));
    ``dumps`` is json's, which writes the strings and constants."""
    if isinstance(value, dict):
        if not value:
            parts.append("{}")
            return
        inner = newline + "  "
        parts.append("{")
        for i, (key, item) in enumerate(value.items()):
            parts.append(("," if i else "") + inner + dumps(str(key), ensure_ascii=False))
            parts.append(": ")
            _write(item, parts, inner, dumps)
        parts.append(newline + "}")
    elif isinstance(value, (list, tuple)):
        if not value:
            parts.append("[]")
            return
        inner = newline + "  "
        parts.append("[")
        for i, item in enumerate(value):
            parts.append(("," if i else "") + inner)
            _write(item, parts, inner, dumps)
        parts.append(newline + "]")
    elif isinstance(value, bool) or value is None:
        parts.append(dumps(value))
    elif isinstance(value, float):
        parts.append(json_float(value))
    elif isinstance(value, str):
        parts.append(dumps(value, ensure_ascii=False))
    elif isinstance(value, numbers.Integral):
        parts.append(str(int(value)))
    else:
        raise TypeError(f"cannot write {type(value).__name__} as JSON")
