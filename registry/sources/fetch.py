"""HTTP fetching of OpenRouter metadata, with bounded retries.

Two requests are made, both ``GET`` with ``Accept: application/json``:

* :func:`fetch_models`: ``{base_url}/models``;
* :func:`fetch_endpoints`: ``{base_url}/models/{author}/{slug}/endpoints``.

Retried (with :mod:`tenacity`): connection errors, timeouts, a connection reset or
closed mid-response, HTTP 429 (waiting what ``Retry-After`` asks, in seconds or as an
HTTP-date, capped by ``Settings.retry_after_cap``) and HTTP 5xx. Any other status
outside 2xx fails at once. Attempts are bounded by ``Settings.max_attempts`` and the
whole fetch (connect, headers, body, redirects and the waits between attempts) by
``Settings.deadline`` seconds: each operation's timeout is cut to the time left, and a
watchdog shuts the fetch's connections down when it passes
(:class:`registry.sources.transfer.Watchdog`). Redirects are followed by hand, their
bodies never read (:func:`registry.sources.transfer.run_attempt`, at most
:data:`~registry.sources.transfer.MAX_REDIRECTS`). The body is streamed and stops at
``Settings.max_response_bytes`` decoded bytes (:func:`registry.sources.bounds.read_body`);
none of these limits is retried.

Every failure is raised as :class:`FetchError`, whose message names the URL redacted
(:func:`registry.redact.redact_url`) and never the API key, which travels only in the
``Authorization`` header; a ``user:password@`` part of the URL is sent as an
``Authorization: Basic`` header instead (when no API key is set), never in the URL
requested. Before each fetch the ``httpx``/``httpcore`` loggers get a redacting filter
(:func:`registry.redact.install_log_redaction`). :mod:`httpx` and :mod:`tenacity` are
imported when a fetch starts, not when this module is imported.
"""

from __future__ import annotations

import functools
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from registry.errors import MetadataError
from registry.redact import install_log_redaction, redact_text, redact_url
from registry.sources.bounds import BodyRefused
from registry.sources.failures import (
    RetryableStatus,
    describe_failure,
    mark_unreachable,
    name_unresolvable,
    retryable_exception_types,
    unreachable_reason,
)
from registry.sources.settings import Settings
from registry.sources.transfer import Watchdog, run_attempt
from registry.sources.urls import endpoints_url, models_url

if TYPE_CHECKING:
    import httpx

__all__ = [
    "UNREACHABLE_SECONDS",
    "FetchError",
    "FetchResult",
    "fetch_endpoints",
    "fetch_models",
    "fetch_url",
]

UNREACHABLE_SECONDS = 60.0
"""After a fetch from a host hit its deadline, timed out or could not connect, further
fetches from that host (scheme, host, port) in the same process are not attempted for
this many seconds, or ``CAPC_DEADLINE`` when that is longer: one command waits for a
dead host once (``capc audit`` over 7 models: one ``CAPC_STALE_DEADLINE``, not 8)."""

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
        attempts: how many attempts were made (0 when ``skipped``).
        skipped: no request was made: the host did not answer an earlier fetch of
            this process (see :data:`UNREACHABLE_SECONDS`); ``reason`` says when and why.
        why_stopped: why no further attempt was made, when it was not the attempt
            count, e.g. ``" (deadline of 6 s reached)"``.
    """

    def __init__(
        self,
        reason: str,
        *,
        source: str,
        status: int | None = None,
        attempts: int = 1,
        skipped: bool = False,
        why_stopped: str = "",
    ) -> None:
        self.reason = reason
        self.status = status
        self.attempts = attempts
        self.skipped = skipped
        self.why_stopped = why_stopped
        super().__init__(f"GET {source} failed: {self.summary}", source=source)

    @property
    def summary(self) -> str:
        """The failure without the URL, e.g. ``"HTTP 503 after 3 attempts"``, ``"HTTP 429
        after 3 attempts (deadline of 6 s reached)"``.

        Returns:
            A short phrase for one-line notes.
        """
        if self.attempts <= 1:
            return self.reason + self.why_stopped
        return f"{self.reason} after {self.attempts} attempts{self.why_stopped}"


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


@functools.lru_cache(maxsize=1)
def _ssl_context() -> ssl.SSLContext:
    """httpx's default TLS context (certifi roots), built once: building it costs ~50 ms."""
    import httpx

    return httpx.create_ssl_context()


def _without_userinfo(url: str) -> tuple[str, str | None]:
    """Split a ``user:password@`` part off ``url``: ``(url to request, Basic credential)``.

    Credentials travel only in headers, never in a URL that is requested (httpx would
    log it), so the part becomes an ``Authorization: Basic`` header.
    """
    import base64
    from urllib.parse import unquote, urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return url, None  # httpx reports it as an invalid URL
    if "@" not in parts.netloc:
        return url, None
    userinfo, host = parts.netloc.rsplit("@", 1)
    user, _, password = userinfo.partition(":")
    token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode("ascii")
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment)), token


def _headers(settings: Settings, basic: str | None = None) -> dict[str, str]:
    headers = {
        "Accept": "application/json",
        "Accept-Encoding": "gzip, deflate",  # what bounds.read_body decodes
        "User-Agent": _USER_AGENT,
    }
    if settings.api_key is not None:
        headers["Authorization"] = f"Bearer {settings.api_key.get_secret_value()}"
    elif basic is not None:
        headers["Authorization"] = f"Basic {basic}"
    return headers


def _scrub(text: str, settings: Settings) -> str:
    """Remove the API key and any credential-shaped text from a message."""
    if settings.api_key is not None and (secret := settings.api_key.get_secret_value()):
        text = text.replace(secret, "***")
    return redact_text(text)


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
        FetchError: the host did not answer an earlier fetch of this process
            (``skipped``; see :data:`UNREACHABLE_SECONDS`), or
            the server answered with a non-2xx status that is not retried, or
            every attempt failed, or the deadline passed (``"deadline of 60 s reached
            while waiting for the response headers"``), or a body or redirect was
            refused (too large, undecodable, more than 5 redirects). The message names
            the URL (without credentials), never the API key.
    """
    import httpx
    import tenacity

    install_log_redaction()
    shown = redact_url(url)
    earlier = unreachable_reason(url, deadline=settings.deadline)
    if earlier is not None:
        raise FetchError(
            f"not attempted: {earlier}", source=shown, attempts=0, skipped=True
        )
    url, basic = _without_userinfo(url)
    do_sleep = sleep if sleep is not None else time.sleep
    start = time.monotonic()
    retryable = retryable_exception_types()

    def wait_for(state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        if isinstance(exc, RetryableStatus) and exc.retry_after is not None:
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

    def attempt(number: int) -> tuple[int, bytes]:
        if progress is not None:
            suffix = "" if number == 1 else f" (attempt {number} of {settings.max_attempts})"
            progress(f"GET {shown}{suffix}")
        return run_attempt(
            http,
            url,
            headers=_headers(settings, basic),
            timeout=timeout,
            limit=settings.max_response_bytes,
            watchdog=watchdog,
        )

    def timeout() -> httpx.Timeout:
        """Each operation's timeout, cut to the time left before the deadline."""
        remaining = settings.deadline - (time.monotonic() - start)
        return httpx.Timeout(
            connect=max(min(settings.connect_timeout, remaining), 0.001),
            read=max(min(settings.read_timeout, remaining), 0.001),
            write=max(min(settings.read_timeout, remaining), 0.001),
            pool=max(min(settings.connect_timeout, remaining), 0.001),
        )

    owned = client is None
    http = httpx.Client(verify=_ssl_context()) if client is None else client
    watchdog = Watchdog(settings.deadline, start + settings.deadline)
    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception(
            lambda exc: isinstance(exc, retryable) and not name_unresolvable(exc)
        ),
        stop=stop_when,
        wait=wait_for,
        sleep=do_sleep,
        reraise=True,
    )
    attempts = 0
    try:
        with watchdog:
            for attempt_manager in retrying:
                with attempt_manager:
                    attempts = attempt_manager.retry_state.attempt_number
                    status, content = attempt(attempts)
    except (httpx.HTTPError, httpx.InvalidURL, RetryableStatus, BodyRefused, ValueError) as exc:
        # ValueError: a header or URL that cannot be encoded (e.g. a non-ASCII key).
        reason, failed_status = describe_failure(exc)
        why_stopped = f" (deadline of {settings.deadline:g} s reached)" if deadline_hit else ""
        timed_out = watchdog.fired or deadline_hit or time.monotonic() >= watchdog.deadline_at
        if not isinstance(exc, RetryableStatus) and (  # a status: the host answered
            timed_out
            or isinstance(exc, httpx.TimeoutException | httpx.ConnectError)
            or name_unresolvable(exc)
        ):
            window = max(UNREACHABLE_SECONDS, settings.deadline)
            mark_unreachable(url, _scrub(reason + why_stopped, settings), for_seconds=window,
                             deadline=settings.deadline)
        raise FetchError(
            _scrub(reason, settings),
            source=shown,
            status=failed_status,
            attempts=max(attempts, 1),
            why_stopped=why_stopped,
        ) from exc
    finally:
        if owned:
            http.close()
    if not 200 <= status <= 299:
        raise FetchError(
            f"HTTP {status} (not retried)"
            if status >= 400
            else f"unexpected HTTP {status}",
            source=shown,
            status=status,
            attempts=attempts,
        )
    return FetchResult(
        url=shown,
        content=content,
        status=status,
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
