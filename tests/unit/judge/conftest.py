"""What the judge tests share: a fake chat-completions endpoint's replies and the
marker every rendered prompt fences the passage with.

Everything runs against ``httpx.MockTransport``; no socket is opened.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Coroutine
from typing import Any

import httpx

Handler = Callable[[httpx.Request], Coroutine[None, None, httpx.Response]]

#: The marker line a rendered prompt puts above and below the passage.
FENCE_RE = re.compile(r"DATA-[0-9A-F]{16}")
#: The fake chat-completions endpoint the clients in these tests talk to.
BASE_URL = "http://judge.test/v1"


def chat_response(
    content: str | None, *, prompt_tokens: int = 10, completion_tokens: int = 5
) -> httpx.Response:
    return httpx.Response(
        200,
        json={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens},
        },
    )


def grade_json(grade: int, reason: str = "It answers the query.") -> str:
    return json.dumps({"grade": grade, "reason": reason})


def body_of(request: httpx.Request) -> dict[str, Any]:
    data = json.loads(request.content)
    assert isinstance(data, dict)
    return data
