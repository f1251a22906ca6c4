"""Bounds on what comes in: a body's decoded size, the deadline across reads, JSON nesting.

:func:`read_body` streams a response and stops at ``CAPC_MAX_RESPONSE_BYTES`` decoded
bytes (a gzip bomb is stopped at the limit, never inflated whole) or when the fetch's
deadline passes between two reads (a server that drips one byte at a time); ``gzip``
and ``deflate`` bodies are decoded here with :mod:`zlib`, at most the room left under
the limit at a time; a ``gzip`` body of several members (RFC 1952, section 2.2) is
decoded whole, and bytes after the last member that start no new one are refused.
:func:`check_depth` refuses JSON nested deeper than ``CAPC_MAX_JSON_DEPTH`` before any
parser sees it (:func:`registry.jsondepth.json_depth_over`), so a deeply nested payload
is a rejected payload, never a ``RecursionError``. docs/metadata.md lists the defaults.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from registry.jsondepth import json_depth_over

if TYPE_CHECKING:
    import httpx

__all__ = ["DEFAULT_MAX_JSON_DEPTH", "BodyRefused", "check_depth", "read_body"]

DEFAULT_MAX_JSON_DEPTH = 64
"""Levels of JSON arrays and objects accepted (OpenRouter's payloads use at most 6)."""




class BodyRefused(Exception):
    """A fetch was refused, never retried: a body too large or undecodable, the deadline
    passed, too many redirects or one to a URL that is not HTTP.

    Attributes:
        reason: a few words for the fetch's one-line failure.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def read_body(
    response: httpx.Response, *, limit: int, deadline: float, deadline_at: float
) -> bytes:
    """Read a streamed response's decoded body within a size limit and a deadline.

    Args:
        response: a response opened with ``Client.stream``.
        limit: the most decoded bytes accepted.
        deadline: the fetch's deadline in seconds (for the message).
        deadline_at: the :func:`time.monotonic` instant the fetch must end by.

    Returns:
        The decoded body.

    Raises:
        BodyRefused: the announced length or the decoded bytes exceed ``limit``, or
            the deadline passed before the body ended.
    """
    too_large = (
        f"response larger than the {limit:,}-byte limit "
        "(CAPC_MAX_RESPONSE_BYTES; not retried)"
    )
    announced = response.headers.get("Content-Length", "")
    if announced.isdigit() and int(announced) > limit:
        raise BodyRefused(too_large)
    import httpx

    try:
        body = response.content  # already read: a transport that is not streaming
    except httpx.ResponseNotRead:
        pass
    else:
        if len(body) > limit:
            raise BodyRefused(too_large)
        return body
    encoding = response.headers.get("Content-Encoding", "").strip().lower()
    if encoding not in ("", "identity", "gzip", "x-gzip", "deflate"):
        raise BodyRefused(f"unsupported Content-Encoding {encoding[:40]!r}")
    # httpx inflates a whole raw chunk at once (64 KB of a gzip bomb is ~64 MB), so the
    # body is decoded here, never more than the room left under the limit at a time.
    decoder = None if encoding in ("", "identity") else _Inflater(gzip=encoding != "deflate")
    chunks: list[bytes] = []
    total = 0
    try:
        for raw in response.iter_raw():
            for out in [raw] if decoder is None else decoder.feed(raw, room=limit - total + 1):
                total += len(out)
                if total > limit:
                    raise BodyRefused(too_large)
                chunks.append(out)
            if time.monotonic() > deadline_at:
                raise BodyRefused(
                    f"deadline of {deadline:g} s reached while reading the body "
                    f"({total:,} bytes read)"
                )
        if decoder is not None:
            decoder.finish()
    except BaseException:
        # The traceback keeps this frame alive as long as the error is: free what was
        # read (up to the whole limit) now, not when the last reference goes.
        chunks.clear()
        decoder = None
        raise
    return b"".join(chunks)


_GZIP_MAGIC = b"\x1f\x8b"


class _Inflater:
    """Decodes a ``gzip`` (one member or several, RFC 1952 section 2.2) or ``deflate``
    (zlib, RFC 1950) body in bounded steps, refusing bytes after the last member."""

    def __init__(self, *, gzip: bool) -> None:
        self.gzip = gzip
        self.members = 0
        self._new()

    def _new(self) -> None:
        self._inflate = zlib.decompressobj(zlib.MAX_WBITS | 32)  # gzip or zlib header
        self._pending = b""  # bytes after a member's end, not yet known to start another
        self.members += 1

    def feed(self, data: bytes, *, room: int) -> Iterator[bytes]:
        """Yield decoded pieces of ``data``, at most ``room`` bytes in all (then 1 at a
        time, so that the caller sees it pass its limit)."""
        try:
            while data:
                if self._inflate.eof:
                    data = self._pending + data
                    if len(data) < len(_GZIP_MAGIC):
                        self._pending = data
                        return
                    if not self.gzip or not data.startswith(_GZIP_MAGIC):
                        raise BodyRefused(self._trailing())
                    self._new()
                out = self._inflate.decompress(data, max(room, 1))  # 0 would mean no limit
                room -= len(out)
                inflate = self._inflate
                data = inflate.unused_data if inflate.eof else inflate.unconsumed_tail
                if out:
                    yield out
        except zlib.error as exc:
            raise BodyRefused("undecodable response (Content-Encoding)") from exc

    def finish(self) -> None:
        """Refuse a body that ends inside a member or with bytes that are no member."""
        if self._pending:
            raise BodyRefused(self._trailing())
        if not self._inflate.eof:
            raise BodyRefused("undecodable response (Content-Encoding): the stream is truncated")

    def _trailing(self) -> str:
        after = "the last gzip member, not another member" if self.gzip else "the deflate stream"
        return f"undecodable response (Content-Encoding): trailing bytes after {after}"


def check_depth(payload: bytes, limit: int) -> str | None:
    """Return why ``payload`` is refused for its nesting, or ``None`` when it is not.

    Args:
        payload: the body.
        limit: the deepest nesting allowed (``CAPC_MAX_JSON_DEPTH``).

    Returns:
        A reason such as ``"nested deeper than 64 levels (CAPC_MAX_JSON_DEPTH)"``.
    """
    if json_depth_over(payload, limit):
        return f"nested deeper than {limit} levels (CAPC_MAX_JSON_DEPTH)"
    return None
