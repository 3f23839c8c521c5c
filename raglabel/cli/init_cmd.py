"""``raglabel init``: a new, empty project file."""

from __future__ import annotations

import argparse
from typing import Any


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "init",
        help="create an empty project database",
        description="Create an empty project database (SQLite). An existing file is never "
        "overwritten.",
    )
    parser.add_argument("db", metavar="DB", help="the project file to create, e.g. project.db")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from raglabel.storage.project import Project

    with Project.create(args.db) as project:
        print(f"created {args.db} (schema version {project.version})")
    return 0
