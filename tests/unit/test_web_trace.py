"""raglabel/web/trace.py: what ``RAGLABEL_SERVE_TRACE`` writes, one JSON object a line.
The server's use of it is tests/e2e/test_serve_trace.py."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from raglabel.errors import InputError
from raglabel.web.trace import ENV_TRACE, RelayTrace


def test_unset_or_empty_turns_the_trace_off(tmp_path: Path) -> None:
    assert RelayTrace.from_environment({}) is None
    assert RelayTrace.from_environment({ENV_TRACE: ""}) is None
    assert list(tmp_path.iterdir()) == []


def test_tabs_are_numbered_and_each_line_says_whose_and_when(tmp_path: Path) -> None:
    target = tmp_path / "trace.jsonl"
    target.write_text('{"event": "key", "from": "an earlier server"}\n')
    trace = RelayTrace.from_environment({ENV_TRACE: str(target)})
    assert trace is not None
    alice, bob = trace.tab("alice"), trace.tab("bob")
    assert (alice.number, bob.number) == (1, 2)
    sent: list[bytes] = []

    async def send(payload: bytes) -> None:
        sent.append(payload)

    received = time.monotonic()
    bob.key(received, 3)
    asyncio.run(alice.timed_output(send)(b"\x1b[2Jscreen"))
    trace.close()
    assert sent == [b"\x1b[2Jscreen"]
    earlier, key, out = (json.loads(line) for line in target.read_text().splitlines())
    assert earlier["from"] == "an earlier server"  # appended, never replaced
    assert key["event"] == "key" and (key["tab"], key["annotator"], key["bytes"]) == (2, "bob", 3)
    assert key["received"] == received <= key["written"]
    assert out["event"] == "out" and (out["tab"], out["annotator"]) == (1, "alice")
    assert out["bytes"] == len(b"\x1b[2Jscreen")
    assert key["written"] <= out["read"] <= out["sent"] <= time.monotonic()


def test_a_file_that_cannot_be_opened_is_named_with_the_variable(tmp_path: Path) -> None:
    target = tmp_path / "no such folder" / "trace.jsonl"
    with pytest.raises(InputError) as raised:
        RelayTrace.from_environment({ENV_TRACE: str(target)})
    assert str(raised.value) == (
        f"{target}: RAGLABEL_SERVE_TRACE names it, but it cannot be opened to append to"
        " (No such file or directory)"
    )
