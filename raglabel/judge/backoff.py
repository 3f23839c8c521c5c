"""When to try a request again: capped exponential backoff with jitter, and the
server's own Retry-After when it sends one."""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 6  # requests per answer slot, the first included
    base_s: float = 0.5
    cap_s: float = 30.0
    #: A server asking for a longer pause than this gets the slot recorded as failed
    #: (the next run tries it again) rather than a worker parked for an hour.
    longest_wait_s: float = 300.0

    def delay(self, retry: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait before retry number ``retry`` (1 for the first retry)."""
        # The exponent stops growing long before floats overflow; the cap rules anyway.
        ceiling = min(self.cap_s, self.base_s * 2.0 ** min(retry - 1, 64))
        # Half fixed, half random: spreads workers that failed together without ever
        # retrying at once.
        wait = ceiling / 2 + rng.uniform(0, ceiling / 2)
        if retry_after is not None:
            # The server knows its own window; the jitter on top keeps workers that were
            # told the same time from arriving in one burst.
            wait = retry_after + rng.uniform(0, min(1.0, retry_after / 4 + 0.05))
        return float(wait)


def retry_after(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """Seconds the server asked for: ``retry-after-ms`` (sent by OpenAI), else
    ``Retry-After`` as seconds or as an HTTP date. None when absent or unreadable."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
