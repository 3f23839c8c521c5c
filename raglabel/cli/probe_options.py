"""``raglabel agree --probe length|stuffing``: re-ask the judge about pairs people graded,
as they are and altered in a way that should not raise a grade, and say how the grade
moved. ``agree`` adds these options (:func:`add_probe_options`) and hands a run with
``--probe`` to :func:`run_probe`; the answers are never stored."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from raglabel.cli.arguments import int_in
from raglabel.cli.judge_options import (
    DEFAULTS,
    add_asking_options,
    add_endpoint_options,
    add_load_options,
    check_models,
    check_prompt,
    params_of,
    run_limits,
)
from raglabel.errors import UsageError
from raglabel.judge.probe import PROBES

if TYPE_CHECKING:
    from raglabel.formats.probe_report import ModelProbe, ProbeReport

EXIT_INTERRUPTED: Final = 130
DEFAULT_LIMIT: Final = 50
MAX_LIMIT: Final = 100_000
#: Options of the probe alone, by destination: refused without ``--probe``.
PROBE_ONLY: Final = {
    "limit": "--limit",
    "base_url": "--base-url",
    "model": "--model",
    "api_key_env": "--api-key-env",
    "prompt": "--prompt",
    "temperature": "--temperature",
    "max_tokens": "--max-tokens",
    "json_mode": "--json-mode",
    "concurrency": "--concurrency",
    "rpm": "--rpm",
    "timeout": "--timeout",
    "max_attempts": "--max-attempts",
}
#: ``agree``'s options that make its figures, by destination: refused with ``--probe``,
#: which makes none of them.
FIGURES_ONLY: Final = {
    "k": "-k",
    "metrics": "--metrics",
    "top": "--top",
    "top_runs": "--top-runs",
    "answers": "--answers",
    "config": "--config",
    "gain_map": "--gain-map",
    "relevance_threshold": "--relevance-threshold",
    "harm_threshold": "--harm-threshold",
    "alpha": "--alpha",
    "cap4": "--cap4",
    "cap3": "--cap3",
}
#: Where the namespace keeps the defaults of ``FIGURES_ONLY``, read when the options
#: were added (``agree``'s own come first).
_FIGURE_DEFAULTS = "probe_figure_defaults"


def add_probe_options(parser: argparse.ArgumentParser) -> None:
    """The probe's options, after ``agree``'s own (whose defaults it reads, to refuse
    them with ``--probe``)."""
    probe = parser.add_argument_group(
        "probe (instead of the figures: re-ask the judge about graded pairs, as they are and"
        " altered; nothing is stored)"
    )
    probe.add_argument(
        "--probe",
        choices=PROBES,
        help="length: pad each passage with unrelated text of about its length; stuffing:"
        " append the query's words. Each drawn pair is asked twice per model (as it is, and"
        " altered) with the same prompt and parameters; --seed draws the pairs, the filler"
        " and the bootstrap, --resamples sizes it",
    )
    probe.add_argument(
        "--limit",
        type=int_in(1, MAX_LIMIT),
        metavar="N",
        help=f"with --probe: pairs to draw, 1 to {MAX_LIMIT:,} (default: {DEFAULT_LIMIT};"
        " each costs two requests per model)",
    )
    add_endpoint_options(probe, required=False, many="repeat to probe each model")
    add_asking_options(probe, answers=False)
    add_load_options(probe)
    parser.set_defaults(
        **{_FIGURE_DEFAULTS: {dest: parser.get_default(dest) for dest in FIGURES_ONLY}}
    )


def probe_requested(args: argparse.Namespace) -> bool:
    """Whether ``args`` ask for a probe; the probe's options without ``--probe``, or
    ``agree``'s figure options with it, are refused."""
    if args.probe is None:
        for dest, option in PROBE_ONLY.items():
            if getattr(args, dest, None) not in (None, DEFAULTS.get(dest)):
                raise UsageError(f"{option}: only with --probe")
        return False
    defaults = getattr(args, _FIGURE_DEFAULTS, {})
    for dest, option in FIGURES_ONLY.items():
        if dest in defaults and getattr(args, dest, None) != defaults[dest]:
            raise UsageError(f"{option}: makes agree's figures, which --probe does not")
    return True


def run_probe(args: argparse.Namespace) -> int:
    """Draw, ask, print; 0 when the run finished, 1 when it stopped early or compared no
    pair, 130 when interrupted (the answers back are still shown)."""
    from raglabel.cli.judge_cmd import ProgressLine
    from raglabel.cli.reading import open_to_read
    from raglabel.judge.client import endpoint_url, public_endpoint
    from raglabel.judge.prompt import Template
    from raglabel.session.judging import JudgeSetup
    from raglabel.session.probing import probe
    from raglabel.storage.judgments import Setting

    if not args.base_url:
        raise UsageError("--probe: give --base-url URL, the judge's endpoint")
    if not args.model:
        raise UsageError("--probe: give --model NAME, the model to ask (repeatable)")
    check_models(args)
    template = Template.from_file(Path(args.prompt)) if args.prompt else Template.builtin()
    check_prompt(args, template, "agree")
    setting = Setting(public_endpoint(endpoint_url(args.base_url)), template, params_of(args))
    setup = JudgeSetup(setting, tuple(args.model), 1, args.api_key_env, args.base_url)
    limits = run_limits(args, setup, "agree")
    bar = ProgressLine("agree")
    try:
        probed = probe(
            args.db,
            args.probe,
            args.limit or DEFAULT_LIMIT,
            setup,
            limits,
            seed=args.seed,
            resamples=args.resamples,
            open_project=lambda db: open_to_read(db, "agree"),
            on_progress=bar.update,
        )
    finally:
        bar.close()
    report = probed.report
    if args.format == "json":
        sys.stdout.write(json.dumps(as_json(report), indent=2) + "\n")
    elif args.format == "markdown":
        sys.stdout.write("```text\n" + as_text(report) + "```\n")
    else:
        from raglabel.cli.plain_table import console_width

        sys.stdout.write(as_text(report, console_width()))
    if report.status == "interrupted":
        return EXIT_INTERRUPTED
    compared = any(model.compared for model in report.models)
    return 1 if report.status == "stopped" or not compared else 0


def as_json(report: ProbeReport) -> dict[str, Any]:
    """The document ``--format json`` prints (``schemas/agree-probe.schema.json``)."""
    return {"probe": dataclasses.asdict(report)}


def _share(value: float | None) -> str:
    return "NA" if value is None else f"{value:.0%}"


def _signed(value: float) -> str:
    return f"{value:+.2f}"


def _of(count: int, total: int) -> str:
    return f"{count} ({count / total:.0%})" if total else str(count)


def as_text(report: ProbeReport, width: int | None = None) -> str:
    """The report as text, prose wrapped at spaces to a console ``width`` wide."""
    from raglabel.cli.plain_table import wrapped

    out: list[str] = []

    def say(text: str) -> None:
        out.extend(wrapped(text, width))

    drawn = report.drawn
    say(f"probe {report.probe}: {report.alteration}")
    say(
        f"asked about {drawn.how}; left out: {drawn.accepted_left_out} whose grade took a"
        f" judge suggestion, {drawn.without_text} without text"
    )
    say(
        "each pair asked twice per model, fresh, with the same prompt and parameters: as it"
        " is (control) and altered (perturbed); the change is perturbed minus control, on the"
        " 1-5 grades; rose and fell count the judge's own noise too (asked again about the"
        " same text, a model may answer otherwise), which the interval takes in"
    )
    if report.fill is not None:
        mean = "NA" if report.fill.mean_ratio is None else f"{report.fill.mean_ratio:.2f}"
        say(
            f"filler: on average {mean} times the passage's length;"
            f" {report.fill.short} pair(s) got under 90% of it (too few other passages)"
        )
    say(f"note: {report.note}")
    for model in report.models:
        out.append("")
        out += _model_lines(model, report, say_width=width)
    if report.stopped:
        out.append("")
        say(f"stopped because: {report.stopped}")
    if report.status == "interrupted":
        out.append("")
        say("interrupted: the figures cover the answers that came back")
    return "\n".join(out) + "\n"


def _model_lines(model: ModelProbe, report: ProbeReport, *, say_width: int | None) -> list[str]:
    from raglabel.cli.plain_table import wrapped

    n = model.compared
    lines = [f"{model.model}:"]
    texts = [
        f"pairs asked {model.asked}, compared {n} (both answers graded), over"
        f" {model.queries} queries",
    ]
    if n:
        texts.append(
            f"perturbed vs control: rose {_of(model.rose, n)}, stayed {_of(model.stayed, n)},"
            f" fell {_of(model.fell, n)}; {model.control_at_top} control grade(s) were 5"
            " already and could not rise"
        )
    if not n:
        # Figures over no pair would read as a model that changed nothing.
        texts.append("figures: none, as no pair got both answers graded")
    elif model.mean_change is None:
        texts.append("mean change: NA (no pair compared)")
    else:
        ci = (
            f" [{_signed(model.ci[0])}, {_signed(model.ci[1])}]"
            if model.ci is not None
            else " (no interval: fewer than 2 queries)"
        )
        texts.append(
            f"mean change: {_signed(model.mean_change)}{ci} (95% interval:"
            f" {report.interval}, {report.resamples} resamples, seed {report.seed})"
        )
    if n:
        texts.append(
            f"above the person's grade: control {_share(model.above_human_control)},"
            f" perturbed {_share(model.above_human_perturbed)}"
        )
    if model.failures:
        kinds = ", ".join(f"{f.count} {f.kind} ({f.arm})" for f in model.failures)
        texts.append(f"failed: {kinds}")
        texts += [f"  {f.arm}, {f.kind}, e.g.: {f.example}" for f in model.failures]
    elif not model.unanswered:
        texts.append("failed: none")
    if model.unanswered:
        texts.append(
            f"not answered: {model.unanswered} of {2 * model.asked} answers never came back"
            " (the run stopped or was interrupted first; see below)"
        )
    for text in texts:
        lines += wrapped("  " + text, say_width)
    return lines
