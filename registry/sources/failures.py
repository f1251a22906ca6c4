"""What a failed attempt was: whether it is retried, what it is called, how long to wait.

:func:`registry.sources.fetch.fetch_url` retries what :func:`retryable_exception_types`
lists (a 429 or 5xx is raised as :class:`RetryableStatus`), never a host name that does
not resolve (:func:`name_unresolvable`), waits what ``Retry-After`` asks
(:func:`parse_retry_after`), and names the last failure with :func:`describe_failure`.
"""

from __future__ import annotations

import email.utils
import math
import socket
import threading
import time
from datetime import UTC, datetime
from urllib.parse import urlsplit

from registry.sources.bounds import BodyRefused

__all__ = [
    "RetryableStatus",
    "describe_failure",
    "forget_unreachable",
    "mark_unreachable",
    "name_unresolvable",
    "parse_retry_after",
    "retryable_exception_types",
    "unreachable_reason",
]


class RetryableStatus(Exception):
    """A 429 or 5xx response; carries the wait the server asked for (seconds)."""

    def __init__(self, status: int, retry_after: float | None) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.retry_after = retry_after


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Turn a ``Retry-After`` header into seconds.

    Args:
        value: the header value: delay seconds (``"7"``) or an HTTP-date
            (``"Wed, 21 Oct 2026 07:28:00 GMT"``); ``None`` when absent.
        now: the current time for HTTP-dates (default: the clock).

    Returns:
        Seconds to wait (``0`` for a date in the past), or ``None`` when the header is
        absent or unreadable.
    """
    if value is None:
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return max(seconds, 0.0) if seconds == seconds else None  # NaN -> unreadable
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = now if now is not None else datetime.now(UTC)
    return max((when - current).total_seconds(), 0.0)


def name_unresolvable(exc: BaseException) -> bool:
    """Return whether ``exc`` comes from a host name that does not resolve (DNS).

    Such a failure is not transient on the scale of a retry's back-off (an offline
    machine, a typo in ``CAPC_BASE_URL``), so it is not retried: the fallback order
    moves on at once instead of waiting out every attempt.
    """
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, socket.gaierror):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def retryable_exception_types() -> tuple[type[BaseException], ...]:
    import httpx

    # TimeoutException: connect, read, write and pool timeouts. NetworkError: connect
    # errors and a connection reset or closed while reading/writing. RemoteProtocolError:
    # the server hung up mid-response (for example fewer bytes than Content-Length).
    return (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError, RetryableStatus)


def describe_failure(exc: BaseException) -> tuple[str, int | None]:
    """Return (a few words on what failed, the HTTP status if any)."""
    import httpx

    if isinstance(exc, RetryableStatus):
        return f"HTTP {exc.status}", exc.status
    if isinstance(exc, httpx.ConnectTimeout):
        return "connect timeout", None
    if isinstance(exc, httpx.ReadTimeout):
        return "read timeout", None
    if isinstance(exc, httpx.TimeoutException):
        return "timeout", None
    if isinstance(exc, httpx.ConnectError):
        return "cannot connect", None
    if isinstance(exc, httpx.ReadError | httpx.WriteError | httpx.CloseError):
        return "connection reset", None
    if isinstance(exc, httpx.RemoteProtocolError):
        return "connection closed before a complete response", None
    if isinstance(exc, httpx.DecodingError):
        return "undecodable response (Content-Encoding)", None
    if isinstance(exc, httpx.TooManyRedirects):
        return "too many redirects", None
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
        return "unsupported URL", None
    if isinstance(exc, BodyRefused):
        return exc.reason, None
    if isinstance(exc, ValueError):
        return "invalid request (a header or the URL cannot be encoded)", None
    return type(exc).__name__, None


# -- hosts that did not answer ----------------------------------------------------------

_DOWN: dict[str, tuple[float, str, float]] = {}  # origin -> (until, reason, its deadline)
_DOWN_LOCK = threading.Lock()


def _origin(url: str) -> str:
    try:
        parts = urlsplit(url)
        return f"{parts.scheme}://{parts.hostname or ''}:{parts.port or ''}"
    except ValueError:
        return url


def mark_unreachable(
    url: str, reason: str, *, for_seconds: float, deadline: float = math.inf
) -> None:
    """Record that a fetch from ``url``'s host (scheme, host, port) did not answer: it hit
    its deadline, timed out, or could not connect (never an HTTP status: the host
    answered). Further fetches from that host in this process whose own deadline is at
    most ``deadline`` (seconds; the failed fetch's) are not attempted for
    ``for_seconds``, so one command waits for a dead host once, not once per URL; a fetch
    with a longer deadline (``capc refresh``'s full ``CAPC_DEADLINE`` after a mark made
    under ``CAPC_STALE_DEADLINE``) is still attempted (see :func:`unreachable_reason`)."""
    with _DOWN_LOCK:
        earlier = _DOWN.get(_origin(url))
        longest = max(deadline, earlier[2]) if earlier else deadline
        _DOWN[_origin(url)] = (time.monotonic() + for_seconds, reason, longest)


def unreachable_reason(url: str, *, deadline: float | None = None) -> str | None:
    """Why ``url`` is not to be fetched now, e.g. ``"127.0.0.1:8080 did not answer an
    earlier fetch (read timeout after 2 attempts (deadline of 2 s reached))"``; ``None``
    when its host has not failed that way within the window :func:`mark_unreachable` set,
    or when ``deadline`` (seconds, the coming fetch's) is longer than the failed fetch's."""
    origin = _origin(url)
    with _DOWN_LOCK:
        found = _DOWN.get(origin)
        if found is None:
            return None
        until, reason, marked = found
        if time.monotonic() >= until:
            del _DOWN[origin]
            return None
        if deadline is not None and deadline > marked:
            return None  # a longer wait than the one that failed: try again
    host = origin.split("://", 1)[-1].rstrip(":")
    return f"{host} did not answer an earlier fetch ({reason})"


def forget_unreachable() -> None:
    """Forget every host recorded by :func:`mark_unreachable` (tests; a new command)."""
    with _DOWN_LOCK:
        _DOWN.clear()
