"""The stub chat-completions server behaves as its marker language promises, over real HTTP."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import httpx
import pytest

if TYPE_CHECKING:
    from chat_server import ChatServer


@pytest.fixture
def server(chat_server: type[ChatServer]) -> Iterator[ChatServer]:
    with chat_server(retry_after=0.2) as running:
        yield running


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=2.0) as http:
        yield http


def _post(http: httpx.Client, server: ChatServer, text: str, **kwargs: Any) -> httpx.Response:
    body = {
        "model": "judge-test",
        "messages": [
            {"role": "system", "content": "Grade the passage from 1 to 5."},
            {"role": "user", "content": text},
        ],
        "temperature": 0,
    }
    headers = {"Authorization": "Bearer sk-test"}
    return http.post(f"{server.base_url}/chat/completions", json=body, headers=headers, **kwargs)


def _content(response: httpx.Response) -> str:
    content = response.json()["choices"][0]["message"]["content"]
    assert isinstance(content, str)
    return content


def test_success_has_the_openai_shape(server: ChatServer, client: httpx.Client) -> None:
    response = _post(client, server, "query: q1 passage: [[grade=3]] some text")
    assert response.status_code == 200
    reply = response.json()
    assert reply["object"] == "chat.completion"
    assert reply["model"] == "judge-test"
    assert reply["id"].startswith("chatcmpl-")
    choice = reply["choices"][0]
    assert choice["index"] == 0
    assert choice["finish_reason"] == "stop"
    assert choice["message"]["role"] == "assistant"
    assert json.loads(choice["message"]["content"])["grade"] == 3
    usage = reply["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]

    (record,) = server.requests
    assert record.path == "/v1/chat/completions"
    assert record.fault == "ok"
    assert record.headers["authorization"] == "Bearer sk-test"
    assert record.body["temperature"] == 0


def test_model_name_overrides_and_grader_sees_only_user_text(
    client: httpx.Client, chat_server: type[ChatServer]
) -> None:
    seen: list[str] = []

    def grader(text: str) -> int:
        seen.append(text)
        return 2

    with chat_server(model_name="stub-model", grader=grader) as server:
        reply = _post(client, server, "the user text").json()
    assert reply["model"] == "stub-model"
    assert json.loads(reply["choices"][0]["message"]["content"])["grade"] == 2
    assert seen == ["the user text"]


def test_default_grade_ignores_random_delimiters(default_grader: Callable[[str], int]) -> None:
    # The judge fences the passage with a fresh random delimiter on every retry.
    first = "Query: q\n<<<a3f9c2e18b7d4f60aa>>>\npassage text\n<<<a3f9c2e18b7d4f60aa>>>"
    retry = "Query: q\n<<<0c1d2e3f4a5b6c7d8e9f>>>\npassage text\n<<<0c1d2e3f4a5b6c7d8e9f>>>"
    assert default_grader(first) == default_grader(retry)
    assert 1 <= default_grader(first) <= 5
    assert default_grader("[[grade=5]] anything") == 5
    grades = {default_grader(f"passage number {i}") for i in range(50)}
    assert grades == {1, 2, 3, 4, 5}


def test_unknown_paths_are_404(server: ChatServer, client: httpx.Client) -> None:
    assert client.get(f"{server.base_url}/models").status_code == 404
    assert client.post(f"{server.base_url}/completions", json={}).status_code == 404
    assert client.post(server.url, content=b"not json").status_code == 400
    assert [r.fault for r in server.requests] == ["404", "404", "400"]


def test_429_sends_retry_after(server: ChatServer, client: httpx.Client) -> None:
    response = _post(client, server, "[[fault:a:429@0.25,429]]")
    assert response.status_code == 429
    assert response.headers["retry-after"] == "0.25"
    assert response.headers["retry-after-ms"] == "250"
    assert response.json()["error"]["code"] == "rate_limit_exceeded"
    # A bare 429 takes the server's default, here 0.2 s.
    response = _post(client, server, "[[fault:a:429@0.25,429]]")
    assert response.status_code == 429
    assert response.headers["retry-after"] == "0.2"
    assert response.headers["retry-after-ms"] == "200"
    assert _post(client, server, "[[fault:a:429@0.25,429]]").status_code == 200
    assert [r.fault for r in server.requests] == ["429@0.25", "429", "ok"]


@pytest.mark.parametrize("status", [500, 502, 503])
def test_server_errors(server: ChatServer, client: httpx.Client, status: int) -> None:
    response = _post(client, server, f"[[fault:e:{status}]]")
    assert response.status_code == status
    assert "message" in response.json()["error"]


def test_drop_closes_without_a_response(server: ChatServer, client: httpx.Client) -> None:
    with pytest.raises(httpx.RemoteProtocolError):
        _post(client, server, "[[fault:d:drop]]")
    assert _post(client, server, "[[fault:d:drop]]").status_code == 200
    assert [r.fault for r in server.requests] == ["drop", "ok"]


def test_truncated_body(server: ChatServer, client: httpx.Client) -> None:
    with pytest.raises(httpx.RemoteProtocolError, match="complete message body"):
        _post(client, server, "[[fault:t:truncated]]")
    assert _post(client, server, "[[fault:t:truncated]]").status_code == 200


def test_content_faults(server: ChatServer, client: httpx.Client) -> None:
    text = "[[fault:c:nonjson,badjson,range]] [[grade=4]]"
    prose = _content(_post(client, server, text))
    assert "4" in prose
    with pytest.raises(json.JSONDecodeError):
        json.loads(prose)
    broken = _content(_post(client, server, text))
    assert broken.startswith('{"grade": 4')
    with pytest.raises(json.JSONDecodeError):
        json.loads(broken)
    assert json.loads(_content(_post(client, server, text)))["grade"] == 7
    assert json.loads(_content(_post(client, server, text)))["grade"] == 4


def test_httpjson_body_is_not_json(server: ChatServer, client: httpx.Client) -> None:
    response = _post(client, server, "[[fault:h:httpjson]]")
    assert response.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        response.json()


def test_slow_makes_the_client_time_out(server: ChatServer, client: httpx.Client) -> None:
    started = time.monotonic()
    with pytest.raises(httpx.ReadTimeout):
        _post(client, server, "[[fault:s:slow@1]]", timeout=0.1)
    assert time.monotonic() - started < 0.5
    assert _post(client, server, "[[fault:s:slow@1]]").status_code == 200


def test_counts_are_per_key(server: ChatServer, client: httpx.Client) -> None:
    assert _post(client, server, "[[fault:x:500]]").status_code == 500
    # A second key in the same request advances both counts; x's list is exhausted.
    assert _post(client, server, "[[fault:x:500]] [[fault:y:502]]").status_code == 502
    assert _post(client, server, "[[fault:y:502,ok,503]]").status_code == 200
    assert _post(client, server, "[[fault:y:502,ok,503]]").status_code == 503
    assert _post(client, server, "no markers").status_code == 200
    assert server.count() == 5
    assert server.count("x") == 2
    assert server.count("y") == 3
    assert server.count("z") == 0
    server.reset()
    assert server.count() == 0
    assert _post(client, server, "[[fault:x:500]]").status_code == 500


def test_malformed_markers_fail_loudly(
    server: ChatServer, client: httpx.Client, chat_server: type[ChatServer]
) -> None:
    assert _post(client, server, "[[fault:k:teapot]]").status_code == 400
    assert _post(client, server, "[[fault:k:slow]]").status_code == 400
    assert _post(client, server, "[[fault:k@1:500]]").status_code == 400
    with pytest.raises(ValueError, match="unknown fault kind"):
        chat_server(fault_kinds=["418"])


def test_random_faults_follow_the_seed(client: httpx.Client, chat_server: type[ChatServer]) -> None:
    def run() -> list[str]:
        kinds = ["500", "503", "nonjson"]
        with chat_server(fault_rate=0.5, fault_kinds=kinds, seed=7) as server:
            for i in range(40):
                _post(client, server, f"passage {i}")
            return [r.fault for r in server.requests]

    first = run()
    assert first == run()
    assert set(first) == {"ok", "500", "503", "nonjson"}


def test_keep_alive_reuses_one_connection(server: ChatServer, client: httpx.Client) -> None:
    for text in ["one", "[[fault:k:500]]", "[[fault:k:429@0]]", "two"]:
        _post(client, server, text)
    assert len({r.client_port for r in server.requests}) == 1


def test_sixteen_concurrent_requests_overlap(
    client: httpx.Client, chat_server: type[ChatServer]
) -> None:
    statuses: list[int] = []
    lock = threading.Lock()
    barrier = threading.Barrier(16)

    def one(server: ChatServer, i: int) -> None:
        barrier.wait()
        response = _post(client, server, f"passage {i}")
        with lock:
            statuses.append(response.status_code)

    with chat_server(latency=0.2) as server:
        threads = [threading.Thread(target=one, args=(server, i)) for i in range(16)]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - started
        assert server.max_in_flight == 16
    assert statuses == [200] * 16
    assert elapsed < 1.0  # 3.2 s if served one at a time


def test_shutdown_is_prompt_with_open_connections(
    client: httpx.Client, chat_server: type[ChatServer]
) -> None:
    server = chat_server().start()
    url = server.url
    # An idle keep-alive connection, and one request stuck in a 5 s slow reply.
    assert _post(client, server, "warm").status_code == 200
    errors: list[BaseException] = []

    def stuck() -> None:
        try:
            with httpx.Client(timeout=10) as other:
                _post(other, server, "[[fault:s:slow@5]]")
        except httpx.TransportError as error:
            errors.append(error)

    thread = threading.Thread(target=stuck)
    thread.start()
    while server.count("s") == 0:
        time.sleep(0.01)
    started = time.monotonic()
    server.close()
    thread.join(timeout=2)
    assert time.monotonic() - started < 1.0
    assert not thread.is_alive()
    assert len(errors) == 1
    # The pooled connection was closed too, and nothing listens on the port any more.
    with pytest.raises(httpx.TransportError):
        client.post(url, json={"model": "m", "messages": []})


CHUNK_PROMPT = (
    "Grade each chunk.\nChunk 1 of 3:\nfirst\nChunk 2 of 3:\nsecond\nChunk 3 of 3:\nthird"
)


def _chunks(response: httpx.Response) -> list[dict[str, Any]]:
    entries = json.loads(_content(response))["chunks"]
    assert isinstance(entries, list)
    return entries


def test_a_chunk_request_gets_one_grade_per_chunk(server: ChatServer, client: httpx.Client) -> None:
    marked = _chunks(_post(client, server, CHUNK_PROMPT + " [[chunks=5,3,1]]"))
    assert marked == [
        {"position": 1, "grade": 5, "reason": "Stub grade 5."},
        {"position": 2, "grade": 3, "reason": "Stub grade 3."},
        {"position": 3, "grade": 1, "reason": "Stub grade 1."},
    ]
    hashed = [e["grade"] for e in _chunks(_post(client, server, CHUNK_PROMPT))]
    again = [e["grade"] for e in _chunks(_post(client, server, CHUNK_PROMPT))]
    assert hashed == again and len(hashed) == 3 and all(1 <= g <= 5 for g in hashed)


@pytest.mark.parametrize(
    ("kind", "positions", "grades"),
    [
        ("fewer", [1, 2], [5, 3]),
        ("more", [1, 2, 3, 4], [5, 3, 1, 3]),
        ("repeat", [1, 2, 1], [5, 3, 1]),
        ("range", [1, 2, 3], [7, 3, 1]),
        ("noreason", [1, 2, 3], [4, 4, 4]),
    ],
)
def test_chunk_faults_shape_the_chunk_reply(
    server: ChatServer, client: httpx.Client, kind: str, positions: list[int], grades: list[int]
) -> None:
    text = CHUNK_PROMPT + f" [[chunks=5,3,1]] [[fault:c:{kind}]]"
    entries = _chunks(_post(client, server, text))
    assert [e["position"] for e in entries] == positions
    assert [e["grade"] for e in entries] == grades
    if kind == "noreason":
        assert {e["reason"] for e in entries} == {""}
    # Played once: the next request for the key succeeds in full.
    assert len(_chunks(_post(client, server, text))) == 3


def test_chunk_faults_leave_a_plain_grade_request_alone(
    server: ChatServer, client: httpx.Client
) -> None:
    reply = _post(client, server, "[[grade=2]] [[fault:g:fewer]]")
    assert json.loads(_content(reply)) == {"grade": 2, "reason": "Stub grade 2."}


def test_fenced_wraps_the_reply_in_a_code_fence(server: ChatServer, client: httpx.Client) -> None:
    content = _content(_post(client, server, "[[grade=4]] [[fault:f:fenced]]"))
    assert content.startswith("```json\n") and content.endswith("\n```")
    assert json.loads(content[len("```json\n") : -len("\n```")])["grade"] == 4
    chunks = _content(_post(client, server, CHUNK_PROMPT + " [[fault:h:fenced]]"))
    assert chunks.startswith("```json\n") and '"chunks"' in chunks
    prose = _content(_post(client, server, CHUNK_PROMPT + " [[fault:k:nonjson]]"))
    assert prose.startswith("I would rate this")
