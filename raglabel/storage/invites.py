"""Invites to grade in a browser: a random token per annotator, stored only as a salted hash.

The token is 32 random bytes, so a single salted SHA-256 is enough: a slow password
hash guards guessable secrets, and it would cost every page load and websocket of
``raglabel serve`` a noticeable delay for no gain. The salt keeps two files that hold
the same token (a copy, say) from showing it, and lookups compare every stored hash in
constant time, so neither the answer nor its timing tells which annotator came close.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from raglabel.storage.annotators import person_id
from raglabel.storage.clock import now
from raglabel.storage.project import Project

#: Random bytes behind a token; URL-safe base64 makes 43 characters of them.
TOKEN_BYTES = 32


@dataclass(frozen=True)
class Invite:
    annotator: str
    created_at: str


def _digest(salt: bytes, token: str) -> bytes:
    return hashlib.sha256(salt + token.encode("utf-8")).digest()


def add_invite(project: Project, annotator: str) -> tuple[str, bool]:
    """A new token for the annotator, and whether it replaced a live one (whose links
    stop working at once)."""
    token = secrets.token_urlsafe(TOKEN_BYTES)
    salt = secrets.token_bytes(16)
    with project.write():
        ident = person_id(project.conn, annotator)
        replaced = (
            project.conn.execute("SELECT 1 FROM invite WHERE annotator_id = ?", (ident,)).fetchone()
            is not None
        )
        project.conn.execute(
            "INSERT OR REPLACE INTO invite (annotator_id, salt, token_hash, created_at)"
            " VALUES (?, ?, ?, ?)",
            (ident, salt, _digest(salt, token), now()),
        )
    return token, replaced


def revoke_invite(project: Project, annotator: str) -> bool:
    """Whether the annotator had a live invite, now gone."""
    with project.write():
        cursor = project.conn.execute(
            "DELETE FROM invite WHERE annotator_id = (SELECT id FROM annotator WHERE name = ?)",
            (annotator,),
        )
    return cursor.rowcount > 0


def invites(project: Project) -> list[Invite]:
    rows = project.conn.execute(
        "SELECT a.name, i.created_at FROM invite i JOIN annotator a ON a.id = i.annotator_id"
        " ORDER BY a.name"
    ).fetchall()
    return [Invite(str(name), str(created)) for name, created in rows]


def invited_annotator(project: Project, token: str) -> str | None:
    """Whose token this is, or None. Every stored hash is compared, whatever matched."""
    found: str | None = None
    rows = project.conn.execute(
        "SELECT a.name, i.salt, i.token_hash FROM invite i"
        " JOIN annotator a ON a.id = i.annotator_id"
    ).fetchall()
    for name, salt, stored in rows:
        if hmac.compare_digest(_digest(bytes(salt), token), bytes(stored)):
            found = str(name)
    return found
