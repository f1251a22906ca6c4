"""The time a model request may take: the total timeout and the stream idle timeout.

A stage may declare ``timeout_seconds`` and ``stream_idle_seconds``; what it leaves out
is derived from the request (conventions of this library, not published figures):

* ``stream_idle_seconds``: how long a stream may stay silent before the socket is
  presumed dead, by the reasoning level sent: 30 s without reasoning, 60 s for
  ``minimal``/``low``, 120 s for ``medium``, 180 s for ``high``, 300 s for
  ``xhigh``/``max`` (a model may think that long before its first token when the
  provider streams no reasoning);
* ``timeout_seconds``: the idle allowance plus ``max_tokens`` at 20 tokens per second
  (a slow decode), at least 60 s; 16,384 tokens are assumed when no limit is sent.

The idle timeout is the one that matters on a dead socket: a total timeout long enough
for a reasoning turn also waits that long on a connection that stopped answering.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["DECODE_TOKENS_PER_SECOND", "IDLE_SECONDS", "request_timeouts"]

#: Stream idle timeout in seconds by reasoning level (``None``: no reasoning sent).
IDLE_SECONDS: Mapping[str | None, float] = {
    None: 30.0, "none": 30.0, "minimal": 60.0, "low": 60.0, "medium": 120.0, "high": 180.0,
    "xhigh": 300.0, "max": 300.0,
}

#: The slow decode rate the total timeout assumes, in tokens per second.
DECODE_TOKENS_PER_SECOND = 20

_UNLIMITED_TOKENS = 16384


def _level(body: Mapping[str, Any], requested: str | None) -> str | None:
    reasoning = body.get("reasoning")
    if not isinstance(reasoning, Mapping) or reasoning.get("enabled") is False:
        return None
    effort = reasoning.get("effort")
    if isinstance(effort, str):
        return effort
    return requested if requested is not None else "medium"


def request_timeouts(
    body: Mapping[str, Any], reasoning: str | None,
    timeout_seconds: float | None, stream_idle_seconds: float | None,
) -> tuple[float, float]:
    """Return ``(timeout_seconds, stream_idle_seconds)`` for a compiled body.

    Args:
        body: the request body (its ``reasoning`` object and ``max_tokens``).
        reasoning: the stage's reasoning level, used when the body sends a budget only.
        timeout_seconds: the stage's total timeout, or ``None`` to derive it.
        stream_idle_seconds: the stage's idle timeout, or ``None`` to derive it.

    >>> request_timeouts({"max_tokens": 1000}, None, None, None)
    (80.0, 30.0)
    """
    idle = stream_idle_seconds if stream_idle_seconds is not None else IDLE_SECONDS.get(
        _level(body, reasoning), IDLE_SECONDS["medium"])
    if timeout_seconds is not None:
        return float(timeout_seconds), float(min(idle, timeout_seconds))
    limit = body.get("max_tokens", body.get("max_completion_tokens"))
    tokens = limit if isinstance(limit, int) else _UNLIMITED_TOKENS
    total = max(60.0, idle + math.ceil(tokens / DECODE_TOKENS_PER_SECOND))
    return float(total), float(idle)
