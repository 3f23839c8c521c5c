"""``raglabel serve`` without a browser: invites in the file, the CLI, every refusal of
the HTTP server, and one app process per websocket, named for that connection alone.

The browser itself is tests/e2e/test_serve_browser.py; here the app process is replaced by
a recorder, so each check runs in milliseconds.
"""

from __future__ import annotations

import asyncio
import html
import logging
import os
import shlex
import socket
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import quote

import pytest
from aiohttp import WSMsgType
from aiohttp.test_utils import TestClient, TestServer
from cli_helpers import start_serving

from raglabel.storage.invites import add_invite, invited_annotator, invites, revoke_invite
from raglabel.storage.project import Project
from raglabel.web import server as server_module
from raglabel.web.access import Site, redact
from raglabel.web.pages import ENDED
from raglabel.web.server import GradingServer
from raglabel.web.tab import tab_command

if TYPE_CHECKING:
    from cli_helpers import Cli

PUBLIC = "http://127.0.0.1:8000"


def all_cells(db: Path) -> list[Any]:
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT * FROM invite").fetchall()
    finally:
        conn.close()
    return [cell for row in rows for cell in row]


# -- invites in the project file -------------------------------------------------------


def test_only_a_salted_hash_of_each_token_is_stored(demo_db: Path) -> None:
    with Project.open(demo_db) as project:
        first, replaced = add_invite(project, "alice")
        assert not replaced
        second, _ = add_invite(project, "bob")
    cells = all_cells(demo_db)
    for token in (first, second):
        assert len(token) >= 43
        assert not any(
            token in str(cell) or token.encode() in bytes(str(cell), "utf-8") for cell in cells
        )
    hashes = [cell for cell in cells if isinstance(cell, bytes) and len(cell) == 32]
    assert len(set(hashes)) == 2
    with Project.open(demo_db) as project:
        assert invited_annotator(project, first) == "alice"
        assert invited_annotator(project, second) == "bob"
        assert invited_annotator(project, first[:-1] + ("A" if first[-1] != "A" else "B")) is None
        assert invited_annotator(project, "") is None


def test_a_new_invite_replaces_the_old_one_and_revoking_ends_it(demo_db: Path) -> None:
    with Project.open(demo_db) as project:
        old, _ = add_invite(project, "alice")
        new, replaced = add_invite(project, "alice")
        assert replaced
        assert invited_annotator(project, old) is None
        assert invited_annotator(project, new) == "alice"
        assert [i.annotator for i in invites(project)] == ["alice"]
        assert revoke_invite(project, "alice")
        assert not revoke_invite(project, "alice")
        assert invited_annotator(project, new) is None
        assert invites(project) == []


# -- the command line ------------------------------------------------------------------


def test_add_list_and_revoke_from_the_command_line(demo_db: Path, cli: Cli) -> None:
    code, out, err = cli("serve", demo_db, "--add-annotator", "alice", "--port", "9000")
    assert code == 0, err
    url = out.strip()
    assert url.startswith("http://127.0.0.1:9000/?invite=")
    token = url.split("invite=", 1)[1]
    with Project.open(demo_db) as project:
        assert invited_annotator(project, token) == "alice"
    code, out, _ = cli(
        "serve", demo_db, "--add-annotator", "bob", "--public-url", "https://label.example.org/"
    )
    assert out.startswith("https://label.example.org/?invite=")
    code, _, err = cli("serve", demo_db, "--add-annotator", "bob")
    assert code == 0 and "bob's earlier invite no longer works" in err
    code, out, _ = cli("serve", demo_db, "--list")
    assert [line.split("\t")[0] for line in out.splitlines()] == ["alice", "bob"]
    code, out, _ = cli("serve", demo_db, "--revoke", "alice")
    assert code == 0 and "revoked" in out
    code, _, err = cli("serve", demo_db, "--revoke", "alice")
    assert code == 2 and "'alice' has no invite (invited: bob)" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--add-annotator", "  "], "--add-annotator needs a name"),
        (["--add-annotator", "al\x1bice"], "control character"),
        (["--add-annotator", "x" * 101], "at most 100 characters"),
        (["--add-annotator", "alice", "--port", "0"], "needs the port"),
        (["--host", "0.0.0.0"], "give --public-url"),
        (["--public-url", "ftp://example.org"], "http:// or https://"),
        (["--public-url", "https://example.org/?a=1"], "query or fragment"),
        (["--port", "70000"], "within 0-65535"),
        (["-k", "0"], "-k"),
    ],
)
def test_bad_options_exit_2_and_write_nothing(
    demo_db: Path, cli: Cli, argv: list[str], message: str
) -> None:
    before = demo_db.read_bytes()
    code, _, err = cli("serve", demo_db, *argv)
    assert code == 2, err
    assert message in err
    assert demo_db.read_bytes() == before


def test_a_port_in_use_is_a_clear_error(demo_db: Path, cli: Cli) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, _, err = cli("serve", demo_db, "--port", str(port))
    assert code == 2
    assert f"cannot listen on 127.0.0.1:{port}" in err


def test_a_missing_project_is_refused_before_listening(tmp_path: Path, cli: Cli) -> None:
    code, _, err = cli("serve", tmp_path / "nope.db", "--port", "0")
    assert code == 2 and "no such project file" in err


def test_serve_help_shows_the_invite_workflow(cli: Cli) -> None:
    code, out, _ = cli("serve", "--help")
    assert code == 0
    for option in ("--add-annotator", "--revoke", "--list", "--public-url", "--host", "--port"):
        assert option in out


# -- the HTTP server ---------------------------------------------------------------------


class Recorder:
    """Stands in for the tab's app service (raglabel/web/tab.py): records what each tab
    would run."""

    started: ClassVar[list[tuple[str, int, int]]] = []
    received: ClassVar[list[bytes]] = []
    environments: ClassVar[list[dict[str, str]]] = []

    def __init__(self, command: str, **_: Any) -> None:
        self.command = command

    async def start(self, width: int, height: int) -> None:
        # Give a second connection the chance to interleave, as a slow process start would.
        await asyncio.sleep(0.05)
        Recorder.started.append((self.command, width, height))
        Recorder.environments.append(dict(os.environ))

    async def send_bytes(self, data: bytes) -> bool:
        Recorder.received.append(data)
        return True

    async def set_terminal_size(self, width: int, height: int) -> None:
        Recorder.started.append(("resize", width, height))

    async def blur(self) -> None: ...

    async def focus(self) -> None: ...

    async def stop(self) -> None: ...


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> type[Recorder]:
    Recorder.started, Recorder.received, Recorder.environments = [], [], []
    monkeypatch.setattr(server_module, "TabApp", Recorder)
    return Recorder


@pytest.fixture
async def client(demo_db: Path) -> AsyncIterator[tuple[TestClient[Any, Any], Path]]:
    grading = GradingServer(demo_db, Site.make(demo_db, PUBLIC), "5,10")
    async with TestClient(TestServer(grading.application())) as test_client:
        yield test_client, demo_db
    grading.close()


def invite(db: Path, name: str) -> str:
    with Project.open(db) as project:
        return add_invite(project, name)[0]


def cookie_of(db: Path, token: str, name: str | None = None) -> dict[str, str]:
    """The Cookie header of a signed-in browser: the token, and whose it is if given."""
    site = Site.make(db, PUBLIC)
    cookie = f"{site.cookie_name}={token}"
    if name is not None:
        cookie += f"; {site.name_cookie}={quote(name, safe='')}"
    return {"Cookie": cookie}


async def test_no_or_a_wrong_token_is_401(client: tuple[TestClient[Any, Any], Path]) -> None:
    http, db = client
    invite(db, "alice")
    for path, headers in (
        ("/", {}),
        ("/?invite=" + "A" * 43, {}),
        ("/", cookie_of(db, "B" * 43)),
        ("/", {"Cookie": '=;;;\\garbage"unclosed'}),
    ):
        response = await http.get(path, headers=headers)
        assert response.status == 401, (path, headers)
        assert "Set-Cookie" not in response.headers
        said = await response.text()
        assert "invite" in said and "the project&#x27;s owner for a new one" in said


async def test_the_invite_link_sets_a_strict_http_only_cookie_that_then_opens_the_app(
    client: tuple[TestClient[Any, Any], Path], caplog: pytest.LogCaptureFixture
) -> None:
    http, db = client
    token = invite(db, "ali<ce>")
    with caplog.at_level(logging.INFO, logger="raglabel.serve"):
        response = await http.get(f"/?invite={token}")
        assert response.status == 200
        cookie = response.headers["Set-Cookie"]
        name = Site.make(db, PUBLIC).cookie_name
        assert cookie.startswith(f"{name}={token};")
        for attribute in ("HttpOnly", "SameSite=Strict", "Path=/", "Max-Age="):
            assert attribute in cookie
        assert "Secure" not in cookie  # plain http: a Secure cookie would never come back
        # The second cookie remembers whose token it is, for a page refused after a revoke.
        remembered = response.headers.getall("Set-Cookie")[1]
        assert remembered.startswith(f"{name}_name=ali%3Cce%3E;")
        assert "HttpOnly" in remembered and "SameSite=Strict" in remembered
        assert response.headers["Referrer-Policy"] == "no-referrer"
        assert response.headers["Cache-Control"] == "no-store"
        body = await response.text()
        assert "ali&lt;ce&gt;" in body and "ali<ce>" not in body
        assert 'http-equiv="refresh"' in body

        page = await http.get("/", headers=cookie_of(db, token))
        assert page.status == 200
        html = await page.text()
        assert 'data-session-websocket-url="ws://127.0.0.1:8000/ws"' in html
        assert "ali&lt;ce&gt;" in html
        assert "fonts.googleapis" not in html and "https://" not in html
        assert page.headers["X-Frame-Options"] == "DENY"
        static = await http.get("/static/js/textual.js")
        assert static.status == 200
    assert caplog.records, "the server logs who signed in"
    assert not any(token in record.getMessage() for record in caplog.records)


async def test_an_https_public_url_makes_the_cookie_secure(demo_db: Path) -> None:
    site = Site.make(demo_db, "https://label.example.org/team")
    assert site.set_cookie_header("t").endswith("Secure")
    assert "Path=/team" in site.set_cookie_header("t")
    assert site.origin == "https://label.example.org"
    assert site.websocket_url() == "wss://label.example.org/team/ws"
    assert site.invite_url("t") == "https://label.example.org/team/?invite=t"
    assert Site.make(demo_db, "http://[::1]:8080").origin == "http://[::1]:8080"
    assert Site.make(demo_db, "http://h:80").origin == "http://h"


async def test_a_revoked_invite_is_refused_at_the_next_request(
    client: tuple[TestClient[Any, Any], Path],
) -> None:
    http, db = client
    token = invite(db, "alice")
    assert (await http.get("/", headers=cookie_of(db, token))).status == 200
    with Project.open(db) as project:
        revoke_invite(project, "alice")
    assert (await http.get("/", headers=cookie_of(db, token))).status == 401


async def test_a_reload_after_a_revoke_or_a_new_link_says_which_and_what_to_do(
    client: tuple[TestClient[Any, Any], Path],
) -> None:
    http, db = client
    token = invite(db, "bob o'brien")
    assert (await http.get("/", headers=cookie_of(db, token, "bob o'brien"))).status == 200
    with Project.open(db) as project:
        revoke_invite(project, "bob o'brien")
    refused = await http.get("/", headers=cookie_of(db, token, "bob o'brien"))
    assert refused.status == 401
    said = html.unescape(await refused.text())
    assert "<h1>Invite revoked</h1>" in said
    assert "bob o'brien's invite was revoked by the project's owner" in said
    assert "ask the project's owner for a new invite link" in said

    old = invite(db, "bob o'brien")
    invite(db, "bob o'brien")  # a newer link: the old one is replaced, not revoked
    refused = await http.get("/", headers=cookie_of(db, old, "bob o'brien"))
    assert refused.status == 401
    said = html.unescape(await refused.text())
    assert "<h1>Invite replaced</h1>" in said
    assert "replaced by a newer one" in said and "Open the newest link" in said

    # Without the name cookie (a browser signed in before it existed, or a forged
    # token), the page cannot know whose invite it was: it says what a link may be.
    refused = await http.get("/", headers=cookie_of(db, old))
    assert refused.status == 401
    assert "revoked or replaced" in await refused.text()


async def test_a_websocket_from_another_origin_is_403_and_without_invite_401(
    client: tuple[TestClient[Any, Any], Path], recorder: type[Recorder]
) -> None:
    http, db = client
    token = invite(db, "alice")
    for origin in ("http://evil.example", "http://127.0.0.1:8001", None):
        headers = cookie_of(db, token) | ({} if origin is None else {"Origin": origin})
        response = await http.get("/ws", headers=headers)
        assert response.status == 403, origin
    response = await http.get("/ws", headers={"Origin": PUBLIC})
    assert response.status == 401
    assert recorder.started == []


async def test_each_websocket_runs_its_own_locked_app_under_its_own_name(
    client: tuple[TestClient[Any, Any], Path], recorder: type[Recorder]
) -> None:
    http, db = client
    tokens = {name: invite(db, name) for name in ("alice", "bob o'brien")}
    environment = dict(os.environ)

    async def connect(name: str) -> None:
        headers = cookie_of(db, tokens[name]) | {"Origin": PUBLIC}
        socket = await http.ws_connect("/ws?width=120&height=40", headers=headers)
        await socket.send_json(["stdin", f"keys of {name}"])
        await socket.send_str("not json")
        await socket.send_json(["resize", {"width": 99999, "height": "x"}])
        await socket.send_json(["ping", "7"])
        reply = await socket.receive()
        assert reply.type == WSMsgType.TEXT and reply.json() == ["pong", "7"]
        await socket.close()

    await asyncio.gather(connect("alice"), connect("bob o'brien"))
    commands = [command for command, _, _ in recorder.started if command != "resize"]
    names = sorted(
        shlex.split(command)[shlex.split(command).index("--annotator") + 1] for command in commands
    )
    assert names == ["alice", "bob o'brien"]
    for command in commands:
        argv = shlex.split(command)
        start = argv.index("-m")
        assert argv[start : start + 3] == ["-m", "raglabel", "label"] and "--locked" in argv
        assert argv[argv.index("-k") + 1] == "5,10"
    assert ("resize", 1000, 24) in recorder.started  # clamped, and a bad height defaults
    assert sorted(recorder.received) == [b"keys of alice", b"keys of bob o'brien"]
    # No name went through the environment: the server's own stayed as it was.
    assert dict(os.environ) == environment
    assert all(env == environment for env in recorder.environments)


def test_the_tab_command_quotes_every_argument() -> None:
    command = tab_command(Path("/data/my project.db"), "o'neil; rm -rf /", "5")
    argv = shlex.split(command)
    assert argv[-5:] == ["--annotator", "o'neil; rm -rf /", "--locked", "-k", "5"]
    assert argv[argv.index("label") + 1] == "/data/my project.db"


async def test_an_open_tab_closes_once_its_invite_is_revoked(
    client: tuple[TestClient[Any, Any], Path],
    recorder: type[Recorder],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(server_module, "RECHECK_SECONDS", 0.05)
    http, db = client
    token = invite(db, "alice")
    socket = await http.ws_connect("/ws", headers=cookie_of(db, token) | {"Origin": PUBLIC})
    await socket.send_json(["ping", "1"])
    assert (await socket.receive()).json() == ["pong", "1"]
    with Project.open(db) as project:
        revoke_invite(project, "alice")
    notice = await asyncio.wait_for(socket.receive(), 10)
    assert notice.type == WSMsgType.TEXT
    kind, said = notice.json()
    assert kind == ENDED and said["kind"] == "revoked"
    assert said["text"].startswith("This tab has closed. alice's invite was revoked")
    assert "ask the project's owner for a new invite link" in said["text"]
    # The close frame's own code: the server may drop the connection before this
    # client's reply goes out, which leaves the client's close_code at 1006.
    closing = await asyncio.wait_for(socket.receive(), 10)
    assert closing.type == WSMsgType.CLOSE and closing.data == 4001


async def test_an_open_tab_whose_invite_was_replaced_says_to_open_the_newest_link(
    client: tuple[TestClient[Any, Any], Path],
    recorder: type[Recorder],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(server_module, "RECHECK_SECONDS", 0.05)
    http, db = client
    token = invite(db, "alice")
    socket = await http.ws_connect("/ws", headers=cookie_of(db, token) | {"Origin": PUBLIC})
    invite(db, "alice")
    notice = await asyncio.wait_for(socket.receive(), 10)
    kind, said = notice.json()
    assert kind == ENDED and said["kind"] == "revoked"
    assert said["text"].startswith(
        "This tab has closed. alice's invite link was replaced by a newer one"
    )
    assert "Open the newest link the project's owner sent you" in said["text"]
    closing = await asyncio.wait_for(socket.receive(), 10)
    assert closing.type == WSMsgType.CLOSE and closing.data == 4001


def test_a_header_too_long_to_parse_is_logged_without_the_token_in_it(demo_db: Path) -> None:
    # aiohttp logs a header line it cannot parse, whole: here, one that holds our cookie.
    process, url = start_serving(demo_db)
    try:
        port = int(url.rstrip("/").rsplit(":", 1)[1])
        token = invite(demo_db, "alice")
        cookie = f"{Site.make(demo_db, PUBLIC).cookie_name}={token}; pad={'x' * 9000}"
        for request in (
            f"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: {cookie}\r\n\r\n",
            f"GET /?invite={token}&pad={'y' * 9000} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        ):
            with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
                conn.sendall(request.encode())
                assert conn.recv(100).split(b" ")[1].startswith(b"4")
    finally:
        process.terminate()
        _, logged = process.communicate(timeout=30)
    assert "raglabel serve:" in logged and "<token>" in logged
    assert token not in logged


@pytest.mark.parametrize(
    "line",
    [
        "GET /?invite=TOKEN HTTP/1.1",
        "GET /?Invite=TOKEN&x=1",
        "Referer: http://h/?x=1%26invite%3DTOKEN",
        "b'Cookie: raglabel_0123456789ab=TOKEN; other=x\\r\\n'",
        'raglabel_0123456789ab="TOKEN"',
        "{'invite': 'TOKEN'}",
    ],
)
def test_every_form_of_a_token_is_redacted(line: str) -> None:
    real = "q-9_Zx" * 7
    said = redact(line.replace("TOKEN", real))
    assert real not in said and "<token>" in said
