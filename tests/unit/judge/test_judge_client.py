"""The chat-completions client: replies, errors and whether they are retried, the
endpoint URL, hidden credentials, time and size limits.

Everything runs against ``httpx.MockTransport``; no socket is opened.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from raglabel.errors import UsageError
from raglabel.judge.client import (
    MAX_BODY_BYTES,
    ChatClient,
    ChatError,
    endpoint_url,
    public_endpoint,
)

from .conftest import BASE_URL, Handler, body_of, chat_response, grade_json


async def complete_with(
    handler: Handler, api_key: str | None = "sk-test"
) -> tuple[Any, list[httpx.Request]]:
    """One ``ChatClient.complete`` call; its Completion or the ChatError it raised."""
    seen: list[httpx.Request] = []

    async def recording(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return await handler(request)

    client = ChatClient(BASE_URL, api_key, transport=httpx.MockTransport(recording))
    try:
        result: Any = await client.complete(
            "judge-model", [{"role": "user", "content": "hi"}], {"temperature": 0}
        )
    except ChatError as exc:
        result = exc
    finally:
        await client.aclose()
    return result, seen


async def chat_error(handler: Handler, api_key: str | None = "sk-test") -> ChatError:
    result, _ = await complete_with(handler, api_key)
    assert isinstance(result, ChatError), f"expected a ChatError, got {result!r}"
    return result


def status_handler(status: int, body: Any = None, headers: dict[str, str] | None = None) -> Handler:
    async def handler(request: httpx.Request) -> httpx.Response:
        if isinstance(body, str):
            return httpx.Response(status, text=body, headers=headers)
        return httpx.Response(status, json=body, headers=headers)

    return handler


async def test_ok_reply_returns_content_and_token_counts() -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        return chat_response(grade_json(4), prompt_tokens=123, completion_tokens=17)

    result, seen = await complete_with(handler)
    assert result.content == grade_json(4)
    assert (result.prompt_tokens, result.completion_tokens) == (123, 17)
    assert result.latency_ms >= 0
    (request,) = seen
    assert request.method == "POST"
    assert str(request.url) == "http://judge.test/v1/chat/completions"
    assert body_of(request) == {
        "model": "judge-model",
        "messages": [{"role": "user", "content": "hi"}],
        "temperature": 0,
    }
    assert request.headers["content-type"] == "application/json"


async def test_missing_or_odd_usage_gives_no_token_counts() -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200,
            json={
                "choices": [{"message": {"content": "hello"}}],
                "usage": {"prompt_tokens": "12", "completion_tokens": True},
            },
        )

    result, _ = await complete_with(handler)
    assert result.content == "hello"
    assert result.prompt_tokens is None
    assert result.completion_tokens is None


async def test_null_content_is_an_empty_answer() -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        return chat_response(None)

    result, _ = await complete_with(handler)
    assert result.content == ""


async def test_authorization_header_carries_the_key() -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        return chat_response("x")

    _, seen = await complete_with(handler, api_key="sk-live-123")
    assert seen[0].headers["authorization"] == "Bearer sk-live-123"


@pytest.mark.parametrize("api_key", [None, ""])
async def test_no_authorization_header_without_a_key(api_key: str | None) -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        return chat_response("x")

    _, seen = await complete_with(handler, api_key=api_key)
    assert "authorization" not in seen[0].headers


async def test_429_with_retry_after_is_retryable_with_the_wait() -> None:
    error = await chat_error(
        status_handler(429, {"error": {"message": "Rate limit reached"}}, {"Retry-After": "2"})
    )
    assert error.retry is True
    assert error.fatal is False
    assert error.connect is False
    assert error.wait == 2.0
    assert error.reason == "HTTP 429: Rate limit reached"
    assert str(error) == error.reason


async def test_429_with_retry_after_ms() -> None:
    error = await chat_error(status_handler(429, {}, {"retry-after-ms": "350"}))
    assert error.retry is True
    assert error.wait == pytest.approx(0.35)


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504, 529])
async def test_server_errors_are_retryable(status: int) -> None:
    error = await chat_error(status_handler(status, {"error": "busy"}))
    assert error.retry is True
    assert error.fatal is False
    assert error.wait is None
    assert error.reason == f"HTTP {status}: busy"


async def test_400_fails_the_pair_only() -> None:
    body = {"error": {"message": "This model's maximum context length is 8192 tokens"}}
    error = await chat_error(status_handler(400, body))
    assert error.retry is False
    assert error.fatal is False
    assert error.reason == "HTTP 400: This model's maximum context length is 8192 tokens"


@pytest.mark.parametrize(
    ("status", "hint"),
    [
        (401, "refused the API key"),
        (403, "refused the API key"),
        (404, "no such model or no chat-completions endpoint at http://judge.test/v1"),
        (405, "does not take chat-completions requests"),
    ],
)
async def test_auth_and_routing_errors_are_fatal(status: int, hint: str) -> None:
    error = await chat_error(status_handler(status, {"error": {"message": "nope"}}))
    assert error.fatal is True
    assert error.retry is False
    assert error.reason.startswith(f"HTTP {status}: nope (")
    assert hint in error.reason


async def test_plain_text_error_body_is_shown_briefly() -> None:
    error = await chat_error(status_handler(502, "<html>Bad gateway</html>" + "x" * 500))
    assert error.reason.startswith("HTTP 502: <html>Bad gateway</html>")
    assert len(error.reason) <= len("HTTP 502: ") + 200


async def test_error_without_detail() -> None:
    error = await chat_error(status_handler(503, {"detail": "unknown shape"}))
    assert error.reason == "HTTP 503"


async def test_non_json_body_is_retryable() -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text="<html>maintenance</html>")

    error = await chat_error(handler)
    assert error.retry is True
    assert error.fatal is False
    assert "not JSON" in error.reason


@pytest.mark.parametrize(
    "body",
    [
        {"object": "chat.completion"},
        {"choices": []},
        {"choices": [{"text": "legacy completion"}]},
        {"choices": [{"message": {"role": "assistant"}}]},
        ["not", "an", "object"],
    ],
)
async def test_json_without_choices_is_retryable(body: Any) -> None:
    error = await chat_error(status_handler(200, body))
    assert error.retry is True
    assert error.fatal is False
    assert "choices[0].message.content" in error.reason


@pytest.mark.parametrize(
    ("exc", "connect", "words"),
    [
        (httpx.ConnectError("[Errno 111] Connection refused"), True, "cannot connect to"),
        (httpx.ReadTimeout("read timed out"), False, "timed out after 60 s"),
        (httpx.RemoteProtocolError("peer closed connection"), False, "connection dropped"),
        (httpx.ReadError("connection reset"), False, "connection dropped (ReadError"),
    ],
)
async def test_transport_errors_are_retryable(
    exc: httpx.TransportError, connect: bool, words: str
) -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        raise exc

    error = await chat_error(handler)
    assert error.retry is True
    assert error.fatal is False
    assert error.connect is connect
    assert words in error.reason


async def test_connect_timeout_counts_as_never_reaching_the_server() -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectTimeout("connect timed out")

    error = await chat_error(handler)
    assert error.retry is True
    assert error.connect is True


KEY = "sk-proj-Zq8Vt3LmN4pR7sW2xY5bC1dF6gH9jK0"


@pytest.mark.parametrize(
    "body",
    [
        {"error": {"message": f"Incorrect API key provided: {KEY}."}},
        {"error": f"bad key {KEY}"},
        f"Unauthorized: Bearer {KEY}",
    ],
)
@pytest.mark.parametrize("status", [400, 401, 500])
async def test_an_echoed_key_never_reaches_the_reason(body: Any, status: int) -> None:
    error = await chat_error(status_handler(status, body), api_key=KEY)
    assert KEY not in error.reason
    assert KEY not in str(error)
    assert "***" in error.reason


async def test_an_echoed_key_in_a_transport_error_is_hidden() -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError(f"proxy refused request with key {KEY}")

    error = await chat_error(handler, api_key=KEY)
    assert KEY not in error.reason
    assert "***" in error.reason


async def test_an_echoed_key_cut_at_the_detail_limit_is_still_hidden() -> None:
    message = "x" * 180 + " " + KEY
    error = await chat_error(status_handler(401, {"error": {"message": message}}), api_key=KEY)
    assert KEY[:19] not in error.reason


@pytest.mark.parametrize(
    ("base", "url"),
    [
        ("http://localhost:8000/v1", "http://localhost:8000/v1/chat/completions"),
        ("http://localhost:8000/v1/", "http://localhost:8000/v1/chat/completions"),
        ("  https://api.openai.com/v1  ", "https://api.openai.com/v1/chat/completions"),
        ("http://host/v1/chat/completions", "http://host/v1/chat/completions"),
        ("http://host/v1/chat/completions/", "http://host/v1/chat/completions"),
        ("http://host", "http://host/chat/completions"),
        (
            "https://x.azure.com/openai/deployments/d?api-version=2024-06-01",
            "https://x.azure.com/openai/deployments/d/chat/completions?api-version=2024-06-01",
        ),
    ],
)
def test_endpoint_url(base: str, url: str) -> None:
    assert endpoint_url(base) == url


@pytest.mark.parametrize(
    "base", ["ftp://host/v1", "localhost:8000/v1", "host/v1", "http://", "", "file:///tmp/x"]
)
def test_endpoint_url_rejects_non_http_urls(base: str) -> None:
    with pytest.raises(UsageError, match="expected an http:// or https:// URL"):
        endpoint_url(base)


@pytest.mark.parametrize(
    ("url", "public"),
    [
        (
            "https://user:secret@api.example.com/v1/chat/completions",
            "https://api.example.com/v1/chat/completions",
        ),
        (
            "https://x.azure.com/v1/chat/completions?api-key=abc123&v=1",
            "https://x.azure.com/v1/chat/completions",
        ),
        (
            "http://me:pw@localhost:8080/v1/chat/completions?api-key=k",
            "http://localhost:8080/v1/chat/completions",
        ),
        (
            "http://localhost:11434/v1/chat/completions",
            "http://localhost:11434/v1/chat/completions",
        ),
    ],
)
def test_public_endpoint_strips_credentials(url: str, public: str) -> None:
    assert public_endpoint(url) == public


async def test_client_endpoint_hides_credentials() -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        return chat_response("x")

    client = ChatClient(
        "https://u:pw@api.example.com/v1?api-key=zzz", None, transport=httpx.MockTransport(handler)
    )
    await client.aclose()
    assert client.url == "https://u:pw@api.example.com/v1/chat/completions?api-key=zzz"
    assert client.endpoint == "https://api.example.com/v1/chat/completions"


def test_public_endpoint_keeps_ipv6_brackets() -> None:
    url = "http://[::1]:8000/v1/chat/completions"
    assert public_endpoint(url) == url


@pytest.mark.parametrize("base", ["http://localhost:80a/v1", "http://localhost:99999/v1"])
def test_malformed_port_is_a_usage_error(base: str) -> None:
    with pytest.raises(UsageError):
        public_endpoint(endpoint_url(base))


async def test_a_server_that_trickles_bytes_times_out_as_a_whole() -> None:
    class Trickle(httpx.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            for _ in range(200):
                await asyncio.sleep(0.02)
                yield b" "

    async def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, stream=Trickle())

    client = ChatClient(BASE_URL, None, timeout_s=0.3, transport=httpx.MockTransport(handler))
    started = time.monotonic()
    try:
        with pytest.raises(ChatError) as raised:
            await client.complete("m", [{"role": "user", "content": "x"}], {})
    finally:
        await client.aclose()
    assert raised.value.retry and "timed out after 0.3 s" in raised.value.reason
    assert time.monotonic() - started < 1.5


async def test_a_reply_body_over_the_limit_is_refused() -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=b" " * (MAX_BODY_BYTES + 10))

    client = ChatClient(BASE_URL, None, transport=httpx.MockTransport(handler))
    try:
        with pytest.raises(ChatError) as raised:
            await client.complete("m", [{"role": "user", "content": "x"}], {})
    finally:
        await client.aclose()
    assert not raised.value.retry and "over 1 MiB" in raised.value.reason


def test_bearer_tokens_are_masked_in_any_form() -> None:
    client = ChatClient(BASE_URL, "sk-abc")
    text = client.redact("Illegal header value b'Bearer sk-abc\\r' and Bearer other-token")
    assert "sk-abc" not in text and "other-token" not in text
