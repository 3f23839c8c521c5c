"""Who may grade through ``raglabel serve``: invite tokens, the cookie, the Origin check.

The invite URL carries the token once; the server answers it with an HttpOnly,
SameSite=Strict cookie holding the same token, so scripts cannot read it and other
sites cannot make the browser send it. Every page load and websocket then proves the
cookie again against the project's stored hashes, so a revoked invite stops working at
the next request without restarting the server. A second cookie remembers whose token
it is, so a page refused after a revoke can say that the invite was revoked.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

from raglabel.errors import UsageError

#: The query parameter of an invite URL.
INVITE_PARAMETER = "invite"
#: How long a browser keeps the cookie: a team's labeling campaign, not forever.
COOKIE_SECONDS = 30 * 24 * 3600


@dataclass(frozen=True)
class Site:
    """Where the server is reached from a browser: its public URL, and what follows."""

    public_url: str
    cookie_name: str

    @classmethod
    def make(cls, project: Path, public_url: str) -> Site:
        parts = urlsplit(public_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(
                f"--public-url must be an http:// or https:// URL with a host, not {public_url!r}"
            )
        if parts.query or parts.fragment:
            raise UsageError(f"--public-url must not hold a query or fragment: {public_url!r}")
        # Browsers share cookies across ports of one host; naming the cookie after the
        # project keeps two projects served from one machine from overwriting each
        # other's sign-in.
        digest = hashlib.sha256(str(project.resolve()).encode("utf-8")).hexdigest()[:12]
        return cls(public_url.rstrip("/"), f"raglabel_{digest}")

    @property
    def origin(self) -> str:
        """``scheme://host[:port]`` as a browser sends it in the Origin header."""
        parts = urlsplit(self.public_url)
        host = parts.hostname or ""
        if ":" in host:  # an IPv6 literal keeps its brackets in an origin
            host = f"[{host}]"
        default = {"http": 80, "https": 443}[parts.scheme]
        port = "" if parts.port in (None, default) else f":{parts.port}"
        return f"{parts.scheme}://{host}{port}"

    @property
    def secure(self) -> bool:
        return self.public_url.startswith("https://")

    @property
    def base_path(self) -> str:
        """The path the server lives under behind a proxy ("" at the root)."""
        return urlsplit(self.public_url).path.rstrip("/")

    def invite_url(self, token: str) -> str:
        return f"{self.public_url}/?{INVITE_PARAMETER}={token}"

    def websocket_url(self) -> str:
        scheme = "wss" if self.secure else "ws"
        return f"{scheme}:{self.public_url.split(':', 1)[1]}/ws"

    @property
    def name_cookie(self) -> str:
        """The cookie that remembers whose token the browser holds: once the token stops
        working, the page can say that this annotator's invite was revoked or replaced
        rather than only that it is not valid. The name is no secret (pages show it)."""
        return f"{self.cookie_name}_name"

    def set_cookie_header(self, token: str) -> str:
        return self._set_cookie(self.cookie_name, token)

    def set_name_cookie_header(self, annotator: str) -> str:
        # Names may hold spaces, quotes and semicolons: percent-encoded, the value is plain.
        return self._set_cookie(self.name_cookie, quote(annotator, safe=""))

    def _set_cookie(self, name: str, value: str) -> str:
        parts = [
            f"{name}={value}",
            f"Path={self.base_path or '/'}",
            f"Max-Age={COOKIE_SECONDS}",
            "HttpOnly",
            "SameSite=Strict",
        ]
        if self.secure:
            parts.append("Secure")
        return "; ".join(parts)

    def cookie_token(self, header: str | None) -> str | None:
        """The token in a Cookie header, or None; a malformed header is no token."""
        return _cookie(header, self.cookie_name)

    def cookie_annotator(self, header: str | None) -> str | None:
        """The annotator the name cookie remembers, or None."""
        value = _cookie(header, self.name_cookie)
        return None if value is None else unquote(value)

    def same_origin(self, origin: str | None) -> bool:
        """Whether a websocket's Origin header is this server's own. A browser always
        sends one; its absence means no browser, and no browser means no cookie theft
        to guard against, but there is no reason to allow it either."""
        return origin is not None and origin.rstrip("/").lower() == self.origin.lower()


def _cookie(header: str | None, name: str) -> str | None:
    """One cookie's value in a Cookie header, or None; a malformed header holds none."""
    if not header:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(header)
    except Exception:  # http.cookies raises CookieError and others on odd input
        return None
    morsel = jar.get(name)
    return None if morsel is None or not morsel.value else morsel.value


#: A token wherever a log line could quote one: the sign-in link's parameter, or a
#: cookie of ours in a header (aiohttp logs a whole header line it cannot parse).
#: Any case, ``=`` URL-encoded or not, a quoted cookie value, a dict's ``'invite': '…'``;
#: the token itself is URL-safe base64.
_SECRETS = re.compile(
    rf"((?:{INVITE_PARAMETER}|\braglabel_[0-9a-f]{{12}})(?:=|%3d|['\"]?\s*:\s*)['\"]?)"
    r"[A-Za-z0-9_-]+",
    re.IGNORECASE,
)


def redact(text: str) -> str:
    """``text`` with every invite token in it replaced by ``<token>``."""
    return _SECRETS.sub(r"\1<token>", text)


class RedactingFormatter(logging.Formatter):
    """The server's log lines, tracebacks included, with no token in them."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))
