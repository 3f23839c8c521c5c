"""``raglabel serve``: the grading app in browsers, and the invites that let people in."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from raglabel.cli.options import cutoffs_option, person_name
from raglabel.errors import InputError, UsageError
from raglabel.session.cutoffs import DEFAULT_CUTOFFS_OPTION

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
WILDCARDS = ("0.0.0.0", "::", "")


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "serve",
        help="the grading app in browsers, for a team, by invitation",
        description=(
            "Serve the grading app to browsers: every tab runs its own app, as "
            "`raglabel label DB --annotator NAME --locked`, and grades as the annotator "
            "whose invite link opened it. Invites are random tokens; the project keeps "
            "only a salted hash of each."
        ),
        epilog=(
            "examples:\n"
            "  raglabel serve project.db --add-annotator alice   # prints alice's invite URL\n"
            "  raglabel serve project.db                         # http://127.0.0.1:8000\n"
            "  raglabel serve project.db --port 9000 --public-url https://label.example.org\n"
            "  raglabel serve project.db --list\n"
            "  raglabel serve project.db --revoke alice"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("db", metavar="DB", help="the project file (see raglabel import)")
    where = parser.add_argument_group("where the server listens")
    where.add_argument(
        "--host", default=DEFAULT_HOST, help=f"address to bind (default: {DEFAULT_HOST})"
    )
    where.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"port to bind; 0 picks a free one (default: {DEFAULT_PORT})",
    )
    where.add_argument(
        "--public-url",
        metavar="URL",
        help="the address browsers use, when a reverse proxy stands in front "
        "(default: http://HOST:PORT)",
    )
    parser.add_argument(
        "-k",
        metavar="LIST",
        default=DEFAULT_CUTOFFS_OPTION,
        help=f"cutoffs K cycles through in the app (default: {DEFAULT_CUTOFFS_OPTION})",
    )
    invites = parser.add_argument_group("invites (each prints and exits; no server runs)")
    action = invites.add_mutually_exclusive_group()
    action.add_argument(
        "--add-annotator",
        metavar="NAME",
        help="make NAME an invite and print its URL; a new one replaces NAME's old one",
    )
    action.add_argument("--revoke", metavar="NAME", help="end NAME's invite, open tabs included")
    action.add_argument("--list", action="store_true", help="the annotators with an invite")
    parser.set_defaults(handler=run_serve)


def _public_url(args: argparse.Namespace, port: int) -> str:
    if args.public_url is not None:
        return str(args.public_url)
    if args.host in WILDCARDS:
        raise UsageError(
            f"--host {args.host or repr('')} listens on every address; give --public-url, "
            "the address annotators' browsers use (it goes into the invite links)"
        )
    host = f"[{args.host}]" if ":" in args.host else args.host
    return f"http://{host}:{port}"


def run_serve(args: argparse.Namespace) -> int:
    from raglabel.storage.invites import add_invite, invites, revoke_invite
    from raglabel.storage.project import Project
    from raglabel.web.access import Site

    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be within 0-65535, not {args.port}")
    cutoffs = ",".join(str(k) for k in cutoffs_option(args.k))
    project_path = Path(args.db)
    # Opened (and upgraded, if an older raglabel made it) before anything listens.
    with Project.open(project_path) as project:
        if args.add_annotator is not None:
            name = person_name(args.add_annotator, "--add-annotator")
            if args.port == 0 and args.public_url is None:
                raise UsageError("an invite URL needs the port: give --port or --public-url")
            site = Site.make(project_path, _public_url(args, args.port))
            token, replaced = add_invite(project, name)
            if replaced:
                print(f"{name}'s earlier invite no longer works", file=sys.stderr)
            print(site.invite_url(token))
            return 0
        if args.revoke is not None:
            name = person_name(args.revoke, "--revoke")
            if not revoke_invite(project, name):
                held = ", ".join(i.annotator for i in invites(project)) or "nobody"
                raise InputError(project_path, f"{name!r} has no invite (invited: {held})")
            print(f"{name}'s invite is revoked; their open tabs close within seconds")
            return 0
        if args.list:
            for invite in invites(project):
                print(f"{invite.annotator}\tinvited {invite.created_at}")
            return 0
        invited = [i.annotator for i in invites(project)]
    return _run_server(args, project_path, cutoffs, invited)


def _run_server(args: argparse.Namespace, project: Path, cutoffs: str, invited: list[str]) -> int:
    # Imported here: every other command starts without asyncio and the web server.
    import asyncio
    import logging

    from raglabel.web.access import RedactingFormatter, Site
    from raglabel.web.server import GradingServer, listen, serve

    _public_url(args, args.port)  # a wildcard host without --public-url fails before binding
    try:
        listener = listen(args.host, args.port)
    except OSError as exc:
        raise UsageError(
            f"cannot listen on {args.host}:{args.port} ({exc.strerror}); choose --port"
        ) from None
    port = int(listener.getsockname()[1])
    site = Site.make(project, _public_url(args, port))
    logs = logging.StreamHandler()
    logs.setFormatter(RedactingFormatter("raglabel serve: %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[logs], force=True)
    # Made before "serving" is said: a bad RAGLABEL_SERVE_TRACE path is refused first.
    server = GradingServer(project, site, cutoffs)
    print(f"serving {project} at {site.public_url}/", flush=True)
    if invited:
        print(f"invited: {', '.join(invited)}", file=sys.stderr)
    else:
        print(
            f"nobody is invited yet: raglabel serve {project} --add-annotator NAME",
            file=sys.stderr,
        )
    print("Ctrl+C stops the server; every grade is saved as it is given", file=sys.stderr)
    asyncio.run(serve(server, listener))
    return 0
