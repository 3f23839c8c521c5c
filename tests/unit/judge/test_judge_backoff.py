"""Retry-After headers and the delay between retries."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

from raglabel.judge.backoff import RetryPolicy, retry_after

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "5"}, 5.0),
        ({"retry-after": "0.25"}, 0.25),
        ({"retry-after": " 3 "}, 3.0),
        ({"retry-after": "0"}, 0.0),
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after-ms": "20.5"}, 0.0205),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after-ms": "soon", "retry-after": "9"}, 9.0),
        ({"retry-after": "-3"}, 0.0),
        ({"retry-after-ms": "-500"}, 0.0),
        ({"retry-after": "Wed, 01 May 2024 12:00:30 GMT"}, 30.0),
        ({"retry-after": "Wed, 01 May 2024 11:59:00 GMT"}, 0.0),
        ({"retry-after": "Wed, 01 May 2024 12:02:00"}, 120.0),
        ({"retry-after": "later, please"}, None),
        ({"retry-after": ""}, None),
        ({}, None),
        ({"content-type": "application/json"}, None),
    ],
)
def test_retry_after(headers: dict[str, str], expected: float | None) -> None:
    got = retry_after(headers, now=NOW)
    if expected is None:
        assert got is None
    else:
        assert got == pytest.approx(expected)


def test_retry_after_reads_httpx_headers_case_insensitively() -> None:
    assert retry_after(httpx.Headers({"Retry-After": "7"}), now=NOW) == 7.0
    assert retry_after(httpx.Headers({"Retry-After-Ms": "700"}), now=NOW) == 0.7


def test_retry_after_http_date_is_relative_to_now() -> None:
    when = format_datetime(NOW + timedelta(seconds=90), usegmt=True)
    assert retry_after({"retry-after": when}, now=NOW) == pytest.approx(90.0)
    later = NOW + timedelta(seconds=60)
    assert retry_after({"retry-after": when}, now=later) == pytest.approx(30.0)


def test_retry_after_http_date_defaults_to_the_clock() -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=100), usegmt=True)
    got = retry_after({"retry-after": when})
    assert got is not None
    assert 95.0 <= got <= 100.0


def test_delay_grows_exponentially_within_half_ceiling_and_ceiling() -> None:
    policy = RetryPolicy(base_s=0.5, cap_s=30.0)
    rng = random.Random(1)
    for retry in range(1, 12):
        ceiling = min(30.0, 0.5 * 2 ** (retry - 1))
        for _ in range(50):
            wait = policy.delay(retry, None, rng)
            assert ceiling / 2 <= wait <= ceiling


def test_delay_is_capped() -> None:
    policy = RetryPolicy(base_s=1.0, cap_s=4.0)
    rng = random.Random(2)
    waits = [policy.delay(retry, None, rng) for retry in range(3, 40) for _ in range(10)]
    assert max(waits) <= 4.0
    assert min(waits) >= 2.0


def test_delay_honours_retry_after() -> None:
    policy = RetryPolicy(base_s=10.0, cap_s=60.0)
    rng = random.Random(3)
    for told in (0.0, 0.05, 1.0, 2.5, 20.0, 120.0):
        for retry in (1, 4):
            wait = policy.delay(retry, told, rng)
            assert told <= wait <= told + min(1.0, told / 4 + 0.05)


def test_delay_is_deterministic_with_a_seeded_rng() -> None:
    policy = RetryPolicy()

    def sequence(seed: int) -> list[float]:
        rng = random.Random(seed)
        return [policy.delay(retry, told, rng) for retry in range(1, 7) for told in (None, 2.0)]

    assert sequence(42) == sequence(42)
    assert sequence(42) != sequence(43)


def test_delay_stays_capped_for_huge_retry_numbers() -> None:
    assert RetryPolicy(cap_s=30.0).delay(1100, None, random.Random(0)) <= 30.0
