"""One chat-completions request, and what its failure means for the run.

Any OpenAI-compatible server will do (OpenAI, vLLM, Ollama, llama.cpp's server). Errors
are sorted three ways: worth retrying (rate limits, server errors, timeouts, dropped
connections), final for this pair only (a 400 for an overlong passage), or fatal for
the whole run (a refused key, a wrong URL). No message carries the API key.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from raglabel.errors import UsageError
from raglabel.judge.backoff import retry_after

#: No chat completion holding one grade and a sentence is longer than this.
MAX_BODY_BYTES = 1 << 20
_BEARER = re.compile(r"Bearer\s+[^\s'\"]+")
RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})
FATAL_STATUS = frozenset({401, 403, 404, 405})


class ChatError(Exception):
    """A request that gave no usable completion."""

    def __init__(
        self,
        reason: str,
        *,
        retry: bool,
        fatal: bool = False,
        wait: float | None = None,
        connect: bool = False,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry = retry
        self.fatal = fatal
        self.connect = connect  # the server was never reached
        self.wait = wait  # the server's Retry-After, in seconds


@dataclass(frozen=True)
class Completion:
    content: str
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_ms: int


def endpoint_url(base_url: str) -> str:
    """The chat-completions URL for a base URL such as ``http://localhost:8000/v1``."""
    parts = urlsplit(base_url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"--base-url {base_url!r}: expected an http:// or https:// URL")
    try:
        parts.port  # noqa: B018 -- urlsplit checks the port only when asked for it
    except ValueError as exc:
        raise UsageError(f"--base-url {base_url!r}: {exc}") from None
    path = parts.path.rstrip("/")
    if not path.endswith("/chat/completions"):
        path += "/chat/completions"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def public_endpoint(url: str) -> str:
    """The URL as stored and shown: no user info and no query string, where keys hide."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]  # keeps IPv6 brackets and the port as written
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


class ChatClient:
    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        *,
        timeout_s: float = 60.0,
        connections: int = 16,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.url = endpoint_url(base_url)
        self.endpoint = public_endpoint(self.url)
        self._secret = api_key or ""
        headers = {"Content-Type": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._http = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0)),
            limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
            transport=transport,
            follow_redirects=False,
        )
        self.timeout_s = timeout_s

    async def aclose(self) -> None:
        await self._http.aclose()

    async def complete(
        self, model: str, messages: list[dict[str, str]], params: dict[str, Any]
    ) -> Completion:
        # Parameters first, so no setting can replace the model or the conversation.
        body = {**params, "model": model, "messages": messages}
        started = time.perf_counter()
        try:
            # The whole exchange within the timeout: httpx's own timeout is per read, so
            # a server trickling a byte at a time would otherwise hold a worker forever.
            async with asyncio.timeout(self.timeout_s):
                response = await self._exchange(body)
        except TimeoutError:
            raise ChatError(f"timed out after {self.timeout_s:g} s", retry=True) from None
        except httpx.ConnectTimeout:
            reason = f"cannot connect to {self.endpoint}: no answer to the connection attempt"
            raise ChatError(reason, retry=True, connect=True) from None
        except httpx.TimeoutException:
            raise ChatError(f"timed out after {self.timeout_s:g} s", retry=True) from None
        except httpx.ConnectError as exc:
            reason = self._clean(f"cannot connect to {self.endpoint}: {exc}")
            raise ChatError(reason, retry=True, connect=True) from None
        except httpx.LocalProtocolError as exc:
            # Nothing left this machine: retrying the same request cannot help.
            reason = self._clean(f"the request could not be sent ({exc})")
            raise ChatError(reason, retry=False, fatal=True) from None
        except httpx.TransportError as exc:
            kind = type(exc).__name__
            reason = self._clean(f"connection dropped ({kind}: {exc})")
            raise ChatError(reason, retry=True) from None
        latency = int((time.perf_counter() - started) * 1000)
        if response.status_code != 200:
            raise self._status_error(response)
        return self._completion(response, latency)

    async def _exchange(self, body: dict[str, Any]) -> httpx.Response:
        """The response, its body read whole but never past ``MAX_BODY_BYTES``."""
        async with self._http.stream("POST", self.url, json=body) as streamed:
            chunks: list[bytes] = []
            size = 0
            async for chunk in streamed.aiter_bytes():
                size += len(chunk)
                if size > MAX_BODY_BYTES:
                    raise ChatError(
                        f"the reply is over {MAX_BODY_BYTES >> 20} MiB; no judge answer is"
                        " that long",
                        retry=False,
                    )
                chunks.append(chunk)
            return httpx.Response(
                streamed.status_code, headers=streamed.headers, content=b"".join(chunks)
            )

    def _status_error(self, response: httpx.Response) -> ChatError:
        status = response.status_code
        detail = _error_detail(response, self._clean)
        reason = f"HTTP {status}" + (f": {detail}" if detail else "")
        if 300 <= status < 400:
            target = response.headers.get("location", "elsewhere")
            return ChatError(
                f"{reason} (the server redirects to {target}; give that as --base-url)",
                retry=False,
                fatal=True,
            )
        if status in RETRY_STATUS:
            return ChatError(reason, retry=True, wait=retry_after(response.headers))
        if status in FATAL_STATUS:
            hint = {
                401: "the server refused the API key",
                403: "the server refused the API key",
                404: f"no such model or no chat-completions endpoint at {self.endpoint}",
                405: f"{self.endpoint} does not take chat-completions requests",
            }[status]
            return ChatError(f"{reason} ({hint})", retry=False, fatal=True)
        return ChatError(reason, retry=False)

    def _completion(self, response: httpx.Response, latency: int) -> Completion:
        try:
            data = response.json()
            content = data["choices"][0]["message"]["content"]
        except (json.JSONDecodeError, UnicodeDecodeError):
            # Its first words say what answered instead (a proxy's HTML page, say).
            start = " ".join(self._clean(response.text).split())[:100]
            reason = "the server sent a body that is not JSON" + (f": {start}" if start else "")
            raise ChatError(reason, retry=True) from None
        except (KeyError, IndexError, TypeError):
            missing = "the server's JSON has no choices[0].message.content"
            raise ChatError(missing, retry=True) from None
        if not isinstance(content, str):
            content = "" if content is None else json.dumps(content)
        usage = data.get("usage") if isinstance(data, dict) else None
        usage = usage if isinstance(usage, dict) else {}
        return Completion(
            content,
            _count(usage.get("prompt_tokens")),
            _count(usage.get("completion_tokens")),
            latency,
        )

    def _clean(self, text: str) -> str:
        """Belt and braces: should a server or library echo the key back, in any form,
        it goes no further."""
        if self._secret:
            text = text.replace(self._secret, "***")
        return _BEARER.sub("Bearer ***", text)

    redact = _clean


def _error_detail(response: httpx.Response, clean: Callable[[str], str]) -> str:
    """The server's own words on what went wrong, the key masked before any cut, so
    that no part of it survives."""
    try:
        data = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        return clean(response.text).strip()[:200]
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        return clean(str(error.get("message") or ""))[:200]
    if isinstance(error, str):
        return clean(error)[:200]
    return ""


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
