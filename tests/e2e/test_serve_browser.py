"""``raglabel serve`` in a real headless Chromium: invite links, one key, grades in the file.

These tests also guard the pairing with textual-serve (its AppService, script and
fonts, pinned in pyproject.toml): if a new version changed what raglabel relies on, the
tab would never draw or its keys would never land.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from browser import Tab, chromium, require_chromium
from cli_helpers import start_serving
from docs_pages import examples

from raglabel.storage.demo import build_demo

#: How long an app may take to start and a grade to land on a busy 2-core machine.
PATIENCE = 60.0


@dataclass
class Served:
    db: Path
    url: str
    process: subprocess.Popen[str]

    def invite(self, name: str) -> str:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "raglabel",
                "serve",
                str(self.db),
                "--add-annotator",
                name,
                "--public-url",
                self.url.rstrip("/"),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    db = tmp_path / "team.db"
    build_demo(db, "owner", answers=False)
    env = {k: v for k, v in os.environ.items() if k != "RAGLABEL_ANNOTATOR"}
    process, url = start_serving(db, env=env)
    try:
        yield Served(db, url, process)
    finally:
        process.terminate()
        try:
            _, log = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            _, log = process.communicate()
        # The server's log names people and tabs, never a token.
        assert "invite=" not in log and "raglabel_" not in log, log


def grades(db: Path) -> list[tuple[str, int]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT a.name, e.grade FROM event e JOIN annotator a ON a.id = e.annotator_id"
            " WHERE e.kind = 'grade' AND a.name != 'owner' ORDER BY e.id"
        ).fetchall()
    finally:
        conn.close()
    return [(str(name), int(grade)) for name, grade in rows]


async def until(check: object, what: str) -> None:
    deadline = time.monotonic() + PATIENCE
    while time.monotonic() < deadline:
        if callable(check) and await asyncio.to_thread(check):
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"{what} within {PATIENCE} s")


async def body_class(tab: Tab) -> str:
    """The page's body classes; "" while the signed-in page refreshes into the app's,
    when there is no document to ask for a moment."""
    try:
        return str(await tab.evaluate("document.body ? document.body.className : ''"))
    except RuntimeError as exc:
        if "navigated" in str(exc) or "context" in str(exc):
            return ""
        raise


async def open_app(tab: Tab, invite: str) -> None:
    """Follow the invite link, and wait until the tab's app has drawn its first screen."""
    assert await tab.goto(invite) == 200
    deadline = time.monotonic() + PATIENCE
    while "-first-byte" not in await body_class(tab):
        if time.monotonic() > deadline:
            raise AssertionError(f"the app never drew: {await tab.text()!r}")
        await asyncio.sleep(0.2)
    assert "raglabel" in str(await tab.evaluate("document.title"))
    # Keys reach the terminal once it has the focus, as after a person's first click
    # (on the header line, which does nothing in the app).
    await tab.click(300, 5)
    # The runs' scores arrive in the background and redraw the Queries screen; the
    # quiet second lets that happen before Enter, whose redraw is then the one awaited.
    await tab.settle(quiet=1.0)


async def open_first_query(tab: Tab) -> None:
    """Enter on the Queries screen, then wait for the Grade screen to be drawn: a
    grade key typed before that would reach the Queries screen, where it means nothing."""
    before = await tab.pixels()
    await tab.press("Enter")
    await tab.settle(since=before)


async def test_an_invited_tab_grades_with_one_key_and_a_tab_without_invite_is_refused(
    served: Served,
) -> None:
    invite = served.invite("alice")
    async with chromium() as browser:
        tab = await browser.tab()
        await open_app(tab, invite)
        # The cookie now stands for the token: the URL no longer holds it.
        assert "invite=" not in str(await tab.evaluate("location.href"))
        await tab.screenshot("serve-alice-queries")
        await open_first_query(tab)
        await tab.press("4")
        await until(lambda: ("alice", 4) in grades(served.db), "alice's grade landed")
        await tab.screenshot("serve-alice-graded")

        stranger = await browser.tab(own_cookies=True)
        assert await stranger.goto(served.url) == 401
        assert "invite link" in await stranger.text()
        forged = served.url + "?invite=" + "A" * 43
        assert await stranger.goto(forged) == 401
    assert grades(served.db) == [("alice", 4)]


async def test_two_annotators_grading_at_once_both_land_under_their_own_names(
    served: Served,
) -> None:
    invites = {"alice": served.invite("alice"), "bob": served.invite("bob")}
    async with chromium() as browser:
        tabs = {name: await browser.tab(own_cookies=True) for name in invites}
        await asyncio.gather(*(open_app(tabs[name], url) for name, url in invites.items()))
        await asyncio.gather(*(open_first_query(tab) for tab in tabs.values()))
        await asyncio.gather(tabs["alice"].press("5"), tabs["bob"].press("2"))
        await until(
            lambda: {("alice", 5), ("bob", 2)} <= set(grades(served.db)),
            "both grades landed",
        )
        await tabs["bob"].screenshot("serve-bob-graded")
    assert sorted(grades(served.db)) == [("alice", 5), ("bob", 2)]


def revoke(db: Path, name: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "raglabel", "serve", str(db), "--revoke", name],
        capture_output=True,
        text=True,
        check=True,
    )


async def page_says(tab: Tab, words: str, patience: float = PATIENCE) -> str:
    """The page's visible text once it holds ``words``."""
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline:
        text = await tab.text()
        if words in text:
            return text
        await asyncio.sleep(0.2)
    raise AssertionError(f"the page never said {words!r}: {await tab.text()!r}")


async def test_a_revoked_tab_says_it_was_revoked_and_so_does_its_reload(
    served: Served,
) -> None:
    invite = served.invite("alice")
    async with chromium() as browser:
        tab = await browser.tab()
        await open_app(tab, invite)
        assert "revoked" not in await tab.text()
        revoke(served.db, "alice")
        # The server checks open tabs' invites every 10 seconds.
        said = await page_says(tab, "alice's invite was revoked", PATIENCE + 10)
        assert "This tab has closed." in said
        assert "ask the project's owner for a new invite link" in said
        assert "Open it again" not in said  # it would open nothing
        await tab.screenshot("serve-alice-revoked")
        assert await tab.goto(served.url) == 401
        said = await tab.text()
        assert "Invite revoked" in said
        assert "alice's invite was revoked by the project's owner" in said
        assert "ask the project's owner for a new invite link" in said


async def test_a_tab_whose_app_cannot_start_shows_the_error_on_the_page(tmp_path: Path) -> None:
    db = tmp_path / "team.db"
    build_demo(db, "owner", answers=False)
    # The owner's key file has a mistake: every tab's app reads it, the server does not.
    keys = tmp_path / "keys.toml"
    keys.write_text("[keys]\nundo = 5\n")
    env = {k: v for k, v in os.environ.items() if k != "RAGLABEL_ANNOTATOR"}
    process, url = start_serving(db, env=env | {"RAGLABEL_KEYS": str(keys)})
    try:
        invite = Served(db, url, process).invite("alice")
        async with chromium() as browser:
            tab = await browser.tab()
            assert await tab.goto(invite) == 200
            said = await page_says(tab, "could not start")
            assert f"{keys}:2: keys.undo: expected a key string" in said
            assert "Starting the grading app" not in said
            assert "Open it again" in said
            await tab.screenshot("serve-app-failed")
    finally:
        process.terminate()
        _, log = process.communicate(timeout=30)
    assert "alice's tab: the grading app could not start (exit status 2)" in log


def docs_nginx_location() -> str:
    """The nginx example of docs/guide/serve.md, its ``location / { ... }`` block."""
    [block] = examples("guide/serve.md", f"tests/e2e/{Path(__file__).name}", "nginx")
    start = block.index("    location / {")
    return block[start : block.index("\n    }", start) + len("\n    }")]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def require_nginx() -> str:
    found = shutil.which("nginx") or (
        "/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None
    )
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but nginx is missing: .ci/run installs it with apt-get")
        pytest.skip("nginx is not installed (apt-get install nginx)")
    return found


async def test_the_docs_nginx_block_in_front_carries_a_tab(tmp_path: Path) -> None:
    nginx = require_nginx()
    require_chromium()
    db = tmp_path / "team.db"
    build_demo(db, "owner", answers=False)
    backend, front = free_port(), free_port()
    public = f"http://127.0.0.1:{front}"
    location = docs_nginx_location().replace("http://127.0.0.1:8000", f"http://127.0.0.1:{backend}")
    # The page's server block holds TLS settings this test has no certificate for;
    # its location block is what carries the websocket, so it runs here verbatim.
    (tmp_path / "nginx.conf").write_text(
        ("user root;\n" if os.geteuid() == 0 else "")
        + f"daemon off;\npid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\n"
        "events {}\nhttp {\n    access_log off;\n"
        + "".join(
            f"    {kind}_temp_path {tmp_path}/{kind};\n"
            for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        )
        + f"    server {{\n        listen 127.0.0.1:{front};\n{location}\n    }}\n}}\n"
    )
    proxy = subprocess.Popen(
        [nginx, "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "raglabel",
            "serve",
            str(db),
            "--port",
            str(backend),
            "--public-url",
            public,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        assert server.stdout.readline().startswith("serving ")
        invite = subprocess.run(
            [
                sys.executable,
                "-m",
                "raglabel",
                "serve",
                str(db),
                "--add-annotator",
                "carol",
                "--public-url",
                public,
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        assert invite.startswith(public)
        async with chromium() as browser:
            tab = await browser.tab()
            await open_app(tab, invite)
            await open_first_query(tab)
            await tab.press("3")
            await until(lambda: ("carol", 3) in grades(db), "carol's grade landed through nginx")
            await tab.screenshot("serve-through-nginx")
    finally:
        for process in (server, proxy):
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
