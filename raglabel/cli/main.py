"""The ``raglabel`` console script: argument parsing and error-to-exit-code policy."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from raglabel import __version__
from raglabel.cli import (
    agree_cmd,
    backup_cmd,
    eval_cmd,
    export_cmd,
    import_cmd,
    init_cmd,
    judge_cmd,
    label_cmd,
    report_cmd,
    serve_cmd,
)
from raglabel.errors import InputError, StorageError, UsageError

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="raglabel",
        description="Grade passages for RAG queries and measure whether retrieval got better.",
    )
    parser.add_argument("--version", action="version", version=f"raglabel {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    init_cmd.register(commands)
    import_cmd.register(commands)
    export_cmd.register(commands)
    eval_cmd.register(commands)
    label_cmd.register(commands)
    judge_cmd.register(commands)
    agree_cmd.register(commands)
    report_cmd.register(commands)
    backup_cmd.register(commands)
    serve_cmd.register(commands)
    return parser


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """The command's arguments, with a positional an option's list took handed back
    (each command that needs it sets ``settle``)."""
    args = parser.parse_args(argv)
    settle = getattr(args, "settle", None)
    if settle is not None:
        try:
            settle(args)
        except UsageError as exc:
            parser.exit(EXIT_USAGE, f"raglabel {args.command}: error: {exc}\n")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parse_args(parser, argv)
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
    return result
