"""One attempt of a fetch: redirects followed by hand, all of it inside the fetch's deadline.

:func:`run_attempt` sends ``GET`` with ``follow_redirects=False`` and follows up to
:data:`MAX_REDIRECTS` redirects (301, 302, 303, 307, 308) itself, so that no redirect's
body is ever read: httpx reads a 3xx body before following it, outside any size limit
or deadline of ours. Each hop's response is closed unread (which closes its
connection). ``Authorization`` (the API key, or the Basic credential from a URL's
``user:password@`` part) is sent only while every hop stays on the first URL's origin
(scheme, host and port; an ``http`` to ``https`` upgrade of the same host on the
default ports counts as the same, as in httpx); once dropped it is never sent again. A
``user:password@`` part in a ``Location`` is dropped, never sent.

:class:`Watchdog` bounds the whole fetch, connect, headers, body, redirects and waits
between attempts included: a :class:`threading.Timer` set to the deadline shuts down
every connection the fetch opened (their sockets are learnt from httpcore's ``trace``
extension, https://www.encode.io/httpcore/extensions/#trace), so a server that drips
its status line or headers a byte at a time is cut at the deadline although each read
is within ``CAPC_READ_TIMEOUT``. Two waits it cannot cut, where only the per-operation
timeouts (cut to the time left) apply: a TLS handshake (Python's :mod:`ssl` detaches
the plain socket it wraps, and the wrapped one is known only once the handshake is
done), and, until its headers arrive, a connection that a caller's own client had
opened before the fetch began.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from registry.redact import redact_url
from registry.sources.bounds import BodyRefused, read_body
from registry.sources.failures import RetryableStatus, parse_retry_after

if TYPE_CHECKING:
    import httpx

__all__ = ["MAX_REDIRECTS", "REDIRECT_STATUSES", "Watchdog", "run_attempt"]

MAX_REDIRECTS = 5
"""Redirects followed in one attempt; one more is a failed fetch (not retried)."""

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
"""Statuses followed when they carry a ``Location`` (every request here is a GET)."""

_CONNECTED = (
    "connection.connect_tcp.complete",
    "connection.connect_unix_socket.complete",
    "connection.start_tls.complete",
)


class Watchdog:
    """Shuts down a fetch's connections when its deadline passes.

    Args:
        deadline: the fetch's deadline in seconds (``CAPC_DEADLINE``, for messages).
        deadline_at: the :func:`time.monotonic` instant the fetch must end by.

    Use as a context manager around the whole fetch. :meth:`trace` is the httpcore
    ``trace`` extension of every request; :attr:`fired` says whether the deadline
    passed, and :attr:`phase` what the fetch was doing then.
    """

    def __init__(self, deadline: float, deadline_at: float) -> None:
        self.deadline = deadline
        self.deadline_at = deadline_at
        self.fired = False
        self.phase = "connecting"
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._timer = threading.Timer(max(deadline_at - time.monotonic(), 0.0), self._cut)
        self._timer.daemon = True

    def __enter__(self) -> Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._timer.cancel()
        with self._lock:
            self._sockets.clear()

    def trace(self, event: str, info: dict[str, Any]) -> None:
        """httpcore's ``trace`` callback: learn each new connection's socket."""
        if event in _CONNECTED:
            self.watch(info.get("return_value"))
        elif event == "http11.receive_response_headers.started":
            self.phase = "waiting for the response headers" + (
                self.phase[len("following ") :].join((" (", ")"))
                if self.phase.startswith("following ")
                else ""
            )

    def watch(self, stream: object) -> None:
        """Cut ``stream`` (an httpcore network stream) at the deadline too."""
        get_extra_info = getattr(stream, "get_extra_info", None)
        sock = get_extra_info("socket") if get_extra_info is not None else None
        if not isinstance(sock, socket.socket):  # an ssl.SSLSocket is one too
            return
        # The socket object itself, never a duplicate of its descriptor (that would keep
        # a connection httpcore closes open until the fetch ends). Once httpcore closes
        # it, its fileno is -1 and a shutdown is a harmless error, whatever reuses the
        # descriptor number.
        with self._lock:
            self._sockets.append(sock)
            late = self.fired
        if late:
            _shutdown(sock)

    def _cut(self) -> None:
        with self._lock:
            self.fired = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shutdown(sock)

    def refusal(self) -> BodyRefused:
        """The failure to raise once the deadline has passed (never retried)."""
        return BodyRefused(
            f"deadline of {self.deadline:g} s reached while {self.phase}"
        )


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    default = {"http": 80, "https": 443}.get(url.scheme)
    return url.scheme, url.host, url.port if url.port is not None else default


def _same_origin(first: httpx.URL, target: httpx.URL) -> bool:
    """Whether credentials meant for ``first`` may go to ``target``."""
    if _origin(first) == _origin(target):
        return True
    # http -> https of the same host on the default ports (httpx's rule too).
    return (
        first.scheme == "http"
        and _origin(first) == ("http", target.host, 80)
        and _origin(target) == ("https", target.host, 443)
    )


def _redirect_target(response: httpx.Response, location: str) -> httpx.URL:
    import httpx

    target = response.url.join(location.strip())
    if target.scheme not in ("http", "https") or not target.host:
        shown = redact_url(str(target))[:200]
        raise BodyRefused(f"redirected to an unsupported URL ({shown}; not retried)")
    if target.userinfo:
        target = target.copy_with(userinfo=b"")
    return httpx.URL(target)


def run_attempt(
    http: httpx.Client,
    url: str,
    *,
    headers: dict[str, str],
    timeout: Callable[[], httpx.Timeout],
    limit: int,
    watchdog: Watchdog,
) -> tuple[int, bytes]:
    """Make one attempt: ``GET url``, following redirects by hand; return the status and body.

    Args:
        http: the client (its own ``follow_redirects`` is overridden).
        url: the URL to request (without a ``user:password@`` part).
        headers: the request headers, ``Authorization`` included when there is one.
        timeout: the per-operation timeouts for the next hop (cut to the time left).
        limit: the most decoded body bytes accepted (``CAPC_MAX_RESPONSE_BYTES``).
        watchdog: the fetch's deadline.

    Returns:
        The final status and, for a 2xx, the decoded body (``b""`` for any other status:
        the body of a refusal is never read).

    Raises:
        RetryableStatus: a 429 or 5xx (a redirect to one included).
        BodyRefused: too many redirects, a redirect to a non-HTTP URL, a body over the
            limit or undecodable, or the deadline passed.
        httpx.HTTPError: a transport failure (connect, read, protocol).
    """
    import httpx

    first = current = httpx.URL(url)
    sent = dict(headers)
    try:
        for hop in range(MAX_REDIRECTS + 1):
            watchdog.phase = "connecting" if hop == 0 else f"following redirect {hop}"
            with http.stream(
                "GET", current, headers=sent, timeout=timeout(), follow_redirects=False,
                extensions={"trace": watchdog.trace},
            ) as response:  # fmt: skip
                watchdog.watch(response.extensions.get("network_stream"))
                status = response.status_code
                if status == 429 or 500 <= status <= 599:
                    wait = parse_retry_after(response.headers.get("Retry-After"))
                    raise RetryableStatus(status, wait)
                location = response.headers.get("Location")
                if status in REDIRECT_STATUSES and location:
                    current = _redirect_target(response, location)
                    # Leaving the block closes the response unread (its body is never read).
                elif not 200 <= status <= 299:
                    return status, b""
                else:
                    watchdog.phase = "reading the body"
                    body = read_body(
                        response,
                        limit=limit,
                        deadline=watchdog.deadline,
                        deadline_at=watchdog.deadline_at,
                    )
                    if watchdog.fired:  # the cut may end a body early without an error
                        raise watchdog.refusal()
                    return status, body
            if not _same_origin(first, current):
                sent.pop("Authorization", None)
    except httpx.HTTPError as exc:
        if watchdog.fired:
            raise watchdog.refusal() from exc
        refused = _protocol_refusal(exc)
        if refused is not None:
            raise refused from exc
        raise
    raise BodyRefused(f"more than {MAX_REDIRECTS} redirects (not retried)")


def _protocol_refusal(exc: Exception) -> BodyRefused | None:
    """A protocol error no retry can mend, named: httpx builds the redirect request even
    with ``follow_redirects=False`` and raises ``RemoteProtocolError`` for a ``Location``
    it cannot parse; h11 raises "Receive buffer too long" when the status line and
    headers pass httpcore's ``HTTP11Connection.MAX_INCOMPLETE_EVENT_SIZE`` (100 KiB)."""
    import httpcore
    import httpx

    if not isinstance(exc, httpx.RemoteProtocolError):
        return None
    text = str(exc)
    if text.startswith("Invalid URL in location header"):
        why = text.partition(":")[2].strip().rstrip(".")[:120]
        return BodyRefused(f"redirected to an invalid URL, {why} (not retried)")
    if text.startswith("Receive buffer too long"):
        size = getattr(httpcore.HTTP11Connection, "MAX_INCOMPLETE_EVENT_SIZE", 100 * 1024)
        return BodyRefused(f"a header line longer than {size:,} bytes (not retried)")
    return None
