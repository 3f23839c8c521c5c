"""Each tab's app process under ``raglabel serve``: how it is started, and what the tab
and the server's log say when it fails.

The first tests drive raglabel/web/tab.py with small stand-in processes (milliseconds);
the last ones run the real server and the real app, from a folder that holds a broken
``raglabel/`` and with a broken key file. The page itself is in test_serve_browser.py.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from io import StringIO
from pathlib import Path

import aiohttp
import pytest
from rich.console import Console
from rich.traceback import Traceback

import raglabel
from raglabel.storage.demo import build_demo
from raglabel.storage.invites import add_invite
from raglabel.storage.project import Project
from raglabel.web import tab as tab_module
from raglabel.web.access import Site
from raglabel.web.pages import ENDED
from raglabel.web.tab import Ending, TabApp, error_line, tab_command

#: How long a real app may take to start on a busy 2-core machine.
PATIENCE = 60.0
PACKAGE_ROOT = Path(raglabel.__file__).resolve().parent.parent


# -- the command -------------------------------------------------------------------------


def test_the_tab_runs_python_so_the_current_folder_cannot_shadow_raglabel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(tab_command(Path("team.db"), "alice", "5"))
    assert argv[:4] == [sys.executable, "-P", "-m", "raglabel"]
    # The project path stays as given: the tab runs in the server's current folder.
    assert argv[argv.index("label") + 1] == "team.db"


def test_a_server_run_from_its_own_checkout_gives_its_tabs_that_same_checkout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `python -m raglabel serve` in a checkout that may not be installed: there the
    # current folder's raglabel is the server's own, and -P would lose it.
    monkeypatch.chdir(PACKAGE_ROOT)
    argv = shlex.split(tab_command(Path("team.db"), "alice", "5"))
    assert argv[:3] == [sys.executable, "-m", "raglabel"]


# -- the error's line --------------------------------------------------------------------


def stderr_of(script: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode != 0
    return done.stderr


def test_a_tracebacks_line_is_its_exception_not_its_heading() -> None:
    plain = stderr_of("""
        def load():
            raise ImportError("this checkout is broken")
        load()
    """)
    assert plain.startswith("Traceback (most recent call last)")
    assert error_line(plain) == "ImportError: this checkout is broken"
    chained = stderr_of("""
        try:
            {}["key"]
        except KeyError:
            raise RuntimeError("the project file is locked") from None
    """)
    assert error_line(chained) == "RuntimeError: the project file is locked"
    chained = stderr_of("""
        try:
            {}["key"]
        except KeyError:
            raise RuntimeError("while handling")
    """)
    assert "During handling" in chained
    assert error_line(chained) == "RuntimeError: while handling"


def test_a_rich_traceback_as_textual_prints_it_gives_its_exception_line() -> None:
    try:
        int("not a number")
    except ValueError:
        rendered = Traceback()
    console = Console(file=StringIO(), width=90, force_terminal=True, color_system="truecolor")
    console.print(rendered)
    printed = console.file.getvalue()  # type: ignore[attr-defined]
    assert "\x1b[" in printed and "╭" in printed
    assert (
        error_line(printed) == "ValueError: invalid literal for int() with base 10: 'not a number'"
    )


def test_an_error_that_is_no_traceback_gives_its_first_line() -> None:
    said = "raglabel label: error: keys.toml:2: keys.undo: expected a key string\nmore\n"
    assert (
        error_line(said) == "raglabel label: error: keys.toml:2: keys.undo: expected a key string"
    )
    warned = "raglabel: warning: 3 queries have no text\nraglabel label: error: locked\n"
    assert error_line(warned) == "raglabel label: error: locked"
    assert error_line("\n\n  \n") == ""
    assert len(error_line("x" * 5000)) == tab_module.LINE_CHARS
    assert Ending(False, False, 2, "").line == (
        "the app ended with status 2 before it started, saying nothing"
    )
    assert Ending(True, True, -9, "").line == "the app was ended by signal 9"


# -- the process, with stand-ins for the app ---------------------------------------------

#: A stand-in app: Textual's web driver's first line, one data packet, then the script's
#: own ending. Packets are a type byte, a 4-byte big-endian size, the payload.
STAND_IN = """
import json, sys, time, traceback
out = sys.stdout.buffer
def packet(kind, payload):
    out.write(kind + len(payload).to_bytes(4, "big") + payload)
out.write(b"__GANGLION__\\n")
packet(b"D", b"the first screen")
out.flush()
"""


class Relay:
    """What a TabApp hands the browser, and how it says the app ended."""

    def __init__(self) -> None:
        self.data: list[bytes] = []
        self.closed = False
        self.endings: asyncio.Queue[Ending] = asyncio.Queue()

    async def write_bytes(self, data: bytes) -> None:
        self.data.append(data)

    async def write_str(self, text: str) -> None: ...

    async def close(self) -> None:
        self.closed = True

    async def ended(self, ending: Ending) -> None:
        await self.endings.put(ending)


async def run_stand_in(script: str) -> tuple[Relay, Ending]:
    from textual_serve.download_manager import DownloadManager

    relay = Relay()
    command = shlex.join([sys.executable, "-c", textwrap.dedent(script)])
    app = TabApp(
        command,
        ended=relay.ended,
        write_bytes=relay.write_bytes,
        write_str=relay.write_str,
        close=relay.close,
        download_manager=DownloadManager(),
    )
    await app.start(80, 24)
    ending = await asyncio.wait_for(relay.endings.get(), 30)
    await app.stop()
    return relay, ending


async def test_an_app_that_crashes_after_starting_is_a_failure_with_its_exception() -> None:
    relay, ending = await run_stand_in(
        STAND_IN
        + """
packet(b"M", json.dumps({"type": "exit"}).encode())
out.flush()
try:
    raise RuntimeError("the grade could not be saved")
except RuntimeError:
    traceback.print_exc()
sys.exit(1)
"""
    )
    assert relay.data == [b"the first screen"]
    assert ending.started and ending.said_done and ending.status == 1
    assert ending.failed
    assert ending.line == "RuntimeError: the grade could not be saved"
    assert not relay.closed  # the server closes the tab, saying why


async def test_an_app_that_quits_well_is_no_failure() -> None:
    _, ending = await run_stand_in(
        STAND_IN + 'packet(b"M", json.dumps({"type": "exit"}).encode())\nout.flush()\n'
    )
    assert not ending.failed and ending.output == ""


async def test_an_app_that_prints_instead_of_starting_is_ended_and_reported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tab_module, "EXIT_GRACE", 0.5)
    started = time.monotonic()
    _, ending = await run_stand_in(
        """
import sys, time
for n in range(30):
    print(f"not a Textual app, line {n}", flush=True)
time.sleep(60)
"""
    )
    assert time.monotonic() - started < 20  # killed, not waited for
    assert not ending.started and ending.failed and ending.status < 0
    assert ending.line == "not a Textual app, line 0"


# -- the real server and app ---------------------------------------------------------------


def console_script() -> Path:
    """The installed ``raglabel`` command, as a person runs it: unlike ``python -m``,
    it does not itself put the current folder on the import path."""
    found = shutil.which("raglabel", path=str(Path(sys.executable).parent))
    assert found, "the raglabel command is installed beside this Python"
    return Path(found)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    db = tmp_path / "team.db"
    build_demo(db, "owner", answers=False)
    return db


def serve_from(folder: Path, db: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [str(console_script()), "serve", db.name, "--port", "0"],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("serving "):
        process.kill()
        raise AssertionError(f"serve did not start: {line!r} {process.communicate()[1]}")
    return process, line.rsplit(" at ", 1)[1].strip().rstrip("/")


def stop(process: subprocess.Popen[str]) -> str:
    """End the server; its log (stderr)."""
    process.terminate()
    try:
        _, log = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        _, log = process.communicate()
    return log


@pytest.fixture
def clean_env() -> Iterator[dict[str, str]]:
    yield {
        k: v
        for k, v in os.environ.items()
        if k not in ("RAGLABEL_ANNOTATOR", "RAGLABEL_KEYS", "PYTHONSAFEPATH")
    }


async def first_words(db: Path, url: str, name: str) -> tuple[list[aiohttp.WSMessage], int]:
    """Open a tab's websocket as a signed-in browser would; the messages until the
    app's first screen (its binary packets name the project) or the server's close, and
    the close code (0 for the first screen)."""
    with Project.open(db) as opened:
        token = add_invite(opened, name)[0]
    site = Site.make(db.resolve(), url)
    headers = {"Origin": url, "Cookie": f"{site.cookie_name}={token}"}
    got: list[aiohttp.WSMessage] = []
    screen = b""
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(f"{url}/ws?width=100&height=30", headers=headers) as socket,
    ):
        deadline = time.monotonic() + PATIENCE
        while time.monotonic() < deadline:
            message = await asyncio.wait_for(socket.receive(), PATIENCE)
            got.append(message)
            if message.type == aiohttp.WSMsgType.BINARY:
                screen += message.data
                if db.name.encode() in screen:
                    return got, 0
            elif message.type == aiohttp.WSMsgType.CLOSE:
                return got, int(message.data)
            elif message.type in (aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
                return got, -1
    raise AssertionError(f"no first screen and no close within {PATIENCE} s: {got}")


async def test_serve_from_a_folder_holding_a_broken_raglabel_still_starts_the_tabs(
    tmp_path: Path, project: Path, clean_env: dict[str, str]
) -> None:
    # The folder a checkout is cloned into: a raglabel/ source folder there (here a
    # broken one) must not stand in for the installed package in any tab's app.
    (tmp_path / "raglabel").mkdir()
    (tmp_path / "raglabel" / "__init__.py").write_text(
        'raise ImportError("this is not the installed raglabel")\n'
    )
    process, url = serve_from(tmp_path, project, clean_env)
    try:
        got, code = await first_words(project, url, "alice")
    finally:
        log = stop(process)
    said = [m.data for m in got if m.type == aiohttp.WSMsgType.TEXT]
    assert code == 0, f"the tab's app did not start: {said} {log}"
    assert got[-1].type == aiohttp.WSMsgType.BINARY
    assert "could not start" not in log and "not the installed raglabel" not in log


async def test_a_tab_whose_app_cannot_start_says_why_and_the_log_has_it(
    tmp_path: Path, project: Path, clean_env: dict[str, str]
) -> None:
    # The owner's key file (read by every tab's app, not by the server) has a mistake.
    keys = tmp_path / "keys.toml"
    keys.write_text("[keys]\nundo = 5\n")
    process, url = serve_from(tmp_path, project, clean_env | {"RAGLABEL_KEYS": str(keys)})
    try:
        got, code = await first_words(project, url, "alice")
    finally:
        log = stop(process)
    assert code == 4002, got
    texts = [m.json() for m in got if m.type == aiohttp.WSMsgType.TEXT]
    notices = [said for kind, said in texts if kind == ENDED]
    assert len(notices) == 1, texts
    notice = notices[0]
    line = f"raglabel label: error: {keys}:2: keys.undo: expected a key string"
    assert notice["kind"] == "failed"
    assert notice["text"].startswith(f"The grading app could not start:\n{line}")
    assert "tell the project's owner" in notice["text"]
    assert (
        f"raglabel serve: alice's tab: the grading app could not start (exit status 2): {line}"
        in log
    )
