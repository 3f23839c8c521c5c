"""``raglabel report``: eval's numbers as one self-contained HTML file, or Markdown with
SVG charts for a pull request."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from raglabel.cli.eval_cmd import add_inputs_and_conventions, add_reader_option, settle_db
from raglabel.errors import UsageError

if TYPE_CHECKING:
    from raglabel.analysis.inputs import EvalRequest
    from raglabel.report.model import ReportInput

FORMATS = ("html", "markdown")


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "report",
        help="a self-contained HTML (or Markdown) report with charts",
        description=(
            "Evaluate as `raglabel eval` does, with intervals, paired tests against a "
            "baseline and per-query values, and write a report to share: one HTML file "
            "with inline SVG charts (no script, nothing fetched), or a folder holding "
            "report.md and one SVG file per chart. A summary paragraph on top says which "
            "run is best on the headline metric and whether that is significant."
        ),
        epilog=(
            "examples:\n"
            "  raglabel report project.db -o report.html\n"
            "  raglabel report project.db --answers -o report.html --baseline bm25\n"
            "  raglabel report --qrels qrels.txt --run bm25=bm25.run --run dense=dense.run "
            "-o report.html\n"
            "  raglabel report project.db --format markdown -o report/\n"
            "  raglabel report project.db --format markdown -o report.md"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_inputs_and_conventions(parser, report=True)
    out = parser.add_argument_group("the report")
    out.add_argument(
        "--output",
        "-o",
        # Not ``output``: eval's inputs, which the report reuses, refuse an output folder.
        dest="destination",
        metavar="PATH",
        required=True,
        help="the HTML file to write; with --format markdown, a .md file (its charts go in"
        " the folder NAME-charts beside it) or else the folder for report.md and the charts"
        " (created if missing)",
    )
    out.add_argument(
        "--format", choices=FORMATS, default="html", help="html or markdown (default: html)"
    )
    out.add_argument(
        "--headline",
        metavar="METRIC",
        help="the metric the summary speaks of; its tests against the baseline are the "
        "headline family of p-values, adjusted apart from the others (default: the first "
        "metric)",
    )
    out.add_argument("--title", help="the report's title (default: names the inputs)")
    add_reader_option(out)
    parser.set_defaults(handler=run_report, settle=settle_db)


def _check_output(args: argparse.Namespace) -> Path:
    target = Path(args.destination)
    # Path() drops a trailing slash, which says that the user means a folder.
    folder_named = args.destination.endswith(("/", os.sep))
    if args.format == "html":
        if target.is_dir() or folder_named:
            raise UsageError(f"-o {args.destination}: is a folder; give the HTML file's path")
        if not target.parent.is_dir():
            raise UsageError(f"-o {target}: folder {str(target.parent)!r} does not exist")
    elif _is_markdown_file(args.destination):
        if target.is_dir():
            raise UsageError(f"-o {target}: is a folder; give the .md file's path, or the folder")
        charts = _charts_folder(target)
        if charts.exists() and not charts.is_dir():
            raise UsageError(f"-o {target}: {charts}, the charts' folder, is not a folder")
        if not target.parent.is_dir():
            raise UsageError(f"-o {target}: folder {str(target.parent)!r} does not exist")
    else:
        if target.exists() and not target.is_dir():
            raise UsageError(f"-o {target}: exists and is not a folder (--format markdown)")
        if not target.parent.is_dir():
            raise UsageError(f"-o {target}: folder {str(target.parent)!r} does not exist")
    return target


def _is_markdown_file(destination: str) -> bool:
    """Whether ``-o`` names the Markdown file itself (``.md``), not the report's folder."""
    return not destination.endswith(("/", os.sep)) and destination.lower().endswith(".md")


def _charts_folder(markdown_file: Path) -> Path:
    """Where a report written to a ``.md`` file puts its charts: beside it, by its name."""
    return markdown_file.with_name(f"{markdown_file.stem}-charts")


def _source(args: argparse.Namespace) -> str:
    if getattr(args, "db", None):
        return f"project {Path(args.db).name}"
    if args.samples:
        return f"samples {args.samples}"
    runs = ", ".join(spec.split("=", 1)[0] if "=" in spec else Path(spec).stem for spec in args.run)
    return f"qrels {Path(args.qrels).name if args.qrels else '(none)'}; runs {runs}"


def _say(warning: str) -> None:
    print(f"raglabel report: warning: {warning}", file=sys.stderr)


def build_input(args: argparse.Namespace, warn: Callable[[str], None] = _say) -> ReportInput:
    """Eval's document with everything a report shows, and agree's figures on a project."""
    from raglabel.analysis.entry import evaluate_request
    from raglabel.analysis.report_input import as_report_request, report_input
    from raglabel.cli.eval_inputs import eval_request, load_inputs

    # The report's parser has none of these: the report's own choices are made on the
    # request (analysis/report_input.py), as the Python API's to_html makes them.
    args.ci = args.per_query = args.compare = False
    runs = len(args.run) + bool(args.samples)
    request = as_report_request(eval_request(args), runs=runs, baseline=args.baseline)
    done = evaluate_request(*load_inputs(args, request))
    for warning in done.warnings:
        warn(warning)
    agreement = None
    if getattr(args, "db", None):
        from raglabel.analysis.agreement import agreement as agree
        from raglabel.storage.project import Project

        with Project.open_read(args.db) as project:
            agreement = agree(
                project.conn, [], resamples=args.resamples, seed=args.seed, level=args.confidence
            )
    page = report_input(
        done,
        title=args.title or "raglabel report",
        source=_source(args),
        baseline=args.baseline,
        headline=args.headline,
        agreement=agreement,
    )
    return _with_corrected(page, request)


def _with_corrected(page: ReportInput, request: EvalRequest) -> ReportInput:
    """The page with its judge-corrected section's figures, when the project has an
    audit draw (or, when the estimate is refused, why)."""
    from dataclasses import replace

    from raglabel.analysis.corrected import EstimateRefusedError, report_estimate

    estimate = report_estimate(request)
    if estimate is None:
        return page
    if isinstance(estimate, EstimateRefusedError):
        return replace(page, corrected_missing=f"{estimate.reason}; {estimate.fix}")
    return replace(page, corrected=estimate)


def run_report(args: argparse.Namespace) -> int:
    target = _check_output(args)
    report = build_input(args)
    if args.format == "html":
        from raglabel.formats.output import atomic_text
        from raglabel.report.html import render_html

        text = render_html(report)
        with atomic_text(target) as handle:
            handle.write(text)
        print(f"wrote {target}", file=sys.stderr)
        return 0
    from raglabel.report.markdown import render_markdown

    text, charts = render_markdown(report)
    if not _is_markdown_file(args.destination):
        _write_folder(target, {"report.md": text, **charts})
        print(f"wrote {target / 'report.md'} and {len(charts)} charts", file=sys.stderr)
        return 0
    from urllib.parse import quote

    from raglabel.formats.output import atomic_text

    folder = _charts_folder(target)
    for name in charts:  # the text links each chart by its bare name
        text = text.replace(f"]({name})", f"]({quote(folder.name)}/{name})")
    if charts:
        _write_folder(folder, charts)
    with atomic_text(target) as handle:
        handle.write(text)
    print(f"wrote {target} and {len(charts)} charts in {folder}", file=sys.stderr)
    return 0


def _write_folder(target: Path, files: dict[str, str]) -> None:
    """All files or none: written into a fresh folder beside the target, then moved in."""
    staging = Path(tempfile.mkdtemp(prefix=".raglabel-report-", dir=target.parent))
    try:
        for name, text in files.items():
            (staging / name).write_text(text, encoding="utf-8")
        target.mkdir(exist_ok=True)
        for name in files:
            os.replace(staging / name, target / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
