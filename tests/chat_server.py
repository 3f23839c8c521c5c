"""A stand-in for an OpenAI-compatible chat-completions server, on loopback, for tests.

`ChatServer` is a real HTTP/1.1 server (keep-alive, threads) so that an LLM-judge client
can be tested end to end, and benchmarked, without a network or a model. It serves
``POST {base_url}/chat/completions`` and answers 404 to anything else, and 400 to a body
that is not JSON with a list of messages. A successful reply's message content is the
JSON text ``{"grade": <int>, "reason": "<str>"}``.

The grade
---------
The ``grader`` option maps the text of the request's user messages (joined by newlines)
to a grade. The default, `default_grader`, is deterministic and stable across retries:

* a marker ``[[grade=N]]`` (one digit) anywhere in that text gives grade N;
* otherwise the grade is ``1 + sha256(text) % 5``, hashed after removing fault markers
  and every run of 16 or more ASCII letters and digits. The judge fences each passage
  with a random per-request delimiter; removing such runs makes a retry of the same
  (query, passage) pair hash the same.

Scripted faults
---------------
A marker ``[[fault:KEY:KIND1,KIND2,...]]`` in any message (any role) scripts faults.
KEY is made of letters, digits, ``_``, ``.`` and ``-``. The n-th request (counting from 1
over the server's life, or since `ChatServer.reset`) whose text holds a marker with that
KEY gets KIND n; once the list is exhausted, such requests succeed. So
``[[fault:p7:429@0.2,drop]]`` makes the first request for p7 a 429, the second a dropped
connection, and every later one a success. If a request holds markers for several keys,
each key's count advances and the first marker (in text order) with a fault left wins.
Requests with markers never get random faults, so scripts stay deterministic. A marker
naming an unknown kind, or a malformed one, gets a 400: a typo in a test then fails
loudly instead of passing as a fault-free request.

Kinds:

``ok``
    Succeed (a placeholder in a list, e.g. ``ok,500``).
``429`` or ``429@S``
    Status 429, ``Retry-After: S`` (seconds, fractional allowed; default the server's
    ``retry_after``) and ``retry-after-ms``, with an OpenAI-style JSON error body.
``400``, ``500``, ``501``, ``502``, ``503``
    That status with a JSON error body (``fault_rate=1.0, fault_kinds=["501"]`` makes a
    server that answers 501 to every request).
``drop``
    Read the request, then close the connection without a byte of response.
``truncated``
    Status 200 and a Content-Length larger than what is sent: half the body, then close.
``nonjson``
    A well-formed completion whose content is prose, not JSON.
``badjson``
    A completion whose content is JSON cut off mid-string.
``range``
    A completion whose content is ``{"grade": 7, ...}``, out of the 1-5 scale.
``shape``
    A completion whose content is a JSON object of another shape (``{"score": N,
    "why": "..."}``, no ``grade``).
``empty``
    A completion whose content is the empty string.
``slow@S``
    Wait S more seconds, then succeed (to make a client time out).
``httpjson``
    Status 200, ``Content-Type: application/json``, but the body is an HTML page.

``fenced``
    A good reply wrapped in a Markdown code fence (```json ... ```), as many models send.
``fewer``, ``more``, ``repeat``, ``noreason``
    For a chunk request (below): one chunk entry left out, one extra entry for a chunk
    that does not exist, the last entry naming chunk 1 again, or a chunk graded below 5
    with an empty reason (every grade is then 4). Any other request succeeds.

Chunk requests
--------------
A request whose user text has lines ``Chunk I of N:`` (the judge's ctx_rank_prec prompt)
is a chunk request for N chunks (the ``chunk_count`` option decides; it may be replaced).
Its reply is ``{"chunks": [{"position": i, "grade": g, "reason": "..."}, ...]}``, one
entry per chunk. The grades, from ``chunk_grader`` (default `default_chunk_grader`): a
marker ``[[chunks=5,3,1]]`` gives them (as many as there are chunks), else chunk i gets a
stable hash of the text and i, 1-5. ``range`` makes the first chunk's grade 7.

Final-score requests
--------------------
A request whose user text holds ``##final score`` (any case: a prompt file with a
``reply = "final-score"`` header asks for that line, and so does its repair request) is a
final-score request (the ``final_score`` option decides; it may be replaced). Its reply is
a sentence, then the line ``##final score: N``. The label N, from ``labeler`` (default
`default_labeler`): a marker ``[[label=N]]`` gives it, else a stable hash of the text,
0-3. For such a request ``range`` gives the label 9, and ``nomarker`` a reply that names
its score in prose (``My final score is N.``) without the line; ``nomarker`` lets any
other request succeed.

An overrating judge
-------------------
``grader=overrating_grader(long_chars=N)`` makes the server a judge with the LLM
assessor's known biases, deterministically, for probes (``raglabel agree --probe``). It
reads the query (the ``Query:`` line) and the passage (between the two fence lines,
after any ``Title:`` line) of the built-in prompt's layout, then grades by the passage's
first paragraph (up to its first blank line): its ``[[grade=N]]`` marker, else a stable
hash of the query and that paragraph, 1-5; then adds 1 when the whole passage is at
least N characters long, and 1 when its last paragraph holds every word of the query,
up to 5 in all. Text appended after a blank line thus never changes the base grade. A
request in another layout gets `default_grader`'s grade; a final-score request is
labelled by ``labeler`` as ever, the grader unused.

Random faults: with ``fault_rate`` p, each request without a marker gets, with
probability p, a kind drawn uniformly from ``fault_kinds``, from a ``random.Random(seed)``.
Because requests race for the generator, the sequence is reproducible only for requests
sent one at a time.

Introspection: `ChatServer.requests` (one `RequestRecord` per request, in arrival
order), `ChatServer.max_in_flight`, `ChatServer.count` and `ChatServer.reset`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import re
import socket
import socketserver
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, cast

__all__ = [
    "CHUNK_FAULT_KINDS",
    "DEFAULT_FAULT_KINDS",
    "FAULT_KINDS",
    "FINAL_SCORE_FAULT_KINDS",
    "ChatServer",
    "RequestRecord",
    "chunk_content",
    "default_chunk_count",
    "default_chunk_grader",
    "default_final_score",
    "default_grader",
    "default_labeler",
    "final_score_content",
    "overrating_grader",
]

#: Every kind name a marker or ``fault_kinds`` may use (``429`` and ``slow`` take ``@S``).
FAULT_KINDS = frozenset(
    {
        "ok",
        "429",
        "400",
        "500",
        "501",
        "502",
        "503",
        "drop",
        "truncated",
        "nonjson",
        "badjson",
        "range",
        "shape",
        "empty",
        "slow",
        "httpjson",
    }
)

#: Kinds that shape a chunk reply (a plain grade request ignores them).
CHUNK_FAULT_KINDS = frozenset({"fewer", "more", "repeat", "noreason"})
#: Kinds that shape a final-score reply (any other request succeeds).
FINAL_SCORE_FAULT_KINDS = frozenset({"nomarker"})
FAULT_KINDS = FAULT_KINDS | CHUNK_FAULT_KINDS | FINAL_SCORE_FAULT_KINDS | {"fenced"}

#: What random faults draw from by default: every kind of the first set that needs no
#: argument (kept as it was, so seeded fault sequences of existing tests do not move).
DEFAULT_FAULT_KINDS: tuple[str, ...] = (
    "429",
    "500",
    "502",
    "503",
    "badjson",
    "drop",
    "httpjson",
    "nonjson",
    "range",
    "truncated",
)

COMPLETIONS_PATH = "/v1/chat/completions"

_FAULT_MARKER = re.compile(r"\[\[fault:([A-Za-z0-9_.-]+):([^\]]*)\]\]")
_GRADE_MARKER = re.compile(r"\[\[grade=(\d)\]\]")
_DELIMITER_LIKE = re.compile(r"[A-Za-z0-9]{16,}")
_CHUNK_HEADING = re.compile(r"^Chunk (\d+) of (\d+):$", re.MULTILINE)
_CHUNKS_MARKER = re.compile(r"\[\[chunks=([1-9](?:,[1-9])*)\]\]")
_LABEL_MARKER = re.compile(r"\[\[label=(-?\d+)\]\]")
_FINAL_SCORE_ASKED = re.compile(r"##final score", re.IGNORECASE)


def default_grader(text: str) -> int:
    """The grade a ``[[grade=N]]`` marker asks for, else a stable hash of the text, 1-5."""
    marker = _GRADE_MARKER.search(text)
    if marker is not None:
        return int(marker.group(1))
    stable = _DELIMITER_LIKE.sub("", _FAULT_MARKER.sub("", text))
    digest = hashlib.sha256(stable.encode("utf-8")).digest()
    return 1 + int.from_bytes(digest[:8], "big") % 5


_PROMPT_FENCE = re.compile(r"^(DATA-[0-9A-F]{16})$", re.MULTILINE)
_QUERY_LINE = re.compile(r"^Query: (.*)$", re.MULTILINE)
_WORD = re.compile(r"\w+")


def _query_and_passage(text: str) -> tuple[str, str] | None:
    """The query and the fenced passage of a prompt in the built-in layout, or None."""
    query = _QUERY_LINE.search(text)
    fence = _PROMPT_FENCE.search(text)
    if query is None or fence is None:
        return None
    start = fence.end() + 1
    end = text.find(f"\n{fence.group(1)}\n", start - 1)
    if end < 0:
        end = text.find(f"\n{fence.group(1)}", start - 1)
    if end < 0:
        return None
    passage = text[start:end]
    if passage.startswith("Title: "):
        passage = passage.split("\n", 1)[1] if "\n" in passage else ""
    return query.group(1), passage


def overrating_grader(*, long_chars: int) -> Callable[[str], int]:
    """A grader that rates a passage higher for being long or holding the query's words
    (see the module docstring, "An overrating judge")."""

    def grade(text: str) -> int:
        found = _query_and_passage(text)
        if found is None:
            return default_grader(text)
        query, passage = found
        paragraphs = passage.split("\n\n")
        first = paragraphs[0]
        marker = _GRADE_MARKER.search(first)
        if marker is not None:
            base = int(marker.group(1))
        else:
            digest = hashlib.sha256(f"{query}\x1f{first}".encode()).digest()
            base = 1 + int.from_bytes(digest[:8], "big") % 5
        long = len(passage) >= long_chars
        last = {w.lower() for w in _WORD.findall(paragraphs[-1])}
        terms = {w.lower() for w in _WORD.findall(query)}
        stuffed = bool(terms) and terms <= last
        return min(5, base + long + stuffed)

    return grade


def default_chunk_count(text: str) -> int | None:
    """N when the text holds ``Chunk I of N:`` lines (a chunk request), else None."""
    found = _CHUNK_HEADING.search(text)
    return int(found.group(2)) if found is not None else None


def default_chunk_grader(text: str, count: int) -> list[int]:
    """The grades a ``[[chunks=...]]`` marker gives, else one stable hash per chunk."""
    marker = _CHUNKS_MARKER.search(text)
    if marker is not None:
        given = [int(g) for g in marker.group(1).split(",")]
        return (given * count)[:count] if given else []
    stable = _DELIMITER_LIKE.sub("", _FAULT_MARKER.sub("", text))
    grades = []
    for i in range(1, count + 1):
        digest = hashlib.sha256(f"{stable}\x1f{i}".encode()).digest()
        grades.append(1 + int.from_bytes(digest[:8], "big") % 5)
    return grades


def default_final_score(text: str) -> bool:
    """Whether the text asks for a ``##final score: N`` line (a final-score request)."""
    return _FINAL_SCORE_ASKED.search(text) is not None


def default_labeler(text: str) -> int:
    """The label a ``[[label=N]]`` marker asks for, else a stable hash of the text, 0-3."""
    marker = _LABEL_MARKER.search(text)
    if marker is not None:
        return int(marker.group(1))
    stable = _DELIMITER_LIKE.sub("", _FAULT_MARKER.sub("", text))
    digest = hashlib.sha256(stable.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % 4


def final_score_content(label: int, kind: str) -> str:
    """A final-score reply giving ``label``, shaped by the fault ``kind``."""
    if kind == "nomarker":
        return f"The passage bears on the query. My final score is {label}."
    if kind == "range":
        label = 9
    return f"The passage bears on the query.\n##final score: {label}"


def chunk_content(grades: list[int], kind: str) -> str:
    """A chunk reply for ``grades``, shaped by the fault ``kind``."""
    if kind == "noreason":
        grades = [4] * len(grades)
    entries = [
        {"position": i, "grade": g, "reason": "" if kind == "noreason" else f"Stub grade {g}."}
        for i, g in enumerate(grades, 1)
    ]
    if kind == "range" and entries:
        entries[0]["grade"] = 7
    elif kind == "fewer" and entries:
        entries.pop()
    elif kind == "more":
        entries.append({"position": len(grades) + 1, "grade": 3, "reason": "No such chunk."})
    elif kind == "repeat" and len(entries) > 1:
        entries[-1]["position"] = 1
    return json.dumps({"chunks": entries})


def _parse_kind(kind: str) -> tuple[str, float | None]:
    """Split ``name@S`` and check it; raises ValueError for anything not in the language."""
    name, at, arg = kind.strip().partition("@")
    if name not in FAULT_KINDS:
        raise ValueError(f"unknown fault kind {kind!r}")
    if not at:
        if name == "slow":
            raise ValueError("slow needs a duration: slow@S")
        return name, None
    if name not in {"429", "slow"}:
        raise ValueError(f"fault kind {name!r} takes no @argument")
    try:
        seconds = float(arg)
    except ValueError:
        raise ValueError(f"bad duration in fault kind {kind!r}") from None
    if not seconds >= 0:
        raise ValueError(f"bad duration in fault kind {kind!r}")
    return name, seconds


def _content_text(content: object) -> str:
    # Content may be a string or, in the newer API, a list of typed parts.
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


def _seconds_header(seconds: float) -> str:
    return str(int(seconds)) if seconds == int(seconds) else repr(seconds)


@dataclass(frozen=True)
class RequestRecord:
    """One request as the server saw it."""

    #: `time.monotonic()` when the request line and body had been read.
    received_at: float
    path: str
    #: The parsed JSON body, or None if it was not JSON.
    body: Any
    #: Header names lower-cased; a repeated header keeps its last value.
    headers: dict[str, str]
    #: The fault kind applied (e.g. ``"429@0.2"``, ``"drop"``), ``"ok"``, or the status
    #: (``"404"``, ``"400"``) of a request that was not a valid completion request.
    fault: str
    #: The keys of the fault markers in the request's text.
    keys: tuple[str, ...]
    #: The client's port: requests on one keep-alive connection share it.
    client_port: int


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # Handler threads are daemons and are not joined: close() unblocks them instead.
    block_on_close = False
    request_queue_size = 128

    def __init__(self, chat: ChatServer) -> None:
        self.chat = chat
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind calls socket.getfqdn, a reverse DNS lookup that can
        # take seconds on a machine without a resolver.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.connections_lock:
            self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.connections_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        # A handler waits in readline() on an idle keep-alive connection; shutting the
        # socket down makes that read return EOF, so the thread ends and frees it.
        with self.connections_lock:
            connections = list(self.connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that time out or go away mid-reply, and sockets close() shuts down,
        # are what these tests are for, not errors.
        error = sys.exc_info()[1]
        if isinstance(error, OSError) or self.chat.stopping.is_set():
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; with Nagle on, the body waits for the
    # client's delayed ACK, some 40 ms per reply.
    disable_nagle_algorithm = True
    server_version = "ChatStub/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self._serve()

    def do_GET(self) -> None:
        self._serve()

    def _serve(self) -> None:
        chat = cast(_Server, self.server).chat
        length = int(self.headers.get("Content-Length") or 0)
        # Read the whole body even for a 404 so the connection stays in step.
        raw = self.rfile.read(length) if length > 0 else b""
        with chat.lock:
            chat.in_flight += 1
            chat.max_in_flight_value = max(chat.max_in_flight_value, chat.in_flight)
        try:
            self._answer(chat, raw)
        finally:
            with chat.lock:
                chat.in_flight -= 1

    def _answer(self, chat: ChatServer, raw: bytes) -> None:
        path = self.path.split("?", 1)[0]
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        messages = body.get("messages") if isinstance(body, dict) else None

        if self.command != "POST" or path != COMPLETIONS_PATH:
            chat.record(self, path, body, "404", ())
            self._send_error(404, f"no route for {self.command} {path}", "not_found")
            return
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            chat.record(self, path, body, "400", ())
            self._send_error(400, "body must be JSON with a list of messages", "bad_request")
            return

        all_text = "\n".join(_content_text(m.get("content")) for m in messages)
        user_text = "\n".join(
            _content_text(m.get("content")) for m in messages if m.get("role") == "user"
        )
        try:
            kind, keys = chat.choose_fault(all_text)
        except ValueError as error:
            chat.record(self, path, body, "400", ())
            self._send_error(400, str(error), "bad_fault_marker")
            return
        chat.record(self, path, body, kind, keys)

        name, seconds = _parse_kind(kind)
        delay = chat.latency + (seconds if name == "slow" and seconds is not None else 0.0)
        # Waiting on the event rather than sleeping lets close() cut a slow reply short.
        if chat.stopping.wait(delay):
            self.close_connection = True
            return

        if name == "drop":
            self.close_connection = True
            return
        if name == "429":
            retry = chat.retry_after if seconds is None else seconds
            self._send_error(
                429,
                "Rate limit reached; please retry.",
                "rate_limit_exceeded",
                headers={
                    "Retry-After": _seconds_header(retry),
                    "retry-after-ms": str(round(retry * 1000)),
                },
            )
            return
        if name in {"400", "500", "501", "502", "503"}:
            self._send_error(int(name), f"Simulated upstream error {name}.", "server_error")
            return
        if name == "httpjson":
            page = b"<html><body><h1>502 Bad Gateway</h1></body></html>\n"
            self._send(200, page)
            return

        grade = chat.grader(user_text)
        chunks = chat.chunk_count(user_text)
        shaped = name not in {"nonjson", "badjson", "shape", "empty"}
        if chunks is not None and shaped:
            content = chunk_content(chat.chunk_grader(user_text, chunks), name)
        elif shaped and chat.final_score(user_text):
            content = final_score_content(chat.labeler(user_text), name)
        elif name == "nonjson":
            content = f"I would rate this a {grade} because the passage addresses the query."
        elif name == "badjson":
            content = f'{{"grade": {grade}, "reason": "cut off'
        elif name == "range":
            content = json.dumps({"grade": 7, "reason": "Out of scale on purpose."})
        elif name == "shape":
            content = json.dumps({"score": grade, "why": "Another shape on purpose."})
        elif name == "empty":
            content = ""
        else:
            content = json.dumps({"grade": grade, "reason": f"Stub grade {grade}."})
        if name == "fenced":
            content = f"```json\n{content}\n```"
        reply = chat.completion(body, all_text, content)

        if name == "truncated":
            self._send(200, reply, sent=len(reply) // 2)
            self.close_connection = True
            return
        self._send(200, reply)

    def _send_error(
        self,
        status: int,
        message: str,
        code: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        error = {"message": message, "type": code, "param": None, "code": code}
        self._send(status, json.dumps({"error": error}).encode(), headers=headers)

    def _send(
        self,
        status: int,
        payload: bytes,
        *,
        headers: dict[str, str] | None = None,
        sent: int | None = None,
    ) -> None:
        # Always a Content-Length: without one an HTTP/1.1 client cannot reuse the
        # connection. For `truncated` it promises more bytes than `sent`.
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload if sent is None else payload[:sent])
        self.wfile.flush()


class ChatServer:
    """An OpenAI-style chat-completions server on 127.0.0.1, with scripted faults.

    Use it as a context manager, or call `start` and `close`. See the module docstring
    for the marker language.

    :param latency: seconds every reply waits before it is sent (faults included); may
        be changed while the server runs.
    :param grader: maps the text of the user messages to a grade; `default_grader` by
        default.
    :param model_name: the ``model`` of every reply; by default the request's.
    :param fault_rate: the probability that a request without fault markers gets a
        random fault.
    :param fault_kinds: what random faults are drawn from, uniformly.
    :param seed: the seed of the random faults.
    :param retry_after: the Retry-After, in seconds, of a ``429`` without ``@S``.
    :param chunk_count: the number of chunks a request's user text asks to grade, or
        None for a plain grade request; `default_chunk_count` by default.
    :param chunk_grader: maps (user text, chunk count) to one grade per chunk;
        `default_chunk_grader` by default.
    :param final_score: whether a request's user text asks for a final-score reply;
        `default_final_score` by default.
    :param labeler: maps the text of the user messages to a final-score request's
        label; `default_labeler` by default.
    """

    def __init__(
        self,
        *,
        latency: float = 0.0,
        grader: Callable[[str], int] | None = None,
        model_name: str | None = None,
        fault_rate: float = 0.0,
        fault_kinds: Sequence[str] = DEFAULT_FAULT_KINDS,
        seed: int = 0,
        retry_after: float = 1.0,
        chunk_count: Callable[[str], int | None] | None = None,
        chunk_grader: Callable[[str, int], list[int]] | None = None,
        final_score: Callable[[str], bool] | None = None,
        labeler: Callable[[str], int] | None = None,
    ) -> None:
        if not 0.0 <= fault_rate <= 1.0:
            raise ValueError("fault_rate must be within [0, 1]")
        if fault_rate > 0 and not fault_kinds:
            raise ValueError("fault_rate > 0 needs at least one fault kind")
        for kind in fault_kinds:
            _parse_kind(kind)
        self.latency = latency
        self.grader: Callable[[str], int] = grader or default_grader
        self.model_name = model_name
        self.fault_rate = fault_rate
        self.fault_kinds = tuple(kind.strip() for kind in fault_kinds)
        self.seed = seed
        self.retry_after = retry_after
        self.chunk_count: Callable[[str], int | None] = chunk_count or default_chunk_count
        self.chunk_grader: Callable[[str, int], list[int]] = chunk_grader or default_chunk_grader
        self.final_score: Callable[[str], bool] = final_score or default_final_score
        self.labeler: Callable[[str], int] = labeler or default_labeler

        # One lock guards the records, the per-key counts, the in-flight figures and
        # the random generator: handlers run on many threads at once.
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.in_flight = 0
        self.max_in_flight_value = 0
        self._records: list[RequestRecord] = []
        self._key_counts: dict[str, int] = {}
        self._random = random.Random(seed)
        self._completions = 0
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> ChatServer:
        if self._server is not None:
            raise RuntimeError("the server is already started")
        self.stopping.clear()
        self._server = _Server(self)
        # A short poll interval: shutdown() waits for the serving loop's next poll.
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.02},
            name=f"chat-server-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        server, thread = self._server, self._thread
        if server is None:
            return
        self.stopping.set()
        server.shutdown()
        server.close_connections()
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the server is not started")
        return self._server.server_port

    @property
    def base_url(self) -> str:
        """What an OpenAI client takes as its base URL, e.g. ``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def url(self) -> str:
        """The chat-completions endpoint itself."""
        return f"{self.base_url}/chat/completions"

    # -- introspection -----------------------------------------------------------------

    @property
    def requests(self) -> list[RequestRecord]:
        """A copy of the records of every request so far, in arrival order."""
        with self.lock:
            return list(self._records)

    @property
    def max_in_flight(self) -> int:
        """The most requests that were being handled at the same moment."""
        with self.lock:
            return self.max_in_flight_value

    def count(self, key: str | None = None) -> int:
        """The number of requests, or of those holding a fault marker with ``key``."""
        with self.lock:
            if key is None:
                return len(self._records)
            return sum(1 for record in self._records if key in record.keys)

    def reset(self) -> None:
        """Forget the records and the per-key counts, and reseed the random faults."""
        with self.lock:
            self._records.clear()
            self._key_counts.clear()
            self._random = random.Random(self.seed)
            self.max_in_flight_value = self.in_flight

    # -- used by the handler -----------------------------------------------------------

    def choose_fault(self, text: str) -> tuple[str, tuple[str, ...]]:
        """The fault kind for a request with this text, and its marker keys.

        Counts the request against each of its keys, so call it once per request.
        """
        matches = list(_FAULT_MARKER.finditer(text))
        if text.count("[[fault:") != len(matches):
            raise ValueError("malformed fault marker: want [[fault:KEY:KIND,...]]")
        markers: dict[str, list[str]] = {}
        for match in matches:
            kinds = [kind.strip() for kind in match.group(2).split(",") if kind.strip()]
            for kind in kinds:
                _parse_kind(kind)
            # The same key twice (say in the system and the user message) is one marker.
            markers.setdefault(match.group(1), kinds)
        with self.lock:
            if markers:
                chosen = "ok"
                for key, kinds in markers.items():
                    n = self._key_counts.get(key, 0)
                    self._key_counts[key] = n + 1
                    if chosen == "ok" and n < len(kinds):
                        chosen = kinds[n]
                return chosen, tuple(markers)
            if self.fault_rate > 0 and self._random.random() < self.fault_rate:
                return self._random.choice(self.fault_kinds), ()
            return "ok", ()

    def record(
        self,
        handler: BaseHTTPRequestHandler,
        path: str,
        body: Any,
        fault: str,
        keys: tuple[str, ...],
    ) -> None:
        headers = {name.lower(): value for name, value in handler.headers.items()}
        record = RequestRecord(
            received_at=time.monotonic(),
            path=path,
            body=body,
            headers=headers,
            fault=fault,
            keys=keys,
            client_port=int(handler.client_address[1]),
        )
        with self.lock:
            self._records.append(record)

    def completion(self, body: dict[str, Any], prompt: str, content: str) -> bytes:
        with self.lock:
            self._completions += 1
            number = self._completions
        prompt_tokens = len(prompt) // 4
        completion_tokens = len(content) // 4
        reply = {
            "id": f"chatcmpl-stub-{number:06d}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model_name or str(body.get("model", "stub")),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
        return json.dumps(reply).encode()
