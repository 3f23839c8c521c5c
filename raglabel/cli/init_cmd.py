"""``raglabel init``: a new, empty project file."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from raglabel.cli.arguments import new_file, project_companions
from raglabel.errors import InputError, StorageError


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "init",
        help="create an empty project database",
        description="Create an empty project database (SQLite). An existing file is never "
        "overwritten.",
    )
    parser.add_argument(
        "db", metavar="DB", type=new_file, help="the project file to create, e.g. project.db"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import sqlite3

    from raglabel.storage.project import Project

    path = Path(args.db)
    if path.exists():
        raise InputError(path, "already exists; raglabel init never overwrites a file")
    try:
        with Project.create(path) as project:
            version = project.version
    except (sqlite3.Error, StorageError) as exc:
        # Nothing half-made stays behind: the file did not exist before this command.
        for companion in project_companions(path):
            companion.unlink(missing_ok=True)
        if isinstance(exc, StorageError):
            raise
        raise InputError(path, f"cannot create the project file ({exc})") from None
    print(f"created {args.db} (schema version {version})")
    return 0
