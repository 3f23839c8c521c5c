"""``raglabel backup``: a consistent copy of a project file, safe while others grade."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from raglabel.cli.arguments import new_file, project_file
from raglabel.errors import InputError


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "backup",
        help="copy a project file safely, even while annotators are grading in it",
        description=(
            "Write a consistent copy of a project, WAL included, through SQLite's backup "
            "API: a plain file copy taken while someone grades can miss the newest grades "
            "or catch a page half-written. The copy is a complete project on its own. An "
            "existing file is never overwritten."
        ),
    )
    parser.add_argument("db", metavar="DB", type=project_file, help="the project file")
    parser.add_argument(
        "copy", metavar="COPY", type=new_file, help="where the copy goes (must not exist)"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from raglabel.cli.reading import open_to_read

    target = Path(args.copy)
    if target.exists():
        raise InputError(target, "already exists; raglabel backup never overwrites a file")
    with open_to_read(args.db, "backup") as project:
        grades = project.backup_to(target)
    print(f"copied {args.db} to {target} ({grades} grade events)")
    return 0
