"""The ``raglabel`` console script: argument parsing and error-to-exit-code policy."""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
from collections.abc import Sequence

from raglabel import __version__
from raglabel.cli.arguments import LazyWidthFormatter, join_dash_values
from raglabel.cli.blas import PLAIN_COMMANDS, spare_blas_threads
from raglabel.errors import InputError, StorageError, UsageError

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2

# Each command's module (under raglabel.cli), in the order help lists them, and the
# commands it registers.
COMMANDS: dict[str, tuple[str, ...]] = {
    "init_cmd": ("init",),
    "import_cmd": ("import",),
    "export_cmd": ("export",),
    "eval_cmd": ("eval",),
    "label_cmd": ("label", "demo"),
    "judge_cmd": ("judge",),
    "agree_cmd": ("agree",),
    "audit_cmd": ("audit",),
    "assign_cmd": ("assign",),
    "progress_cmd": ("progress",),
    "report_cmd": ("report",),
    "backup_cmd": ("backup",),
    "serve_cmd": ("serve",),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; with ``command``, one that knows only the module registering it
    (when one does), so that a quick ``raglabel eval`` imports and builds nothing else."""
    parser = argparse.ArgumentParser(
        prog="raglabel",
        description="Grade passages for RAG queries and measure whether retrieval got better.",
        formatter_class=LazyWidthFormatter,
    )
    parser.add_argument("--version", action="version", version=f"raglabel {__version__}")
    # prog given, as argparse would format it, so that no help is formatted to build it.
    commands = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, prog=parser.prog
    )
    chosen = [module for module, names in COMMANDS.items() if command in names]
    for module in chosen or COMMANDS:
        importlib.import_module(f"raglabel.cli.{module}").register(commands)
    return parser


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """The command's arguments, with a positional an option's list took handed back
    (each command that needs it sets ``settle``)."""
    words = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(join_dash_values(words))
    settle = getattr(args, "settle", None)
    if settle is not None:
        try:
            settle(args)
        except UsageError as exc:
            parser.exit(EXIT_USAGE, f"raglabel {args.command}: error: {exc}\n")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    # The first word names the command unless it is an option (--help, --version).
    command = words[0] if words else None
    if argv is None and command in PLAIN_COMMANDS:
        spare_blas_threads()
    if argv is None and command in QUICK_EXIT:
        # The cyclic collector would walk numpy's and raglabel's module objects again
        # and again while they load (3% of the instructions of an eval of 10,000 run
        # lines), and what an evaluation makes (arrays, frames, its report) holds no
        # cycles that would outgrow it: the process ends as soon as it is written.
        # Paused before the command's module is imported and its parser built, which
        # ran several collections more (another 1.5%).
        gc.disable()
    parser = build_parser(command)
    args = parse_args(parser, argv)
    args.own_process = argv is None  # process-wide settings are the command's to make
    try:
        result: int = args.handler(args)
    except UsageError as exc:
        parser.exit(EXIT_USAGE, f"raglabel {args.command}: error: {exc}\n")
    except InputError as exc:
        print(f"raglabel {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except StorageError as exc:
        print(f"raglabel {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        print("raglabel: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    if argv is None and args.command in QUICK_EXIT:
        _exit_now(result)
    return result


#: Commands that end their process as soon as their output is out, when they run as
#: the process's own command (``argv`` None): tearing the interpreter down after a
#: quick ``raglabel eval`` (numpy's and polars' modules, every object, then the
#: collector) took about as long as the evaluation of a 10,000-line run itself.
QUICK_EXIT = frozenset({"eval"})


def _exit_now(code: int) -> None:
    """End the process with ``code``, its output flushed, skipping the interpreter's
    teardown: nothing is left to clean up (files are closed, thread pools joined, and
    raglabel registers no exit handlers)."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        # A reader gone (or a closed stream): the normal exit, which says so its own way.
        return
    os._exit(code)
