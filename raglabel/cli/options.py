"""Option values shared by several commands."""

from __future__ import annotations

import argparse
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from raglabel.cli.arguments import int_in
from raglabel.errors import UsageError
from raglabel.session.cutoffs import DEFAULT_CUTOFFS

if TYPE_CHECKING:
    from raglabel.formats.maps import GradeMap
    from raglabel.metrics.config import MetricConfig


#: The deepest pool any ``--depth`` reads (import's candidates, judge's picks, the
#: audit's completeness, an assignment's balance and done queries).
MAX_DEPTH = 1_000_000
#: ``--depth`` of audit, assign and progress when not given: the deepest cutoff the
#: grading app shows by default, so a query complete or done there is one the app shows
#: graded at every cutoff.
DEFAULT_DEPTH = max(DEFAULT_CUTOFFS)
#: The longest name a person may be given on the command line.
MAX_NAME = 100


def person_name(name: str, option: str) -> str:
    """A person's name as ``option`` gave it, stripped; empty, overlong or holding a
    control character is a usage error naming the option (serve and assign alike)."""
    name = name.strip()
    if not name:
        raise UsageError(f"{option} needs a name")
    if len(name) > MAX_NAME:
        raise UsageError(f"{option}: a name of at most {MAX_NAME} characters, please")
    if any(unicodedata.category(ch).startswith("C") for ch in name):
        raise UsageError(f"{option}: the name holds a control character: {name!r}")
    return name


def named_file(spec: str, option: str) -> tuple[str, Path]:
    """``NAME=FILE`` or a bare ``FILE`` (named after its stem)."""
    name, sep, file = spec.partition("=")
    if sep and name and not Path(spec).exists():
        if not file:
            raise UsageError(f"{option} {spec!r}: no file after '='")
        return name, Path(file)
    return Path(spec).stem, Path(spec)


def grade_map_option(text: str | None) -> GradeMap | None:
    """The parsed ``--grade-map``, or None for the default map."""
    if not text:
        return None
    from raglabel.formats.maps import parse_grade_map

    try:
        return parse_grade_map(text)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def cutoffs_option(text: str, option: str = "-k") -> list[int]:
    """Cutoffs like ``5,10,20``: positive integers in the order given, repeats dropped."""
    from raglabel.metrics.names import parse_cutoff

    ks: list[int] = []
    for part in text.split(","):
        try:
            ks.append(parse_cutoff(part))
        except ValueError as exc:
            raise UsageError(f"{option}: {exc}") from None
    return list(dict.fromkeys(ks))


def add_convention_options(group: Any) -> None:
    """The metric spec's conventions every metric-computing command takes (``group`` is a
    parser or an argument group)."""
    group.add_argument(
        "--config",
        metavar="FILE",
        help="a TOML file with a [metrics] table of conventions (default: none)",
    )
    group.add_argument(
        "--gain-map", metavar="MAP", help="grade:gain pairs for nDCG (default: 3:1,4:2,5:3)"
    )
    # Checked here, not only by the metric configuration, so that a grade off the scale
    # gets the usage line and the wording of every other whole-number option.
    group.add_argument(
        "--relevance-threshold",
        type=int_in(1, 5),
        metavar="G",
        help="relevant: grade >= G, 1-5 (default: 4)",
    )
    group.add_argument(
        "--harm-threshold",
        type=int_in(1, 5),
        metavar="G",
        help="harm: grade <= G, 1-5 (default: 2)",
    )
    group.add_argument("--alpha", type=float, help="rarity exponent, >= 0 (default: 1)")
    group.add_argument("--cap4", type=float, help="cap of the grade-4 weight (default: 1.0)")
    group.add_argument("--cap3", type=float, help="cap of the grade-3 weight (default: 0.25)")


def metric_config(args: argparse.Namespace) -> MetricConfig:
    """The conventions ``add_convention_options`` (and ``--ctx-threshold``) set."""
    from raglabel.metrics.config import ConfigError, MetricConfig

    fields: dict[str, object] = {}
    if getattr(args, "config", None):
        from raglabel.config.metric_file import load_config_fields

        fields.update(load_config_fields(Path(args.config)))
    for option in ("alpha", "cap4", "cap3", "relevance_threshold", "harm_threshold"):
        value = getattr(args, option)
        if value is not None:
            fields[option] = value
    if getattr(args, "ctx_threshold", None) is not None:
        fields["ctx_threshold"] = args.ctx_threshold
    if args.gain_map:
        from raglabel.formats.maps import parse_gain_map

        try:
            fields["gain_map"] = parse_gain_map(args.gain_map)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    try:
        return MetricConfig.from_fields(fields)
    except ConfigError as exc:
        option = "--" + exc.field.replace("_", "-") if exc.field else "option"
        raise UsageError(f"{option}: {exc.message}") from None
