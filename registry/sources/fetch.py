"""HTTP fetching of OpenRouter metadata, with bounded retries.

Two requests are made, both ``GET`` with ``Accept: application/json``:

* :func:`fetch_models`: ``{base_url}/models``;
* :func:`fetch_endpoints`: ``{base_url}/models/{author}/{slug}/endpoints``.

Retried (with :mod:`tenacity`): connection errors, timeouts, a connection reset or
closed mid-response, HTTP 429 (waiting what ``Retry-After`` asks, in seconds or as an
HTTP-date, capped by ``Settings.retry_after_cap``) and HTTP 5xx. Any other status
outside 2xx fails at once. Attempts are bounded by ``Settings.max_attempts`` and the
whole fetch, waits included, by ``Settings.deadline`` seconds.

Every failure is raised as :class:`FetchError`, whose message names the URL (with any
user:password part removed) and never the API key, which travels only in the
``Authorization`` header. :mod:`httpx` and :mod:`tenacity` are imported when a fetch
starts, not when this module is imported.
"""

from __future__ import annotations

import email.utils
import functools
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from registry.errors import MetadataError
from registry.sources.settings import Settings
from registry.sources.urls import endpoints_url, models_url, redact_url

if TYPE_CHECKING:
    import httpx

__all__ = ["FetchError", "FetchResult", "fetch_endpoints", "fetch_models", "fetch_url"]

Sleep = Callable[[float], None]
"""Waits the given number of seconds (``time.sleep``; tests pass a recorder)."""

Progress = Callable[[str], None]
"""Receives one short line of progress (``"GET https://... (attempt 2 of 4)"``)."""

_USER_AGENT = "capability-compiler/0.1"


class FetchError(MetadataError):
    """A metadata request failed after every allowed attempt.

    Attributes:
        source: the URL (without credentials).
        reason: the last failure in a few words, e.g. ``"HTTP 503"`` or
            ``"read timeout"``.
        status: the last HTTP status, or ``None`` when no response arrived.
        attempts: how many attempts were made.
    """

    def __init__(
        self, reason: str, *, source: str, status: int | None = None, attempts: int = 1
    ) -> None:
        self.reason = reason
        self.status = status
        self.attempts = attempts
        super().__init__(f"GET {source} failed: {self.summary}", source=source)

    @property
    def summary(self) -> str:
        """The failure without the URL, e.g. ``"HTTP 503 after 3 attempts"``.

        Returns:
            A short phrase for one-line notes.
        """
        if self.attempts <= 1:
            return self.reason
        return f"{self.reason} after {self.attempts} attempts"


@dataclass(frozen=True)
class FetchResult:
    """A successful response body.

    Attributes:
        url: the URL requested (without credentials).
        content: the decoded body bytes (gzip/deflate already undone by httpx).
        status: the HTTP status (2xx).
        fetched_at: when the response arrived (UTC).
        attempts: how many attempts it took (1 = first try).
    """

    url: str
    content: bytes
    status: int
    fetched_at: datetime
    attempts: int


class _RetryableStatus(Exception):
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


def _name_unresolvable(exc: BaseException) -> bool:
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


def _retryable_exception_types() -> tuple[type[BaseException], ...]:
    import httpx

    # TimeoutException: connect, read, write and pool timeouts. NetworkError: connect
    # errors and a connection reset or closed while reading/writing. RemoteProtocolError:
    # the server hung up mid-response (for example fewer bytes than Content-Length).
    return (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError, _RetryableStatus)


def _describe_failure(exc: BaseException) -> tuple[str, int | None]:
    """Return (a few words on what failed, the HTTP status if any)."""
    import httpx

    if isinstance(exc, _RetryableStatus):
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
    if isinstance(exc, ValueError):
        return "invalid request (a header or the URL cannot be encoded)", None
    return type(exc).__name__, None


@functools.lru_cache(maxsize=1)
def _ssl_context() -> ssl.SSLContext:
    """httpx's default TLS context (certifi roots), built once: building it costs ~50 ms."""
    import httpx

    return httpx.create_ssl_context()


def _headers(settings: Settings) -> dict[str, str]:
    headers = {"Accept": "application/json", "User-Agent": _USER_AGENT}
    if settings.api_key is not None:
        headers["Authorization"] = f"Bearer {settings.api_key.get_secret_value()}"
    return headers


def _scrub(text: str, settings: Settings) -> str:
    """Remove the API key from a message, whatever produced it."""
    if settings.api_key is None:
        return text
    secret = settings.api_key.get_secret_value()
    return text.replace(secret, "***") if secret else text


def fetch_url(
    url: str,
    *,
    settings: Settings,
    client: httpx.Client | None = None,
    sleep: Sleep | None = None,
    progress: Progress | None = None,
) -> FetchResult:
    """``GET`` one URL with retries and return the body.

    Args:
        url: the URL to request.
        settings: timeouts, attempts, deadline, waits and the optional API key.
        client: an :class:`httpx.Client` to use (tests pass one with a mock transport);
            by default a client is created and closed here. The per-request timeout
            always comes from ``settings``.
        sleep: how to wait between attempts (default :func:`time.sleep`).
        progress: receives one line before each attempt (for a terminal spinner).

    Returns:
        The body and how many attempts it took.

    Raises:
        FetchError: the server answered with a non-2xx status that is not retried, or
            every attempt failed, or the deadline passed. The message names the URL
            (without credentials), never the API key.
    """
    import httpx
    import tenacity

    shown = redact_url(url)
    do_sleep = sleep if sleep is not None else time.sleep
    start = time.monotonic()
    retryable = _retryable_exception_types()

    def wait_for(state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        if isinstance(exc, _RetryableStatus) and exc.retry_after is not None:
            wanted = exc.retry_after
        else:
            wanted = settings.backoff * 2 ** (state.attempt_number - 1)
        return min(wanted, settings.retry_after_cap)

    deadline_hit = False

    def stop_when(state: tenacity.RetryCallState) -> bool:
        nonlocal deadline_hit
        if state.attempt_number >= settings.max_attempts:
            return True
        elapsed = time.monotonic() - start
        # Stop when the next attempt could not even start before the deadline.
        deadline_hit = elapsed + wait_for(state) >= settings.deadline
        return deadline_hit

    def attempt(number: int) -> httpx.Response:
        remaining = settings.deadline - (time.monotonic() - start)
        if progress is not None:
            suffix = "" if number == 1 else f" (attempt {number} of {settings.max_attempts})"
            progress(f"GET {shown}{suffix}")
        timeout = httpx.Timeout(
            connect=max(min(settings.connect_timeout, remaining), 0.001),
            read=max(min(settings.read_timeout, remaining), 0.001),
            write=max(min(settings.read_timeout, remaining), 0.001),
            pool=max(min(settings.connect_timeout, remaining), 0.001),
        )
        response = http.get(url, headers=_headers(settings), timeout=timeout)
        status = response.status_code
        if status == 429 or 500 <= status <= 599:
            raise _RetryableStatus(status, parse_retry_after(response.headers.get("Retry-After")))
        return response

    owned = client is None
    http = (
        httpx.Client(follow_redirects=True, verify=_ssl_context()) if client is None else client
    )
    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception(
            lambda exc: isinstance(exc, retryable) and not _name_unresolvable(exc)
        ),
        stop=stop_when,
        wait=wait_for,
        sleep=do_sleep,
        reraise=True,
    )
    attempts = 0
    try:
        for attempt_manager in retrying:
            with attempt_manager:
                attempts = attempt_manager.retry_state.attempt_number
                response = attempt(attempts)
    except (httpx.HTTPError, httpx.InvalidURL, _RetryableStatus, ValueError) as exc:
        # ValueError: a header or URL that cannot be encoded (e.g. a non-ASCII key).
        reason, status = _describe_failure(exc)
        if deadline_hit:
            reason += f" (deadline of {settings.deadline:g} s reached)"
        raise FetchError(
            _scrub(reason, settings), source=shown, status=status, attempts=max(attempts, 1)
        ) from exc
    finally:
        if owned:
            http.close()
    if not 200 <= response.status_code <= 299:
        raise FetchError(
            f"HTTP {response.status_code} (not retried)"
            if response.status_code >= 400
            else f"unexpected HTTP {response.status_code}",
            source=shown,
            status=response.status_code,
            attempts=attempts,
        )
    return FetchResult(
        url=shown,
        content=response.content,
        status=response.status_code,
        fetched_at=datetime.now(UTC),
        attempts=attempts,
    )


def fetch_models(
    settings: Settings,
    *,
    client: httpx.Client | None = None,
    sleep: Sleep | None = None,
    progress: Progress | None = None,
) -> FetchResult:
    """Fetch ``GET {base_url}/models``.

    Args:
        settings: see :func:`fetch_url`.
        client: see :func:`fetch_url`.
        sleep: see :func:`fetch_url`.
        progress: see :func:`fetch_url`.

    Returns:
        The raw response body; parsing and checking it is the caller's job.

    Raises:
        FetchError: see :func:`fetch_url`.
    """
    return fetch_url(
        models_url(settings), settings=settings, client=client, sleep=sleep, progress=progress
    )


def fetch_endpoints(
    model_id: str,
    settings: Settings,
    *,
    client: httpx.Client | None = None,
    sleep: Sleep | None = None,
    progress: Progress | None = None,
) -> FetchResult:
    """Fetch ``GET {base_url}/models/{author}/{slug}/endpoints``.

    Args:
        model_id: ``author/slug``.
        settings: see :func:`fetch_url`.
        client: see :func:`fetch_url`.
        sleep: see :func:`fetch_url`.
        progress: see :func:`fetch_url`.

    Returns:
        The raw response body.

    Raises:
        MetadataError: ``model_id`` is not ``author/slug``.
        FetchError: see :func:`fetch_url`.
    """
    return fetch_url(
        endpoints_url(settings, model_id),
        settings=settings,
        client=client,
        sleep=sleep,
        progress=progress,
    )
