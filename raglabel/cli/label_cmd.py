"""``raglabel label`` and ``raglabel demo``: the grading app, on a project or the demo.

Everything that can be wrong with the options, the key file or the project is found
here, before Textual takes the terminal, so it reads as a one-line error with exit code
2 rather than a traceback inside a half-drawn app. Textual itself is imported only when
the app starts, which keeps ``raglabel --help`` and ``raglabel eval`` fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from raglabel.cli.options import add_convention_options, cutoffs_option, metric_config
from raglabel.errors import InputError, UsageError
from raglabel.session.cutoffs import DEFAULT_CUTOFFS_OPTION

if TYPE_CHECKING:
    from raglabel.metrics.config import MetricConfig
    from raglabel.session.options import AppOptions

ENV_ANNOTATOR = "RAGLABEL_ANNOTATOR"
#: Set to 1 to start the app without a terminal (tests, Pilot-driven benchmarks).
ENV_ALLOW_NO_TTY = "RAGLABEL_ALLOW_NO_TTY"


def register(commands: Any) -> None:
    label = commands.add_parser(
        "label",
        help="grade passages in the terminal app",
        description=(
            "Grade a project's candidate passages in a keyboard-driven terminal app, with "
            "the runs' metrics updating as you go. Every grade is saved as you give it."
        ),
        epilog=(
            "examples:\n"
            "  raglabel label project.db\n"
            "  raglabel label project.db --annotator alice -k 10,5,20\n"
            "  raglabel label project.db --annotator lead --adjudicate\n\n"
            "key file (TOML; default $RAGLABEL_KEYS, else ~/.config/raglabel/keys.toml):\n"
            "  [keys]\n"
            '  undo = "u,ctrl+z"\n'
            '  filter = ["slash", "ctrl+f"]'
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    label.add_argument("db", metavar="DB", help="the project file (see raglabel import)")
    _add_app_options(label)
    label.add_argument(
        "--all-annotators",
        action="store_true",
        help="show and score everyone's grades (default: blind, your own grades only)",
    )
    label.add_argument(
        "--adjudicate",
        action="store_true",
        help="as the lead, settle pairs whose annotators disagree (implies --all-annotators)",
    )
    label.add_argument(
        "--locked",
        action="store_true",
        help="grade as --annotator only: no switching annotator and no export to a file "
        "(how raglabel serve starts each browser tab)",
    )
    add_convention_options(label.add_argument_group("conventions (defaults from the metric spec)"))
    label.set_defaults(handler=run_label)

    demo = commands.add_parser(
        "demo",
        help="try the grading app on a fresh copy of the bundled demo corpus",
        description=(
            "Build a fresh project from the bundled demo corpus (a fictional help center: "
            "30 queries, four retrieval runs, and the answers of two RAG systems, one of "
            "which invents details) with the first 20 queries' passages and answers already "
            "graded as yours, and open the grading app on it."
        ),
    )
    demo.add_argument(
        "--path",
        metavar="FILE",
        help="where to create the demo project (default: a new temporary directory)",
    )
    _add_app_options(demo)
    demo.set_defaults(handler=run_demo)


def _add_app_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--annotator",
        metavar="NAME",
        help=f"whose grades these are (default ${ENV_ANNOTATOR}, else $USER)",
    )
    parser.add_argument(
        "--keys",
        metavar="FILE",
        help="a TOML key file remapping the app's keys "
        "(default $RAGLABEL_KEYS, else ~/.config/raglabel/keys.toml)",
    )
    parser.add_argument(
        "-k",
        metavar="LIST",
        default=DEFAULT_CUTOFFS_OPTION,
        help=(
            "cutoffs K cycles through; the first is shown first"
            f" (default: {DEFAULT_CUTOFFS_OPTION})"
        ),
    )


#: Whose grades they are when neither --annotator nor the environment names anyone.
FALLBACK_ANNOTATOR = "annotator"


def annotator_name(option: str | None) -> str:
    """``--annotator``, else ``$RAGLABEL_ANNOTATOR``, else ``$USER``, else "annotator"."""
    if option is not None:
        if not option.strip():
            raise UsageError("--annotator must not be empty")
        return option
    for variable in (ENV_ANNOTATOR, "USER"):
        value = os.environ.get(variable, "").strip()
        if value:
            return value
    return FALLBACK_ANNOTATOR


def _with_fallback_said(args: argparse.Namespace, options: AppOptions) -> AppOptions:
    """Grades made under the fallback name are easy to mistake for nobody's: say so on
    the terminal, and in the app as it opens (the terminal's line shows only once the
    app has closed)."""
    if args.annotator is not None or options.annotator != FALLBACK_ANNOTATOR:
        return options  # a name given, or found in the environment
    notice = (
        f"grading as {FALLBACK_ANNOTATOR!r}: ${ENV_ANNOTATOR} and $USER are empty "
        f"(choose a name with --annotator NAME, or set ${ENV_ANNOTATOR})"
    )
    print(notice, file=sys.stderr)
    return replace(options, notices=(*options.notices, notice))


def _say_saved(path: Path) -> None:
    print("every grade was saved as you gave it", file=sys.stderr)
    print(f"your grades are in {path}", file=sys.stderr)


def _require_terminal() -> None:
    # A Textual driver chosen in the environment draws somewhere else than this
    # terminal: textual-serve sets one for every browser tab it starts.
    if os.environ.get(ENV_ALLOW_NO_TTY) == "1" or os.environ.get("TEXTUAL_DRIVER"):
        return
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError(
            "needs a terminal: stdin and stdout must both be one "
            f"(set {ENV_ALLOW_NO_TTY}=1 to start anyway)"
        )


def _app_options(
    args: argparse.Namespace,
    project: Path,
    *,
    blind: bool = True,
    adjudicate: bool = False,
    locked: bool = False,
    config: MetricConfig | None = None,
) -> AppOptions:
    """The options both commands share, checked."""
    from raglabel.config.keymap import load_keymap
    from raglabel.metrics.config import MetricConfig
    from raglabel.session.options import AppOptions

    return AppOptions(
        project=project,
        annotator=annotator_name(args.annotator),
        keymap=load_keymap(None if args.keys is None else Path(args.keys)),
        cutoffs=tuple(cutoffs_option(args.k)),
        blind=blind,
        adjudicate=adjudicate,
        locked=locked,
        config=config or MetricConfig(),
    )


def _start_app(options: AppOptions) -> int:
    try:
        # Imported by name at call time: the app is the only place Textual is loaded.
        module = importlib.import_module("raglabel.tui.app")
    except ModuleNotFoundError as exc:
        if exc.name not in ("raglabel.tui", "raglabel.tui.app", "textual"):
            raise
        print(f"raglabel: error: the grading app cannot start: {exc}", file=sys.stderr)
        return 1
    run_app: Callable[[AppOptions], int] = module.run_app
    return run_app(options)


def run_label(args: argparse.Namespace) -> int:
    from raglabel.storage.project import Project

    if args.locked and args.annotator is None:
        raise UsageError("--locked needs --annotator NAME: whose grades the app is locked to")
    if args.locked and args.adjudicate:
        raise UsageError("--locked grades as one annotator; --adjudicate is the lead's view")
    options = _app_options(
        args,
        Path(args.db),
        # The lead cannot settle a disagreement without seeing everyone's grades.
        blind=not (args.all_annotators or args.adjudicate),
        adjudicate=args.adjudicate,
        locked=args.locked,
        config=metric_config(args),
    )
    _require_terminal()
    # Opened (and upgraded, if an older raglabel made it) here, so a wrong file fails
    # before the app takes the screen; the app opens it again itself.
    with Project.open(options.project) as project:
        # A new name that would mislead (agree's "humans", a model's) is refused now,
        # not at the first grade inside the app.
        from raglabel.storage.annotators import refuse_names

        refuse_names(project.conn, [options.annotator])
    if options.locked:
        # Nobody reads this process's stderr but the server's log.
        return _start_app(options)
    options = _with_fallback_said(args, options)
    try:
        return _start_app(options)
    finally:
        _say_saved(options.project)


def run_demo(args: argparse.Namespace) -> int:
    from raglabel.storage.demo import build_demo

    path = None if args.path is None else Path(args.path)
    if path is not None and path.exists():
        raise InputError(path, "already exists; raglabel demo builds a fresh project")
    options = _app_options(args, path or Path("demo.db"))
    _require_terminal()
    if path is None:
        # Made only now, so a bad option or a missing terminal leaves no directory behind.
        path = Path(tempfile.mkdtemp(prefix="raglabel-demo-")) / "demo.db"
        options = replace(options, project=path)
    summary = build_demo(path, options.annotator)
    print(
        f"demo project: {path} ({summary.queries} queries, {summary.graded_queries} graded "
        f"as {options.annotator}'s, {summary.runs} runs; {summary.answer_samples} answers "
        f"of {summary.answer_systems} systems, {summary.answer_grades} answer grades)",
        file=sys.stderr,
    )
    options = _with_fallback_said(args, options)
    try:
        return _start_app(options)
    finally:
        _say_saved(path)
